#include "rematkit/analysis/memory_report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "rematkit/schedule/step_program.hpp"

namespace rematkit {
namespace {

size_t index_of(BufferKind kind) { return static_cast<size_t>(kind); }
size_t index_of(MemorySpace space) { return static_cast<size_t>(space); }

std::string literal_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

// "sin at FILE:LINE:COL"; a transposed equation, or a JVP's, says whose it is.
std::string equation_text(const FlatEquation& eqn) {
  std::string what(prim_name(eqn.prim));
  if (eqn.role == EqnRole::kBackward) what += " (transposed " + std::string(prim_name(eqn.origin)) + ")";
  else if (eqn.origin != eqn.prim) what += " (" + std::string(prim_name(eqn.origin)) + "'s JVP)";
  return what + " at " + eqn.where.str();
}

std::string load_text(const Linearization& lin, const LoadSource& load) {
  const FlatGraph& g = lin.graph;
  switch (load.kind) {
    case LoadSource::Kind::kConstant: return "load constant " + g.values[lin.constants[load.index]].name;
    case LoadSource::Kind::kArgument: return "load argument " + g.values[lin.arguments[load.index]].name;
    case LoadSource::Kind::kCotangentSeed: return "load the cotangent of output " + std::to_string(load.index);
    case LoadSource::Kind::kLiteral: return "load literal " + literal_text(load.literal);
  }
  return "load";
}

// Works out each buffer's kind and source and each step's phase from the linearization and the steps.
class ReportBuilder {
 public:
  explicit ReportBuilder(const StepProgram& program)
      : program_(program), lin_(program.linearization()), g_(lin_.graph), steps_(program.steps()),
        layout_(program.layout()), defined_at_(layout_.buffers.size(), -1), workspace_of_(layout_.buffers.size(), -1),
        gradient_of_(layout_.buffers.size(), -1) {
    for (size_t s = 0; s < steps_.size(); ++s) {
      const Step& step = steps_[s];
      if (step.pass == Pass::kBackward && backward_start_ < 0) backward_start_ = static_cast<int>(s);
      for (int b : step.outputs)
        if (defined_at_[static_cast<size_t>(b)] < 0) defined_at_[static_cast<size_t>(b)] = static_cast<int>(s);
      if (step.workspace >= 0) workspace_of_[static_cast<size_t>(step.workspace)] = static_cast<int>(s);
    }
    const std::vector<int>& gradients = program.gradient_buffers();
    for (size_t a = 0; a < gradients.size(); ++a)
      if (gradients[a] >= 0) gradient_of_[static_cast<size_t>(gradients[a])] = static_cast<int>(a);
    for (const Residual& r : lin_.residuals) residuals_.insert(r.value);
    recomputed_.insert(lin_.recomputed.begin(), lin_.recomputed.end());
  }

  MemoryReport build() {
    MemoryReport report;
    for (size_t s = 0; s < steps_.size(); ++s) report.steps.push_back(step_memory(steps_[s]));
    for (size_t b = 0; b < layout_.buffers.size(); ++b) report.buffers.push_back(buffer_memory(static_cast<int>(b)));
    add_live_bytes(report);
    report.predicted_peak = layout_.arena_bytes;
    report.live_peak = layout_.live_peak_bytes;
    return report;
  }

 private:
  Pass pass_of(const Step& step) const {
    if (step.pass == Pass::kForward) return Pass::kForward;
    if (step.runs_equation() && (recomputed_.count(step.equation) || g_.is_known(g_.eqns[static_cast<size_t>(step.equation)])))
      return Pass::kRecompute;
    return Pass::kBackward;
  }

  StepMemory step_memory(const Step& step) const {
    StepMemory m;
    m.pass = pass_of(step);
    switch (step.kind) {
      case StepKind::kKernel: case StepKind::kLoop: case StepKind::kEffect: case StepKind::kHostCall:
      case StepKind::kCollective: {
        const FlatEquation& eqn = g_.eqns[static_cast<size_t>(step.equation)];
        m.what = equation_text(eqn);
        m.where = eqn.where;
        break;
      }
      case StepKind::kLoad: m.what = load_text(lin_, step.load); break;
      case StepKind::kReadout: m.what = step.pass == Pass::kForward ? "forward readout" : "backward readout"; break;
    }
    return m;
  }

  BufferMemory buffer_memory(int buffer) const {
    const size_t b = static_cast<size_t>(buffer);
    const BufferRequest& request = layout_.buffers[b];
    BufferMemory m;
    m.bytes = aligned_bytes(request.bytes);
    m.type = program_.buffer_type(buffer);
    m.space = request.space;
    m.first_step = request.first_step;
    m.last_step = request.last_step;
    m.value = program_.buffer_value(buffer);
    if (workspace_of_[b] >= 0 || m.value == kNoValue) {
      m.kind = BufferKind::kKernelWorkspace;
      const int step = workspace_of_[b] >= 0 ? workspace_of_[b] : request.first_step;
      const StepMemory owner = step_memory(steps_[static_cast<size_t>(step)]);
      m.source = "workspace of " + owner.what;
      m.where = owner.where;
      return m;
    }
    const Value& v = g_.values[static_cast<size_t>(m.value)];
    const int defined_at = defined_at_[b];
    const Step* definer = defined_at >= 0 ? &steps_[static_cast<size_t>(defined_at)] : nullptr;
    if (definer && definer->runs_equation()) {
      m.where = g_.eqns[static_cast<size_t>(definer->equation)].where;
      m.source = equation_text(g_.eqns[static_cast<size_t>(definer->equation)]);
    }
    if (gradient_of_[b] >= 0) {
      m.kind = BufferKind::kGradient;
      m.source = "gradient of argument " + g_.values[lin_.arguments[static_cast<size_t>(gradient_of_[b])]].name;
      return m;
    }
    switch (v.origin) {
      case ValueOrigin::kArgument: {
        const bool differentiated = lin_.argument_tangents[static_cast<size_t>(v.binder)] != kNoValue;
        m.kind = differentiated ? BufferKind::kParameter : BufferKind::kDataInput;
        m.source = "argument " + v.name;
        return m;
      }
      case ValueOrigin::kConstant: m.kind = BufferKind::kDataInput; m.source = "constant " + v.name; return m;
      case ValueOrigin::kLiteral: m.kind = BufferKind::kDataInput; m.source = "literal " + literal_text(v.literal); return m;
      case ValueOrigin::kCotangentSeed:
        m.kind = BufferKind::kCotangent;
        m.source = "cotangent of output " + std::to_string(v.binder);
        return m;
      case ValueOrigin::kEquation: case ValueOrigin::kTangentInput: break;
    }
    if (!definer || definer->pass == Pass::kForward) {
      // Kept: its value is a residual and its buffer lives on into the backward pass.
      const bool kept = residuals_.count(m.value) && backward_start_ >= 0 && request.last_step >= backward_start_;
      m.kind = !kept ? BufferKind::kForwardTemporary
               : request.space == MemorySpace::kDevice ? BufferKind::kSavedResidual
                                                        : BufferKind::kOffloadedResidual;
      return m;
    }
    m.kind = pass_of(*definer) == Pass::kRecompute ? BufferKind::kRecomputed : BufferKind::kCotangent;
    return m;
  }

  // Per step, the bytes alive: a running sum of each buffer's bytes from its first step to its last.
  void add_live_bytes(MemoryReport& report) const {
    const size_t n = steps_.size();
    std::vector<std::array<int64_t, kNumMemorySpaces>> space_delta(n + 1);
    std::vector<std::array<int64_t, kNumBufferKinds>> kind_delta(n + 1);
    for (const BufferMemory& b : report.buffers) {
      space_delta[static_cast<size_t>(b.first_step)][index_of(b.space)] += b.bytes;
      space_delta[static_cast<size_t>(b.last_step) + 1][index_of(b.space)] -= b.bytes;
      if (b.space != MemorySpace::kDevice) continue;
      kind_delta[static_cast<size_t>(b.first_step)][index_of(b.kind)] += b.bytes;
      kind_delta[static_cast<size_t>(b.last_step) + 1][index_of(b.kind)] -= b.bytes;
    }
    std::array<int64_t, kNumMemorySpaces> live{};
    std::array<int64_t, kNumBufferKinds> by_kind{};
    int64_t most = -1;
    for (size_t s = 0; s < n; ++s) {
      for (size_t k = 0; k < kNumMemorySpaces; ++k) live[k] += space_delta[s][k];
      for (size_t k = 0; k < kNumBufferKinds; ++k) by_kind[k] += kind_delta[s][k];
      report.steps[s].live_bytes = live;
      report.steps[s].device_bytes = by_kind;
      if (live[index_of(MemorySpace::kDevice)] > most) {
        most = live[index_of(MemorySpace::kDevice)];
        report.peak_step = static_cast<int>(s);
      }
    }
    if (report.peak_step < 0) return;
    report.peak_bytes = report.steps[static_cast<size_t>(report.peak_step)].device_bytes;
    for (size_t b = 0; b < report.buffers.size(); ++b) {
      const BufferMemory& m = report.buffers[b];
      if (m.space == MemorySpace::kDevice && m.first_step <= report.peak_step && report.peak_step <= m.last_step)
        report.peak_buffers.push_back(static_cast<int>(b));
    }
    std::stable_sort(report.peak_buffers.begin(), report.peak_buffers.end(), [&](int a, int b) {
      return report.buffers[static_cast<size_t>(a)].bytes > report.buffers[static_cast<size_t>(b)].bytes;
    });
  }

  const StepProgram& program_;
  const Linearization& lin_;
  const FlatGraph& g_;
  const std::vector<Step>& steps_;
  const ArenaLayout& layout_;
  std::vector<int> defined_at_;    // per buffer: the first step that writes it (-1: a resident input)
  std::vector<int> workspace_of_;  // per buffer: the step whose workspace it is, or -1
  std::vector<int> gradient_of_;   // per buffer: the argument whose gradient it is, or -1
  std::set<ValueId> residuals_;
  std::set<int> recomputed_;
  int backward_start_ = -1;
};

}  // namespace

std::string_view buffer_kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::kParameter: return "parameter";
    case BufferKind::kDataInput: return "data input";
    case BufferKind::kGradient: return "gradient";
    case BufferKind::kSavedResidual: return "saved residual";
    case BufferKind::kOffloadedResidual: return "offloaded residual";
    case BufferKind::kRecomputed: return "recomputed";
    case BufferKind::kCotangent: return "cotangent";
    case BufferKind::kForwardTemporary: return "forward temporary";
    case BufferKind::kKernelWorkspace: return "kernel workspace";
  }
  return "?";
}

std::string buffer_kind_key(BufferKind kind) {
  std::string key(buffer_kind_name(kind));
  std::replace(key.begin(), key.end(), ' ', '_');
  return key;
}

std::string_view pass_name(Pass pass) {
  switch (pass) {
    case Pass::kForward: return "forward";
    case Pass::kRecompute: return "recompute";
    case Pass::kBackward: return "backward";
  }
  return "?";
}

MemoryReport build_memory_report(const StepProgram& program) { return ReportBuilder(program).build(); }

}  // namespace rematkit
