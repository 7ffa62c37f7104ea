// scan and cond under autodiff: residual reports worked out by hand from JAX's partial-evaluation
// rules (jax/_src/lax/control_flow/loops.py: _scan_partial_eval and _scan_partial_eval_custom;
// conditionals.py: _cond_partial_eval), gradients against the unrolled program bit for bit and
// against finite differences, and a memory plan that grows with the length only through the
// stacked residuals.
#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using Lines = std::vector<std::string>;

Lines residuals_of(const std::string& text, const std::string& policy = "", std::vector<size_t> wrt = {}) {
  LinearizeOptions options;
  options.policies = &test_policies();
  options.policy = policy;
  options.differentiate = std::move(wrt);
  return residual_lines(linearize(parse_program(text, "p"), options));
}

// f(c, x) = (sin(c) * x, None), scanned over 4 rows of x: the example the research notes for
// issue 13 work through (c: f32[3], xs: f32[4,3]). The scan is on line 2.
const char* kSinTimesX = R"({ lambda ; c:f32[3] xs:f32[4,3]. let
    d:f32[3] = scan[jaxpr={ lambda ; e:f32[3] x:f32[3]. let
        s:f32[3] = sin e
        y:f32[3] = mul s x
      in (y,) } length=4 linear=(False, False) num_carry=1 num_consts=0 reverse=False unroll=1] c xs
  in (d,) })";

TEST(ScanResiduals, PlainGradStacksWhatTheBodyKeepsAndForwardsTheXs) {
  // The body keeps x (mul's other operand), sin c (the same for x's tangent) and cos c (sin's JVP).
  // x is a slice of xs: the scan forwards xs itself. sin c and cos c depend on the carry: stacked.
  EXPECT_EQ(residuals_of(kSinTimesX), (Lines{"f32[4,3] from the argument xs", "f32[4,3] output of scan from p:2",
                                             "f32[4,3] output of scan from p:2"}));
  // With respect to c alone x has no tangent, so sin c is not needed: cos c and x remain.
  EXPECT_EQ(residuals_of(kSinTimesX, "", {0}),
            (Lines{"f32[4,3] from the argument xs", "f32[4,3] output of scan from p:2"}));
}

TEST(ScanResiduals, JaxZeroElevenCountsComeFromFtIn) {
  // JAX 0.11 prints the operands' structure (ft_in: consts, carries, xs) where it printed
  // num_consts and num_carry; Left(..) leaves are filtered out and take no operand.
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    return text.replace(text.find(from), from.size(), to);
  };
  const std::string ft = "ft_in=((), (None,), (RightsOnly(Right(None), Left(None)),))";
  std::string text = replaced(kSinTimesX, "length=4 linear=(False, False) num_carry=1 num_consts=0", ft + " length=4");
  EXPECT_EQ(residuals_of(text), residuals_of(kSinTimesX));
  text = replaced(text, ft, "ft_in=(None,)");
  EXPECT_EQ(usage_error([&] { parse_program(text, "p"); }),
            "p:2:16: scan needs num_consts and num_carry, or ft_in=((consts...), (carries...), (xs...)) as JAX 0.11 "
            "prints it, not ft_in=(None,)");
}

TEST(ScanResiduals, CheckpointAroundTheScanWithNothingSaveableKeepsItsInputs) {
  // _scan_partial_eval_custom under nothing_saveable: no body value is saved, the backward pass
  // runs the scan again from c; only the checkpoint's inputs are kept, no per-iteration carry.
  EXPECT_EQ(residuals_of(kSinTimesX, "nothing_saveable"),
            (Lines{"f32[3] from the argument c", "f32[4,3] from the argument xs"}));
  // everything_saveable saves what plain autodiff keeps.
  EXPECT_EQ(residuals_of(kSinTimesX, "everything_saveable"), residuals_of(kSinTimesX));
}

TEST(ScanResiduals, CheckpointInsideTheBodyStacksTheCarries) {
  // The body's checkpoint keeps its inputs c and x; c is the carry, so the scan stacks it per
  // iteration; x is forwarded.
  const char* text = R"({ lambda ; c:f32[3] xs:f32[4,3]. let
    d:f32[3] = scan[jaxpr={ lambda ; e:f32[3] x:f32[3]. let
        y:f32[3] = checkpoint[jaxpr={ lambda ; a:f32[3] b:f32[3]. let s:f32[3] = sin a; t:f32[3] = mul s b in (t,) }
          policy=nothing_saveable prevent_cse=False] e x
      in (y,) } length=4 num_carry=1 num_consts=0 reverse=False] c xs
  in (d,) })";
  EXPECT_EQ(residuals_of(text), (Lines{"f32[4,3] from the argument xs", "f32[4,3] output of scan from p:2"}));
}

// g(c, x) = sin(W c) * x with W a const of the scan.
const char* kDotBody = R"({ lambda ; w:f32[3,3] c:f32[3] xs:f32[4,3]. let
    o:f32[3] = scan[jaxpr={ lambda ; a:f32[3,3] e:f32[3] x:f32[3]. let
        d:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a e
        s:f32[3] = sin d
        y:f32[3] = mul s x
      in (y,) } length=4 num_carry=1 num_consts=1 reverse=False] w c xs
  in (o,) })";

TEST(ScanResiduals, DotsSaveableAroundTheScanSavesTheStackedDotsAndRecomputesTheRest) {
  // The policy decides inside the body: W c is a dot, saved per iteration; sin, cos and the carries
  // are computed again in the backward pass from the checkpoint's inputs w, c and xs.
  EXPECT_EQ(residuals_of(kDotBody, "dots_saveable"),
            (Lines{"f32[3,3] from the argument w", "f32[3] from the argument c", "f32[4,3] from the argument xs",
                   "f32[4,3] output of scan from p:2"}));
  // nothing_saveable keeps the inputs alone.
  EXPECT_EQ(residuals_of(kDotBody, "nothing_saveable"),
            (Lines{"f32[3,3] from the argument w", "f32[3] from the argument c", "f32[4,3] from the argument xs"}));
}

TEST(ScanResiduals, DotsSaveableInsideTheBodyStacksTheDotAndTheCarry) {
  // The body's checkpoint keeps W c (a dot) and its inputs W, c, x. W is a const: forwarded, not
  // stacked; x is forwarded; W c and the carry c are stacked.
  const char* text = R"({ lambda ; w:f32[3,3] c:f32[3] xs:f32[4,3]. let
    o:f32[3] = scan[jaxpr={ lambda ; a:f32[3,3] e:f32[3] x:f32[3]. let
        y:f32[3] = checkpoint[jaxpr={ lambda ; m:f32[3,3] n:f32[3] q:f32[3]. let
            d:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] m n
            s:f32[3] = sin d
            t:f32[3] = mul s q
          in (t,) } policy=dots_saveable prevent_cse=False] a e x
      in (y,) } length=4 num_carry=1 num_consts=1 reverse=False] w c xs
  in (o,) })";
  EXPECT_EQ(residuals_of(text), (Lines{"f32[3,3] from the argument w", "f32[4,3] from the argument xs",
                                       "f32[4,3] output of scan from p:2", "f32[4,3] output of scan from p:2"}));
}

TEST(ScanResiduals, ANamePolicyAroundTheScanSavesTheNamedValuePerIteration) {
  const char* text = R"({ lambda ; w:f32[3,3] c:f32[3] xs:f32[4,3]. let
    o:f32[3] = scan[jaxpr={ lambda ; a:f32[3,3] e:f32[3] x:f32[3]. let
        d:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a e
        h:f32[3] = tanh d
        n:f32[3] = name[name=hidden] h
        s:f32[3] = sin n
        y:f32[3] = mul s x
      in (y,) } length=4 num_carry=1 num_consts=1 reverse=False] w c xs
  in (o,) })";
  // Only 'hidden' is saved (stacked); the dot, tanh, sin and the carries are computed again.
  EXPECT_EQ(residuals_of(text, "save_only_these_names('hidden')"),
            (Lines{"f32[3,3] from the argument w", "f32[3] from the argument c", "f32[4,3] from the argument xs",
                   "f32[4,3] output of scan from p:2"}));
  // Saving a name the body does not have keeps the inputs alone.
  EXPECT_EQ(residuals_of(text, "save_only_these_names('other')"),
            (Lines{"f32[3,3] from the argument w", "f32[3] from the argument c", "f32[4,3] from the argument xs"}));
}

TEST(ScanResiduals, AResidualOfTheConstsAloneIsComputedOnceBeforeTheLoop) {
  // cos(w) is loop-invariant: hoisted out of the scan, kept once, reported as cos's output at its
  // line in the body (where JAX's hoisting evaluates it), not stacked.
  const char* text = R"({ lambda ; w:f32[3] c:f32[3]. let
    o:f32[3] = scan[jaxpr={ lambda ; a:f32[3] e:f32[3]. let
        s:f32[3] = sin a
        y:f32[3] = mul s e
      in (y,) } length=5 num_carry=1 num_consts=1 reverse=False] w c
  in (o,) })";
  EXPECT_EQ(residuals_of(text), (Lines{"f32[3] output of sin from p:3", "f32[3] output of cos from p:3",
                                       "f32[5,3] output of scan from p:2"}));
}

// The same computation as a scan and unrolled by hand: bit-identical gradients on the reference
// backend (the const's cotangent sums the iterations in the same order both ways).
TEST(ScanGradients, MatchTheUnrolledProgramBitForBit) {
  const Program scan = parse_program(R"({ lambda ; w:f32[4,4] c:f32[2,4] xs:f32[3,2,4]. let
    d:f32[2,4] ys:f32[3,2,4] = scan[jaxpr={ lambda ; a:f32[4,4] e:f32[2,4] x:f32[2,4]. let
        m:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e a
        n:f32[2,4] = add m x
        h:f32[2,4] = tanh n
      in (h, n) } length=3 num_carry=1 num_consts=1 reverse=False] w c xs
  in (d, ys) })", "scan");
  const Program unrolled = parse_program(R"({ lambda ; w:f32[4,4] c:f32[2,4] x0:f32[2,4] x1:f32[2,4] x2:f32[2,4]. let
    m0:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] c w
    n0:f32[2,4] = add m0 x0
    h0:f32[2,4] = tanh n0
    m1:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] h0 w
    n1:f32[2,4] = add m1 x1
    h1:f32[2,4] = tanh n1
    m2:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] h1 w
    n2:f32[2,4] = add m2 x2
    h2:f32[2,4] = tanh n2
  in (h2, n0, n1, n2) })", "unrolled");
  const RandomInputs in = random_inputs(scan, 7);
  RandomInputs split;
  split.arguments = {in.arguments[0], in.arguments[1]};
  for (int64_t i = 0; i < 3; ++i)
    split.arguments.push_back(tensor_of({2, 4}, std::vector<double>(in.arguments[2].data.begin() + i * 8,
                                                                    in.arguments[2].data.begin() + (i + 1) * 8)));
  const BackendOptions reference{{"reference"}, &default_plugins()};
  for (const std::string policy : {"", "nothing_saveable", "dots_saveable"}) {
    SCOPED_TRACE(policy);
    const GradientResult a = run_gradient(linearize_with(scan, policy), {}, in.arguments, reference);
    const GradientResult b = run_gradient(linearize_with(unrolled, policy), {}, split.arguments, reference);
    EXPECT_EQ(a.outputs[0].data, b.outputs[0].data);
    EXPECT_EQ(a.gradients[0]->data, b.gradients[0]->data);  // w: summed over the iterations
    EXPECT_EQ(a.gradients[1]->data, b.gradients[1]->data);  // c: through the carries
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(std::vector<double>(a.gradients[2]->data.begin() + i * 8, a.gradients[2]->data.begin() + (i + 1) * 8),
                b.gradients[static_cast<size_t>(2 + i)]->data)
          << "row " << i << " of xs";
  }
}

// Programs with loops and branches in every arrangement: reverse scans, consts, several carries,
// a scan in a scan (Flax's remat_scan), checkpoints inside and around, a cond in a scan, a switch.
struct FlowCase {
  const char* name;
  const char* program;
};

const FlowCase kFlowCases[] = {
    {"reverse_two_carries_consts", R"({ lambda ; w:f32[3] b:f32[3] c:f32[3] k:f32[3] xs:f32[5,3]. let
    d:f32[3] e:f32[3] ys:f32[5,3] = scan[jaxpr={ lambda ; p:f32[3] q:f32[3] u:f32[3] v:f32[3] x:f32[3]. let
        m:f32[3] = mul u p
        n:f32[3] = add m x
        s:f32[3] = sin n
        t:f32[3] = mul v s
        r:f32[3] = add t q
      in (s, r, t) } length=5 num_carry=2 num_consts=2 reverse=True] w b c k xs
  in (d, e, ys) })"},
    {"nested_remat_scan", R"({ lambda ; w:f32[2,3,3] c:f32[3]. let
    o:f32[3] = scan[jaxpr={ lambda ; a:f32[3] ws:f32[3,3]. let
        y:f32[3] = checkpoint[jaxpr={ lambda ; e:f32[3] f:f32[3,3]. let
            z:f32[3] = scan[jaxpr={ lambda ; g:f32[3] h:f32[3]. let
                y:f32[3] = checkpoint[jaxpr={ lambda ; i:f32[3] j:f32[3]. let
                    k:f32[3] = mul i j
                    l:f32[3] = tanh k
                  in (l,) } policy=nothing_saveable prevent_cse=False] g h
              in (y,) } length=3 num_carry=1 num_consts=0 reverse=False] e f
          in (z,) } policy=nothing_saveable prevent_cse=False] a ws
      in (y,) } length=2 num_carry=1 num_consts=0 reverse=False] c w
  in (o,) })"},
    {"cond_in_scan", R"({ lambda ; c:f32[4] xs:f32[3,4] ps:i32[3]. let
    o:f32[4] = scan[jaxpr={ lambda ; a:f32[4] x:f32[4] p:i32[]. let
        i:i32[] = clamp 0 p 1
        y:f32[4] = cond[branches=(
          { lambda ; e:f32[4] f:f32[4]. let g:f32[4] = mul e f in (g,) }
          { lambda ; e:f32[4] f:f32[4]. let g:f32[4] = sin e; h:f32[4] = add g f in (h,) }
        )] i a x
      in (y,) } length=3 num_carry=1 num_consts=0 reverse=False] c xs ps
  in (o,) })"},
    {"switch_three_branches", R"({ lambda ; s:i32[] a:f32[5] b:f32[5]. let
    i:i32[] = clamp 0 s 2
    c:f32[5] d:f32[5] = cond[branches=(
      { lambda ; x:f32[5] y:f32[5]. let z:f32[5] = mul x y in (z, x) }
      { lambda ; x:f32[5] y:f32[5]. let z:f32[5] = exp x; w:f32[5] = cos y in (z, w) }
      { lambda ; x:f32[5] y:f32[5]. let z:f32[5] = sub y x in (z, y) }
    )] i a b
  in (c, d) })"},
};

class FlowGradientTest : public ::testing::TestWithParam<FlowCase> {};

TEST_P(FlowGradientTest, MatchesFiniteDifferencesAndAgreesAcrossPolicies) {
  const Program program = parse_program(GetParam().program, GetParam().name);
  for (unsigned seed : {1u, 2u, 3u}) {  // cond's branches: random indices pick different ones
    const RandomInputs in = random_inputs(program, seed);
    const std::vector<Tensor> fd = finite_difference_gradients(program, in);
    const GradientResult ad = interpret_gradient(linearize_with(program), in.constants, in.arguments, Arithmetic::kFloat64);
    for (size_t a = 0; a < fd.size(); ++a) {
      if (!ad.gradients[a]) continue;
      for (size_t i = 0; i < fd[a].data.size(); ++i)
        EXPECT_NEAR(ad.gradients[a]->data[i], fd[a].data[i], 1e-6 * (1 + std::fabs(fd[a].data[i])))
            << "argument " << a << " element " << i << " seed " << seed;
    }
    // The step runner on every policy: the same bits as with no policy.
    const BackendOptions reference{{"reference"}, &default_plugins()};
    const GradientResult base = run_gradient(linearize_with(program), in.constants, in.arguments, reference);
    for (const char* policy : {"nothing_saveable", "everything_saveable", "dots_saveable"}) {
      const GradientResult other = run_gradient(linearize_with(program, policy), in.constants, in.arguments, reference);
      for (size_t a = 0; a < base.gradients.size(); ++a)
        if (base.gradients[a]) {
          EXPECT_EQ(base.gradients[a]->data, other.gradients[a]->data) << policy << " argument " << a;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ControlFlow, FlowGradientTest, ::testing::ValuesIn(kFlowCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CondResiduals, TheIndexAndTheBranchResidualsInSharedSlots) {
  // Branch 0 keeps x and y (mul's operands), branch 1 cos x: slots by type f32[5], f32[5] (branch
  // 1's cos x takes the first); the index is kept for the backward pass to pick the branch.
  const char* text = R"({ lambda ; s:i32[] a:f32[5] b:f32[5]. let
    c:f32[5] = cond[branches=(
      { lambda ; x:f32[5] y:f32[5]. let z:f32[5] = mul x y in (z,) }
      { lambda ; x:f32[5] y:f32[5]. let z:f32[5] = sin x in (z,) }
    )] s a b
  in (c,) })";
  EXPECT_EQ(residuals_of(text), (Lines{"i32[] from the argument s", "f32[5] output of cond from p:2",
                                       "f32[5] output of cond from p:2"}));
}

TEST(CondResiduals, InsideACheckpointThePolicyDecidesInEachBranch) {
  // _cond_partial_eval_custom: the staged cond takes every operand, so the checkpoint keeps the
  // index and the operands; a slot holds what the policy saves: under dots_saveable branch 0's
  // product w x (the only dot), under nothing_saveable nothing.
  const char* text = R"({ lambda ; s:i32[] w:f32[4,4] a:f32[4]. let
    c:f32[4] = cond[branches=(
      { lambda ; m:f32[4,4] x:f32[4]. let d:f32[4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] m x; z:f32[4] = sin d in (z,) }
      { lambda ; m:f32[4,4] x:f32[4]. let z:f32[4] = cos x in (z,) }
    )] s w a
  in (c,) })";
  const Lines inputs{"i32[] from the argument s", "f32[4,4] from the argument w", "f32[4] from the argument a"};
  EXPECT_EQ(residuals_of(text, "nothing_saveable"), inputs);
  Lines with_dot = inputs;
  with_dot.push_back("f32[4] output of cond from p:2");
  EXPECT_EQ(residuals_of(text, "dots_saveable"), with_dot);
  // At the top level the slots hold every branch's residuals, its operands included: branch 0's
  // cos(w x) and w and x, branch 1's sin x sharing the f32[4] slots.
  EXPECT_EQ(residuals_of(text), (Lines{"i32[] from the argument s", "f32[4,4] output of cond from p:2",
                                       "f32[4] output of cond from p:2", "f32[4] output of cond from p:2"}));
}

TEST(WhileGradient, FailsWithJaxsErrorOnlyWhenItsTangentIsRead) {
  const char* used = R"({ lambda ; a:f32[3]. let
    _:i32[] b:f32[3] = while[body_jaxpr={ lambda ; i:i32[] x:f32[3]. let j:i32[] = add i 1; y:f32[3] = sin x in (j, y) }
      body_nconsts=0 cond_jaxpr={ lambda ; i:i32[] x:f32[3]. let p:bool[] = lt i 3 in (p,) } cond_nconsts=0] 0 a
  in (b,) })";
  EXPECT_EQ(usage_error([&] { linearize_with(parse_program(used, "p")); }),
            "p:2:24: Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
            "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.");
  // A while whose result nothing differentiable reads is differentiated, as JAX does (its linear
  // part is never transposed).
  const std::string unused = std::string(used).replace(std::string(used).find("in (b,)"), 7, "c:f32[3] = cos a in (c,)");
  EXPECT_EQ(usage_error([&] { linearize_with(parse_program(unused, "p")); }), "");
  // The forward pass runs: three sines.
  const std::vector<Tensor> out = evaluate_f64(used, {tensor_of({3}, {0.5, 1.0, -2.0})});
  EXPECT_DOUBLE_EQ(out[0].data[0], std::sin(std::sin(std::sin(0.5))));
}

// A scan's memory plan grows with its length only through what it stacks: its body's temporaries
// are planned once (the loop step's workspace) and reused by every iteration.
TEST(ScanMemory, ThePeakGrowsWithTheLengthOnlyThroughTheStackedResiduals) {
  auto program_of_length = [](int length) {
    const std::string l = std::to_string(length);
    return parse_program("{ lambda ; w:f32[64,64] c:f32[8,64]. let\n"
                         "    o:f32[8,64] = scan[jaxpr={ lambda ; a:f32[64,64] e:f32[8,64]. let\n"
                         "        m:f32[8,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e a\n"
                         "        s:f32[8,64] = sin m\n        t:f32[8,64] = tanh s\n        y:f32[8,64] = mul t e\n"
                         "      in (y,) } length=" + l + " num_carry=1 num_consts=1 reverse=False] w c\n  in (o,) }",
                         "p");
  };
  struct Planned {
    int64_t live_peak, stacked_bytes, workspace;
  };
  auto plan = [&](int length) {
    const Linearization lin = linearize_with(program_of_length(length));
    OneShotRunner runner(lin, BackendOptions{{"reference"}, &default_plugins()});
    const RandomInputs in = random_inputs(program_of_length(length), 1);
    runner.run(in.constants, in.arguments);
    EXPECT_EQ(runner.measured_peak(), runner.layout().arena(MemorySpace::kDevice));
    Planned p{runner.layout().live_peak(MemorySpace::kDevice), 0, 0};
    for (const Residual& r : lin.residuals)
      if (r.type.rank() == 3 && r.type.shape[0] == length) p.stacked_bytes += r.type.bytes();
    for (const Step& step : runner.program().steps())
      if (step.workspace >= 0) p.workspace += runner.layout().buffers[static_cast<size_t>(step.workspace)].bytes;
    return p;
  };
  const Planned short_scan = plan(4), long_scan = plan(16);
  EXPECT_GT(short_scan.stacked_bytes, 0);
  EXPECT_EQ(long_scan.stacked_bytes, 4 * short_scan.stacked_bytes);
  EXPECT_EQ(long_scan.workspace, short_scan.workspace);
  EXPECT_EQ(long_scan.live_peak - short_scan.live_peak, long_scan.stacked_bytes - short_scan.stacked_bytes);
}

}  // namespace
}  // namespace rematkit::testing
