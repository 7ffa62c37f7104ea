#include "step_executor.hpp"

#include <chrono>
#include <iostream>
#include <optional>

#include "debug_print.hpp"
#include "loop_runner.hpp"
#include "rematkit/interpreter/device_collective.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit {
namespace {

// The planner's layout checked run by run where every test runs (the sanitizer build), not in a
// release build's steps (Arena says why).
#ifdef NDEBUG
constexpr bool kCheckArenaOverlaps = false;
#else
constexpr bool kCheckArenaOverlaps = true;
#endif

}  // namespace

StepExecutor::StepExecutor(const StepProgram& program, std::byte* device_memory) : program_(program) {
  arena_ = std::make_unique<Arena>(program_.layout(), device_memory, kCheckArenaOverlaps);
  const size_t n_buffers = program_.layout().buffers.size();
  for (size_t b = 0; b < n_buffers; ++b) address_.push_back(arena_->data(static_cast<int>(b)));
  input_slots_.resize(n_buffers);
  output_slots_.resize(n_buffers);
  for (const Step& step : program_.steps()) {
    std::vector<const void*>& in = input_data_.emplace_back();
    std::vector<void*>& out = output_data_.emplace_back();
    for (int b : step.inputs) in.push_back(b < 0 ? nullptr : data(b));
    for (int b : step.outputs) out.push_back(data(b));
    loops_.push_back(step.loop ? std::make_unique<LoopRunner>(*step.loop, step.workspace < 0 ? nullptr : data(step.workspace))
                               : nullptr);
  }
  // The slots, once every step's lists are in place (they do not move after this).
  for (size_t s = 0; s < input_data_.size(); ++s) {
    const Step& step = program_.steps()[s];
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0) input_slots_[static_cast<size_t>(step.inputs[i])].push_back(&input_data_[s][i]);
    for (size_t i = 0; i < step.outputs.size(); ++i) output_slots_[static_cast<size_t>(step.outputs[i])].push_back(&output_data_[s][i]);
  }
}

void StepExecutor::bind(int buffer, std::byte* at) {
  const size_t b = static_cast<size_t>(buffer);
  if (!at) at = arena_->data(buffer);
  if (address_[b] == at) return;
  address_[b] = at;
  for (const void** slot : input_slots_[b]) *slot = address_[b];
  for (void** slot : output_slots_[b]) *slot = address_[b];
}

StepExecutor::~StepExecutor() = default;

void StepExecutor::run_collective_step(const Step& step, size_t s, MeshTransport* transport) {
  const FlatEquation& eqn = program_.linearization().graph.eqns[static_cast<size_t>(step.equation)];
  if (!transport)
    fail_at(eqn.where, "cannot run " + std::string(prim_name(eqn.prim)) +
                           " off a mesh: it moves values between devices (a step on a mesh runs one executor per "
                           "device, MeshStepRunner)");
  const Type& out_type = program_.buffer_type(step.outputs.at(0));
  if (!step.inputs.empty() &&
      run_device_collective_on_buffers(*transport, eqn.prim, eqn.params, data(step.inputs[0]),
                                       program_.buffer_type(step.inputs[0]), output_data_[s][0], out_type))
    return;
  std::optional<Tensor> operand;
  if (!step.inputs.empty()) operand = read(step.inputs[0]);
  // A shard_map's operand or result the placement already split as its spec does is the device's
  // block as it is.
  const bool placed = (eqn.prim == Prim::kShardMapIn || eqn.prim == Prim::kShardMapOut) && operand &&
                      operand->type.shape == out_type.shape;
  const Tensor out = placed ? *operand
                            : run_device_collective(*transport, eqn.prim, eqn.params, operand ? &*operand : nullptr, out_type,
                                                    Arithmetic::kFloat32);
  if (out.type.shape != out_type.shape || out.size() != out_type.num_elements())
    internal_error("the device's " + std::string(prim_name(eqn.prim)) + " at " + eqn.where.str() + " gives " +
                   out.type.str() + " where its buffer is " + out_type.str() + " (the placement disagrees with it)");
  write_buffer(out, output_data_[s][0]);
}

void StepExecutor::time_steps(bool on) {
  timing_ = on;
  step_ns_.resize(program_.steps().size(), 0);
}

Tensor StepExecutor::read(int buffer) const { return read_buffer(program_.buffer_type(buffer), data(buffer)); }

void StepExecutor::run(const StepIo& io) {
  const std::vector<Step>& steps = program_.steps();
  arena_->reset_marks();
  using Clock = std::chrono::steady_clock;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    const Clock::time_point started = timing_ ? Clock::now() : Clock::time_point{};
    for (int b : step.acquire) arena_->acquire(b);
    switch (step.kind) {
      case StepKind::kKernel:
        step.kernel->execute(input_data_[s], output_data_[s], step.workspace < 0 ? nullptr : arena_->data(step.workspace),
                             step.kernel->workspace_bytes());
        break;
      case StepKind::kLoop: loops_[s]->run(input_data_[s], output_data_[s], io.transport); break;
      case StepKind::kLoad: {
        const Type& type = program_.buffer_type(step.outputs[0]);
        const LoadSource& load = step.load;
        const Tensor* given = nullptr;
        switch (load.kind) {
          case LoadSource::Kind::kConstant: given = &io.constants->at(load.index); break;
          case LoadSource::Kind::kArgument: given = &io.arguments->at(load.index); break;
          case LoadSource::Kind::kCotangentSeed: given = io.cotangents ? &io.cotangents->at(load.index) : nullptr; break;
          case LoadSource::Kind::kLiteral: break;
        }
        if (given) write_buffer(*given, output_data_[s][0]);
        else if (load.kind == LoadSource::Kind::kLiteral) fill_buffer(type, load.literal, load.literal_imag, output_data_[s][0]);
        else fill_buffer(type, 1.0, 0.0, output_data_[s][0]);
        break;
      }
      case StepKind::kEffect:
        if (step.prints) {
          std::vector<Tensor> operands;
          for (int b : step.inputs) operands.push_back(read(b));
          std::cerr << format_debug_print(program_.linearization().graph.eqns[static_cast<size_t>(step.equation)], operands)
                    << std::endl;
        }
        break;
      case StepKind::kHostCall: {
        const FlatEquation& eqn = program_.linearization().graph.eqns[static_cast<size_t>(step.equation)];
        fail_at(eqn.where, "cannot run " + std::string(prim_name(eqn.prim)) +
                               ": it calls a Python function the program does not carry (residuals, memory and "
                               "solve read it as an opaque host call)");
      }
      case StepKind::kCollective: run_collective_step(step, s, io.transport); break;
      case StepKind::kReadout:
        if (io.results) {
          for (int b : step.inputs) {
            if (step.pass == Pass::kForward) io.results->outputs.push_back(read(b));
            else if (b < 0) io.results->gradients.emplace_back();
            else io.results->gradients.emplace_back(read(b));
          }
        }
        break;
    }
    for (int b : step.release) arena_->release(b);
    if (timing_) step_ns_[s] += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count();
  }
}

}  // namespace rematkit
