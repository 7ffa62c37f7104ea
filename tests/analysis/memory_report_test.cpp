// The memory report: buffers, kinds and the peak worked out by hand for y = sin(x) * w under
// everything_saveable and nothing_saveable; a tanh MLP whose peak is the same under both, explained;
// and, over every residual case, per-step bytes summed again from the layout by brute force, kinds
// checked against the linearization and the steps, and the peak's buffers adding up to the live peak.
#include "rematkit/analysis/memory_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "rematkit/flax/model_builder.hpp"
#include "rematkit/io/svg_text.hpp"
#include "rematkit/api/plan.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

constexpr size_t kDevice = static_cast<size_t>(MemorySpace::kDevice);

// Every f32[256] is 1024 bytes, a multiple of the alignment: each buffer below is 1024 bytes.
const char* kSinTimesW = "{ lambda ; x:f32[256] w:f32[256]. let\n"
                         "    a:f32[256] = sin x\n"
                         "    y:f32[256] = mul a w\n"
                         "  in (y,) }\n";

Plan plan_of(const std::string& text, const std::string& policy, std::vector<size_t> differentiate = {}) {
  PlanOptions options;
  options.policy = policy;
  options.backends.preference = {"reference"};
  options.differentiate = std::move(differentiate);
  return Plan(parse_program(text, "p.jaxpr"), options);
}

std::multiset<std::string> peak_kinds(const MemoryReport& r) {
  std::multiset<std::string> kinds;
  for (int b : r.peak_buffers) kinds.insert(std::string(buffer_kind_name(r.buffers[static_cast<size_t>(b)].kind)));
  return kinds;
}

const BufferMemory& buffer_from(const MemoryReport& r, const std::string& source) {
  for (const BufferMemory& b : r.buffers)
    if (b.source == source) return b;
  throw std::runtime_error("no buffer from " + source);
}

TEST(MemoryReport, SinTimesWEverythingSaveableKeepsSinAndCos) {
  // Forward: 0 load x, 1 sin (a), 2 cos (c, sin's JVP coefficient), 3 load w, 4 mul (y), 5 readout.
  // Residuals: w, a and c (the transposed muls read w and a, the transposed sin reads c). Backward,
  // transposing mul's JVP (da*w, then a*dw) in reverse: 6 load the seed s, 7 s*a (w's gradient),
  // 8 s*w (a's cotangent), 9 that times c (x's gradient), 10 readout. Alive per step: x 0..2,
  // a 1..7, c 2..9, w 3..8, y 4..5, s 6..8, w's gradient 7..10, a's cotangent 8..9, x's gradient
  // 9..10: five buffers at steps 7 and 8, the first of them the peak: a, c, w, s, w's gradient.
  const Plan plan = plan_of(kSinTimesW, "everything_saveable");
  const MemoryReport& r = plan.memory_report();
  ASSERT_EQ(r.steps.size(), 11u);
  EXPECT_EQ(r.peak_step, 7);
  EXPECT_EQ(r.steps[7].pass, Pass::kBackward);
  EXPECT_EQ(r.steps[7].what, "mul (transposed mul) at p.jaxpr:3:18");
  EXPECT_EQ(r.steps[7].where.line, 3);
  EXPECT_EQ(peak_kinds(r), (std::multiset<std::string>{"saved residual", "saved residual", "parameter", "cotangent",
                                                       "gradient"}));
  for (int b : r.peak_buffers) EXPECT_EQ(r.buffers[static_cast<size_t>(b)].bytes, 1024);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kParameter), 1024);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kSavedResidual), 2048);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kCotangent), 1024);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kGradient), 1024);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kRecomputed), 0);
  EXPECT_EQ(r.live_peak[kDevice], 5 * 1024);
  EXPECT_GE(r.predicted_peak[kDevice], r.live_peak[kDevice]);
  for (size_t s = 0; s < r.steps.size(); ++s)
    EXPECT_EQ(r.steps[s].pass, s < 6 ? Pass::kForward : Pass::kBackward) << s;
  // Lifetimes and sources.
  const BufferMemory& w = buffer_from(r, "argument w");
  EXPECT_EQ(w.kind, BufferKind::kParameter);
  EXPECT_EQ(std::make_pair(w.first_step, w.last_step), std::make_pair(3, 8));
  const BufferMemory& cos = buffer_from(r, "cos (sin's JVP) at p.jaxpr:2:18");
  EXPECT_EQ(cos.kind, BufferKind::kSavedResidual);
  EXPECT_EQ(std::make_pair(cos.first_step, cos.last_step), std::make_pair(2, 9));
  EXPECT_EQ(cos.type.str(), "f32[256]");
  EXPECT_EQ(buffer_from(r, "mul at p.jaxpr:3:18").kind, BufferKind::kForwardTemporary);  // y
  EXPECT_EQ(buffer_from(r, "cotangent of output 0").kind, BufferKind::kCotangent);
  EXPECT_EQ(buffer_from(r, "gradient of argument x").kind, BufferKind::kGradient);
}

TEST(MemoryReport, SinTimesWNothingSaveableRecomputesEachValueWhereItIsRead) {
  // Forward: 0 load x, 1 sin, 2 load w, 3 mul, 4 readout. The residuals are the checkpoint's inputs
  // x and w. Backward, in reverse: y' = a'w + aw' first needs a, so 5 sin again, then 6 load s,
  // 7 s*a (w's gradient), 8 s*w (a's cotangent); x's cotangent needs cos x: 9 cos, 10 times c',
  // 11 readout. Alive: x 0..9, w 2..8, a' 5..7, s 6..8, w's gradient 7..11, a's cotangent 8..10,
  // c' 9..10, x's gradient 10..11: five at steps 7 and 8, the peak at 7 with x, w, a', s and w's
  // gradient. sin and cos are never alive together, so only one recomputed value is at the peak.
  const Plan plan = plan_of(kSinTimesW, "nothing_saveable");
  const MemoryReport& r = plan.memory_report();
  ASSERT_EQ(r.steps.size(), 12u);
  EXPECT_EQ(r.peak_step, 7);
  EXPECT_EQ(r.steps[7].pass, Pass::kBackward);
  EXPECT_EQ(r.steps[5].pass, Pass::kRecompute);
  EXPECT_EQ(r.steps[6].pass, Pass::kBackward);  // a load in the backward pass
  EXPECT_EQ(r.steps[9].pass, Pass::kRecompute);
  EXPECT_EQ(peak_kinds(r), (std::multiset<std::string>{"parameter", "parameter", "recomputed", "cotangent", "gradient"}));
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kRecomputed), 1024);
  EXPECT_EQ(r.peak_bytes_of(BufferKind::kSavedResidual), 0);
  EXPECT_EQ(r.live_peak[kDevice], plan_of(kSinTimesW, "everything_saveable").memory_report().live_peak[kDevice]);
  const BufferMemory& x = buffer_from(r, "argument x");
  EXPECT_EQ(std::make_pair(x.first_step, x.last_step), std::make_pair(0, 9));  // kept for the recomputation of cos
}

TEST(MemoryReport, AnArgumentNotDifferentiatedIsDataInput) {
  const Plan plan = plan_of(kSinTimesW, "everything_saveable", {1});
  EXPECT_EQ(buffer_from(plan.memory_report(), "argument x").kind, BufferKind::kDataInput);
  EXPECT_EQ(buffer_from(plan.memory_report(), "argument w").kind, BufferKind::kParameter);
}

TEST(MemoryReport, TheSameEveryCallAndBeforeAndAfterARun) {
  Plan plan = plan_of(kSinTimesW, "nothing_saveable");
  EXPECT_EQ(plan.measured_peak(), 0);  // nothing has run
  const MemoryReport before = plan.memory_report();
  EXPECT_EQ(&plan.memory_report(), &plan.memory_report());
  const RandomInputs in = random_inputs(plan.program(), 3);
  plan.gradient(in.arguments);
  EXPECT_EQ(plan.memory_report(), before);
  EXPECT_EQ(plan.measured_peak(), before.predicted_peak[kDevice]);
  EXPECT_EQ(build_memory_report(build_step_program(plan.linearization(), BackendOptions{}, Pass::kBackward,
                                                   InputMode::kLoadedEachRun)),
            before);
}

TEST(MemoryReport, TanhMlpPeakIsMostlyParamsAndGradientsUnderBothPolicies) {
  // One checkpoint around the whole model (the sweep's mlp-tanh-whole at a quarter of each size):
  // x f32[64,64], dense 256, tanh, dense 256, tanh, dense 64. Both peaks are at the transposed dot
  // of the second layer that makes the first tanh's cotangent: alive there are W2 (256 KiB) and its
  // gradient (256 KiB), W3's gradient f32[256,64] and the two biases' (256 and 64 floats), the
  // first tanh's output and 1 - tanh^2 (its JVP), 64 KiB each, which everything_saveable kept, the
  // cotangent of the second layer's dot and the new one, and x. nothing_saveable has recomputed the
  // tanh's output there (W2's gradient read it), but not yet 1 - tanh^2: that is recomputed when
  // the reverse pass reaches the tanh, one step later. So its peak is one activation lower.
  auto report = [](const std::string& policy) {
    const Model model = ModelBuilder()
                            .checkpoint(policy, [](ModelBuilder& m) { m.dense(256).tanh().dense(256).tanh().dense(64); })
                            .build(64, 64, 0, Loss::kSum);
    PlanOptions options;
    options.backends.preference = {"reference"};
    options.differentiate = model.params;
    return Plan(model.program, options).memory_report();
  };
  const MemoryReport saved = report("everything_saveable"), recomputed = report("nothing_saveable");
  const int64_t activation = 64 * 256 * 4, w2 = 256 * 256 * 4;
  const int64_t gradients = w2 + 256 * 64 * 4 + 256 * 4 + 64 * 4;
  for (const MemoryReport* r : {&saved, &recomputed}) {
    EXPECT_EQ(r->steps[static_cast<size_t>(r->peak_step)].pass, Pass::kBackward);
    EXPECT_EQ(r->peak_bytes_of(BufferKind::kParameter), w2);
    EXPECT_EQ(r->peak_bytes_of(BufferKind::kGradient), gradients);
    EXPECT_EQ(r->peak_bytes_of(BufferKind::kCotangent), 2 * activation);
    EXPECT_EQ(r->peak_bytes_of(BufferKind::kDataInput), 64 * 64 * 4);
    // Params and gradients are most of the peak.
    EXPECT_GT(2 * (r->peak_bytes_of(BufferKind::kParameter) + r->peak_bytes_of(BufferKind::kGradient)),
              r->live_peak[kDevice]);
  }
  EXPECT_EQ(saved.peak_bytes_of(BufferKind::kSavedResidual), 2 * activation);
  EXPECT_EQ(saved.peak_bytes_of(BufferKind::kRecomputed), 0);
  EXPECT_EQ(recomputed.peak_bytes_of(BufferKind::kSavedResidual), 0);
  EXPECT_EQ(recomputed.peak_bytes_of(BufferKind::kRecomputed), activation);
  EXPECT_EQ(saved.live_peak[kDevice], w2 + gradients + 4 * activation + 64 * 64 * 4);
  EXPECT_EQ(recomputed.live_peak[kDevice], saved.live_peak[kDevice] - activation);
}

TEST(MemoryReport, TextNamesThePeakEveryBufferThereAndTheFragmentation) {
  const std::string text = format_memory_report(plan_of(kSinTimesW, "everything_saveable").memory_report());
  EXPECT_EQ(text.rfind("peak: step 7 (of 0..10), in the backward pass: mul (transposed mul) at p.jaxpr:3:18\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("device memory alive there: 5.0 KiB (5120 bytes) in 5 buffer(s)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("saved residual  2.0 KiB  2048  40%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("live peak (bytes alive at the peak step): 5.0 KiB (5120 bytes)"), std::string::npos) << text;
  EXPECT_EQ(human_bytes(1536 * 1024), "1.50 MiB");
  EXPECT_EQ(human_bytes(640), "640 B");
}

TEST(MemoryTimeline, TicksAreOneTwoOrFiveTimesAPowerOfTen) {
  // The raw step span/5, rounded up to 1, 2 or 5 x 10^k.
  EXPECT_DOUBLE_EQ(round_tick_step(100, 5), 20);
  EXPECT_DOUBLE_EQ(round_tick_step(4.3, 5), 1);       // 0.86
  EXPECT_DOUBLE_EQ(round_tick_step(15.39, 5), 5);     // 3.08
  EXPECT_DOUBLE_EQ(round_tick_step(0.0054, 5), 0.002);  // 0.00108
  EXPECT_DOUBLE_EQ(round_tick_step(60, 6), 10);
  EXPECT_DOUBLE_EQ(round_tick_step(0, 5), 1);
}

// Over programs of every kind: the report agrees with the layout and the linearization it came from.
class MemoryReportInvariants : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryReportInvariants, AgreeWithTheLayoutAndTheLinearization) {
  const Linearization lin = linearize_with(load_program(GetParam()));
  for (InputMode mode : {InputMode::kLoadedEachRun, InputMode::kResident}) {
    SCOPED_TRACE(mode == InputMode::kResident ? "resident" : "loaded each run");
    const StepProgram program = build_step_program(lin, BackendOptions{}, Pass::kBackward, mode);
    const MemoryReport r = build_memory_report(program);
    const ArenaLayout& layout = program.layout();
    ASSERT_EQ(r.buffers.size(), layout.buffers.size());
    ASSERT_EQ(r.steps.size(), program.steps().size());
    // Per step, by brute force: every buffer whose lifetime covers the step.
    int64_t most = -1;
    int first_most = -1;  // the first step with the most device bytes
    for (size_t s = 0; s < r.steps.size(); ++s) {
      std::array<int64_t, kNumMemorySpaces> live{};
      int64_t by_kind = 0;
      for (const BufferRequest& b : layout.buffers)
        if (b.first_step <= static_cast<int>(s) && static_cast<int>(s) <= b.last_step)
          live[static_cast<size_t>(b.space)] += aligned_bytes(b.bytes);
      for (int64_t k : r.steps[s].device_bytes) by_kind += k;
      EXPECT_EQ(r.steps[s].live_bytes, live) << "step " << s;
      EXPECT_EQ(by_kind, live[kDevice]) << "step " << s;  // the kinds split the device bytes
      if (live[kDevice] > most) {
        most = live[kDevice];
        first_most = static_cast<int>(s);
      }
    }
    EXPECT_EQ(r.peak_step, first_most);
    EXPECT_EQ(most, layout.live_peak(MemorySpace::kDevice));
    EXPECT_EQ(r.live_peak, layout.live_peak_bytes);
    EXPECT_EQ(r.predicted_peak, layout.arena_bytes);
    ASSERT_GE(r.peak_step, 0);
    int64_t at_peak = 0;
    for (int b : r.peak_buffers) at_peak += r.buffers[static_cast<size_t>(b)].bytes;
    EXPECT_EQ(at_peak, r.live_peak[kDevice]);
    // Kinds against what the linearization and the steps say.
    std::set<int> gradient_buffers(program.gradient_buffers().begin(), program.gradient_buffers().end()), workspaces;
    for (const Step& step : program.steps())
      if (step.workspace >= 0) workspaces.insert(step.workspace);
    std::multiset<ValueId> residual_buffers;
    for (size_t b = 0; b < r.buffers.size(); ++b) {
      const BufferMemory& m = r.buffers[b];
      EXPECT_EQ(m.kind == BufferKind::kKernelWorkspace, workspaces.count(static_cast<int>(b)) == 1) << b;
      EXPECT_EQ(m.kind == BufferKind::kGradient, gradient_buffers.count(static_cast<int>(b)) == 1) << b;
      EXPECT_EQ(m.kind == BufferKind::kOffloadedResidual, m.space == MemorySpace::kPinnedHost) << b;
      if (m.kind == BufferKind::kSavedResidual || m.kind == BufferKind::kOffloadedResidual) residual_buffers.insert(m.value);
      if (m.kind == BufferKind::kParameter) {
        ASSERT_EQ(lin.graph.values[m.value].origin, ValueOrigin::kArgument);
        EXPECT_NE(lin.argument_tangents[static_cast<size_t>(lin.graph.values[m.value].binder)], kNoValue);
      }
      // A buffer's first step defines it (resident inputs aside): the pass that made it.
      const Pass made_in = r.steps[static_cast<size_t>(m.first_step)].pass;
      if (m.kind == BufferKind::kRecomputed) {
        EXPECT_EQ(made_in, Pass::kRecompute) << b;
      }
      if (m.kind == BufferKind::kSavedResidual || m.kind == BufferKind::kForwardTemporary) {
        EXPECT_EQ(made_in, Pass::kForward) << b;
      }
    }
    // The residual buffers are the kept values that an equation computed (inputs kept are inputs).
    std::multiset<ValueId> kept_computed;
    for (ValueId v : program.kept_values())
      if (lin.graph.values[v].origin == ValueOrigin::kEquation) kept_computed.insert(v);
    EXPECT_EQ(residual_buffers, kept_computed);
  }
}

std::vector<std::string> invariant_programs() {
  std::vector<std::string> paths;
  for (const ResidualCase& c : residual_cases()) paths.push_back(c.program_path);
  for (const char* real : {"13_jaxpr_doc_scan.jaxpr", "10_jaxpr_doc_switch_cond.jaxpr", "16_blog_fori_loop_scan_copy.jaxpr"})
    paths.push_back(data_dir() + "/real/" + real);
  return paths;
}

INSTANTIATE_TEST_SUITE_P(Programs, MemoryReportInvariants, ::testing::ValuesIn(invariant_programs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           name = name.substr(0, name.find('.'));
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace rematkit::testing
