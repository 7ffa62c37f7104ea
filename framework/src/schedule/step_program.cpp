#include "rematkit/schedule/step_program.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fusion_choice.hpp"
#include "fusion_steps.hpp"
#include "loop_program.hpp"
#include "prepared_kernels.hpp"
#include "rematkit/ir/error.hpp"

namespace rematkit {
namespace {

// Walks the passes in order, appending their steps: before a step reads a value that no step has
// defined yet, a load step fills a fresh buffer with it. Every definition of a value gets its own
// buffer (a recomputed value is defined again in the backward pass), whose lifetime is stretched
// to its last reader.
class StepProgramBuilder {
 public:
  StepProgramBuilder(const Linearization& lin, PreparedKernels& prepared, std::vector<Step>& steps,
                     std::vector<std::shared_ptr<const PreparedKernel>>& kernels,
                     std::vector<std::shared_ptr<const LoopProgram>>& loops)
      : lin_(lin), g_(lin.graph), prepared_(prepared), steps_(steps), kernels_(kernels), loops_(loops),
        current_(g_.values.size(), -1) {}

  // A loop body's given values: one whole-program buffer each (a value given twice shares one).
  std::vector<int> make_given_resident(const std::vector<ValueId>& given) {
    std::vector<int> buffers;
    for (ValueId v : given) {
      if (current_[v] < 0) residents_.push_back(new_buffer(v, -1));
      buffers.push_back(current_[v]);
    }
    return buffers;
  }

  // Constants and arguments given by the caller, loaded where first read.
  void load_inputs_where_read() {
    for (size_t i = 0; i < lin_.constants.size(); ++i)
      loadable_[lin_.constants[i]] = {LoadSource::Kind::kConstant, i, 0.0};
    for (size_t i = 0; i < lin_.arguments.size(); ++i)
      loadable_[lin_.arguments[i]] = {LoadSource::Kind::kArgument, i, 0.0};
  }

  // A buffer for every constant and argument, alive for the whole step (finish() stretches them).
  void make_inputs_resident(std::vector<int>& constant_buffers, std::vector<int>& argument_buffers) {
    for (ValueId v : lin_.constants) residents_.push_back(constant_buffers.emplace_back(new_buffer(v, -1)));
    for (ValueId v : lin_.arguments) residents_.push_back(argument_buffers.emplace_back(new_buffer(v, -1)));
  }

  // `readout`: the values the pass's readout reads (kept by any fusion, fusion_steps.hpp).
  // `fuse`: whether chains of it may run as fused steps, but for the equations `held_apart`.
  void add_pass(Pass pass, const std::vector<int>& eqns, const std::vector<ValueId>& readout, bool fuse = true,
                const std::set<int>& held_apart = {}) {
    PassFusion fusion = fuse_pass(lin_, eqns, pass, readout, prepared_, fuse, held_apart);
    for (int item : fusion.order) {
      if (item < 0) {
        add_fused(pass, fusion.steps[static_cast<size_t>(-1 - item)]);
        continue;
      }
      const int e = item;
      const FlatEquation& eqn = g_.eqns[e];
      Step step;
      step.kind = StepKind::kKernel;
      step.pass = pass;
      step.equation = e;
      for (ValueId v : eqn.inputs) step.inputs.push_back(read(v, pass));
      if (is_effect(eqn.prim) || is_host_call(eqn.prim) || is_collective(eqn.prim)) {  // no backend runs it
        step.kind = is_effect(eqn.prim) ? StepKind::kEffect : is_host_call(eqn.prim) ? StepKind::kHostCall : StepKind::kCollective;
        step.prints = is_effect(eqn.prim) && prepared_.backends().debug_prints();
        const int index = push(std::move(step));
        for (int b : steps_[index].inputs) extend(b, index);
        for (ValueId v : eqn.outputs) steps_[index].outputs.push_back(new_buffer(v, index));
        continue;
      }
      if (eqn.scan || is_control_flow(eqn.prim)) {
        loops_.push_back(prepared_.loop(g_, eqn));
        step.kind = StepKind::kLoop;
        step.loop = loops_.back().get();
      } else {
        kernels_.push_back(prepared_.equation(g_, eqn));
        step.kernel = kernels_.back().get();
      }
      const int index = push(std::move(step));
      for (int b : steps_[index].inputs) extend(b, index);
      for (ValueId v : eqn.outputs) steps_[index].outputs.push_back(new_buffer(v, index));
      if (eqn.scan || eqn.cond)  // the body's arena, planned once and reused by every iteration
        steps_[index].workspace = new_workspace(steps_[index].loop->workspace_bytes, index);
      else if (steps_[index].kernel && steps_[index].kernel->workspace_bytes() > 0)  // the kernel's scratch
        steps_[index].workspace = new_workspace(static_cast<int64_t>(steps_[index].kernel->workspace_bytes()), index);
    }
  }

  // One kernel step for several equations: buffers for the fused equation's operands and results
  // only; the values between its parts never exist outside the kernel.
  void add_fused(Pass pass, FusedStep& fused) {
    Step step;
    step.kind = StepKind::kKernel;
    step.pass = pass;
    step.equation = fused.eqns.front();
    step.fused = fused.eqns;
    for (ValueId v : fused.inputs) step.inputs.push_back(read(v, pass));
    kernels_.push_back(std::move(fused.kernel));
    step.kernel = kernels_.back().get();
    const int index = push(std::move(step));
    for (int b : steps_[index].inputs) extend(b, index);
    for (ValueId v : fused.outputs) steps_[index].outputs.push_back(new_buffer(v, index));
    if (steps_[index].kernel->workspace_bytes() > 0)
      steps_[index].workspace = new_workspace(static_cast<int64_t>(steps_[index].kernel->workspace_bytes()), index);
  }

  // The pass's results; -1 where there is no value (an argument without a gradient).
  std::vector<int> add_readout(Pass pass, const std::vector<ValueId>& values) {
    Step step;
    step.kind = StepKind::kReadout;
    step.pass = pass;
    for (ValueId v : values) step.inputs.push_back(v == kNoValue ? -1 : read(v, pass));
    const int index = push(std::move(step));
    for (int b : steps_[index].inputs)
      if (b >= 0) extend(b, index);
    return steps_[index].inputs;
  }

  // The backward pass starts from the residuals and the output cotangents alone.
  void start_backward() {
    backward_start_ = static_cast<int>(steps_.size());
    // Every residual JAX reports stays alive into the backward pass, even one our transposition
    // never reads (relu's zeros), so that programs account for what JAX keeps.
    std::vector<int> kept(current_.size(), -1);
    for (const Residual& r : lin_.residuals) {
      const int buffer = kept[r.value] = current_[r.value];
      if (buffer < 0) continue;
      extend(buffer, backward_start_);
      if (r.type.space != MemorySpace::kDevice) buffers_[static_cast<size_t>(buffer)].space = r.type.space;
    }
    current_ = std::move(kept);
    std::map<ValueId, LoadSource> given_residuals;  // kept arguments the forward pass never read
    for (const Residual& r : lin_.residuals)
      if (current_[r.value] < 0 && loadable_.count(r.value)) given_residuals[r.value] = loadable_[r.value];
    loadable_ = std::move(given_residuals);
    for (size_t i = 0; i < lin_.cotangent_seeds.size(); ++i)
      if (lin_.cotangent_seeds[i] != kNoValue)
        loadable_[lin_.cotangent_seeds[i]] = {LoadSource::Kind::kCotangentSeed, i, 0.0};
  }

  // Buffers alive from the forward into the backward pass. Resident inputs count only as residuals,
  // not for being resident: call before finish() stretches them.
  std::vector<ValueId> kept_values() const {
    std::vector<ValueId> kept;
    if (backward_start_ < 0) return kept;
    for (size_t b = 0; b < buffers_.size(); ++b)
      if (buffers_[b].first_step < backward_start_ && buffers_[b].last_step >= backward_start_) kept.push_back(defined_[b]);
    return kept;
  }

  // Resident inputs, and the outputs of a resident program (read after the run), live through the
  // last step; then every buffer is released after its last step.
  void finish(const std::vector<int>& resident_outputs) {
    const int last_step = static_cast<int>(steps_.size()) - 1;
    for (int b : residents_) {
      buffers_[static_cast<size_t>(b)].first_step = 0;
      buffers_[static_cast<size_t>(b)].last_step = last_step;
      steps_.front().acquire.push_back(b);
    }
    for (int b : resident_outputs) buffers_[static_cast<size_t>(b)].last_step = last_step;
    for (size_t b = 0; b < buffers_.size(); ++b)
      steps_[static_cast<size_t>(buffers_[b].last_step)].release.push_back(static_cast<int>(b));
  }

  const std::vector<BufferRequest>& buffers() const { return buffers_; }
  const std::vector<ValueId>& buffer_values() const { return defined_; }
  std::vector<Type> buffer_types() const {
    std::vector<Type> types;
    for (size_t b = 0; b < defined_.size(); ++b)
      types.push_back(defined_[b] == kNoValue ? Type{DType::kU8, {buffers_[b].bytes}, MemorySpace::kDevice}
                                              : device_type(g_.values[defined_[b]]));
    return types;
  }

 private:
  int push(Step step) {
    steps_.push_back(std::move(step));
    return static_cast<int>(steps_.size()) - 1;
  }

  // A buffer for v's definition at step `step` (-1: a resident input, placed by finish()).
  int new_buffer(ValueId v, int step) {
    buffers_.push_back(BufferRequest{device_type(g_.values[v]).bytes(), std::max(step, 0), std::max(step, 0), MemorySpace::kDevice});
    defined_.push_back(v);
    const int buffer = static_cast<int>(buffers_.size()) - 1;
    if (step >= 0) steps_[static_cast<size_t>(step)].acquire.push_back(buffer);
    return current_[v] = buffer;
  }

  // A loop step's or a kernel step's workspace: bytes for that step alone, holding no value.
  int new_workspace(int64_t bytes, int step) {
    buffers_.push_back(BufferRequest{bytes, step, step, MemorySpace::kDevice});
    defined_.push_back(kNoValue);
    const int buffer = static_cast<int>(buffers_.size()) - 1;
    steps_[static_cast<size_t>(step)].acquire.push_back(buffer);
    return buffer;
  }

  void extend(int buffer, int step) {
    BufferRequest& b = buffers_[static_cast<size_t>(buffer)];
    b.last_step = std::max(b.last_step, step);
  }

  // The buffer holding v's value now, loading it first if nothing defined it yet.
  int read(ValueId v, Pass pass) {
    if (current_[v] >= 0) return current_[v];
    const Value& value = g_.values[v];
    Step load;
    load.kind = StepKind::kLoad;
    load.pass = pass;
    if (value.origin == ValueOrigin::kLiteral)
      load.load = {LoadSource::Kind::kLiteral, 0, value.literal, value.literal_imag};
    else if (auto it = loadable_.find(v); it != loadable_.end()) load.load = it->second;
    else
      internal_error(std::string("the ") + (pass == Pass::kForward ? "forward" : "backward") +
                     " pass reads a value of type " + value.type.str() + " that it neither computes nor is given");
    const int index = push(std::move(load));
    steps_[static_cast<size_t>(index)].outputs.push_back(new_buffer(v, index));
    return current_[v];
  }

  const Linearization& lin_;
  const FlatGraph& g_;
  PreparedKernels& prepared_;
  std::vector<Step>& steps_;
  std::vector<std::shared_ptr<const PreparedKernel>>& kernels_;
  std::vector<std::shared_ptr<const LoopProgram>>& loops_;
  std::vector<int> current_;  // per value: the buffer of its definition in reach, or -1
  std::map<ValueId, LoadSource> loadable_;
  std::vector<BufferRequest> buffers_;
  std::vector<ValueId> defined_;  // per buffer: its value
  std::vector<int> residents_;
  int backward_start_ = -1;
};

}  // namespace

StepProgram::StepProgram(StepProgram&&) noexcept = default;
StepProgram& StepProgram::operator=(StepProgram&&) noexcept = default;
StepProgram::~StepProgram() = default;

StepProgram build_step_program(const Linearization& lin, const BackendOptions& backends, Pass last_pass, InputMode inputs) {
  BackendSet backend_set(backends);
  PreparedKernels kernels(backend_set);
  if (backends.fusion == BackendOptions::Fusion::kOff) return build_steps(lin, kernels, last_pass, inputs, FusionChoice::none());
  return choose_fusion(lin, kernels, last_pass, inputs);
}

StepProgram build_step_program(const Linearization& lin, const BackendOptions& backends, Pass last_pass, InputMode inputs,
                               const FusionChoice& fusion) {
  BackendSet backend_set(backends);
  PreparedKernels kernels(backend_set);
  return build_steps(lin, kernels, last_pass, inputs, fusion);
}

StepProgram build_steps(const Linearization& lin, PreparedKernels& kernels, Pass last_pass, InputMode inputs,
                        const FusionChoice& fusion) {
  StepProgram program;
  program.lin_ = &lin;
  program.last_pass_ = last_pass;
  program.inputs_ = inputs;
  program.fusion_ = fusion;
  StepProgramBuilder builder(lin, kernels, program.steps_, program.kernels_, program.loops_);
  if (inputs == InputMode::kResident) builder.make_inputs_resident(program.constant_buffers_, program.argument_buffers_);
  else builder.load_inputs_where_read();
  builder.add_pass(Pass::kForward, lin.forward, lin.outputs, fusion.forward, fusion.held_apart);
  program.output_buffers_ = builder.add_readout(Pass::kForward, lin.outputs);
  if (last_pass == Pass::kBackward) {
    builder.start_backward();
    builder.add_pass(Pass::kBackward, lin.backward, lin.gradients, fusion.backward, fusion.held_apart);
    program.gradient_buffers_ = builder.add_readout(Pass::kBackward, lin.gradients);
    program.kept_ = builder.kept_values();
  }
  builder.finish(inputs == InputMode::kResident ? program.output_buffers_ : std::vector<int>{});
  program.layout_ = layout_buffers(builder.buffers());
  program.buffer_types_ = builder.buffer_types();
  program.buffer_values_ = builder.buffer_values();
  return program;
}

StepProgram build_body_program(const Linearization& lin, BackendSet& backends, const std::vector<ValueId>& given,
                               const std::vector<int>& eqns, const std::vector<ValueId>& results,
                               std::vector<int>& given_buffers) {
  StepProgram program;
  program.lin_ = &lin;
  program.last_pass_ = Pass::kForward;
  program.inputs_ = InputMode::kResident;
  program.fusion_ = backends.fuses() ? FusionChoice{true, false, {}} : FusionChoice::none();
  PreparedKernels kernels(backends);
  StepProgramBuilder builder(lin, kernels, program.steps_, program.kernels_, program.loops_);
  given_buffers = builder.make_given_resident(given);
  builder.add_pass(Pass::kForward, eqns, results);
  program.output_buffers_ = builder.add_readout(Pass::kForward, results);
  builder.finish(program.output_buffers_);
  program.layout_ = layout_buffers(builder.buffers());
  program.buffer_types_ = builder.buffer_types();
  program.buffer_values_ = builder.buffer_values();
  return program;
}

}  // namespace rematkit
