// A training step for a program with a scalar loss: the forward pass, the backward pass, and a
// plain SGD update of the trained arguments in place (p <- p - learning_rate * dloss/dp, in f32).
// The params, the data and the constants live in the step's arena between steps (a ResidentRunner),
// so a step converts nothing and allocates nothing.
//
// On a mesh (a linearization placed on it: mesh_step_runner.hpp), each device has its own runner
// and arena, holding its blocks of the params and the data; a step runs every device at once, a
// thread each, their collectives meeting on the simulated mesh, and each device updates its own
// blocks with its own gradients (which the step's collectives have summed where a param is shared).
// Or the step is one device's, this process's (a rank of mpirun), its collectives going through a
// MeshTransport the caller gives, the other devices' steps run by the other processes.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

struct Linearization;
class MeshTransport;
class ResidentRunner;

// Built by Plan::training_step, or directly from a Linearization; keeps its arena across steps.
class REMATKIT_CORE_EXPORT TrainingStep {
 public:
  // `trained`: indices of the arguments SGD updates (the params; not the data). A bad-input Error
  // if the program's output is not one f32 scalar, or a trained argument has no gradient in `lin`
  // (not floating, or left out of LinearizeOptions::differentiate). The step keeps its own copy of `lin`.
  TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
               double learning_rate);
  // Device transport.device() of the mesh `lin` is placed on, alone: its blocks of the arguments, its
  // collectives through `transport` (which must outlive the step).
  TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
               double learning_rate, MeshTransport& transport);
  // The same, starting from these arguments and constants.
  TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
               double learning_rate, const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants = {});
  ~TrainingStep();
  TrainingStep(TrainingStep&&) noexcept;  // the arena stays where it is
  TrainingStep& operator=(TrainingStep&&) noexcept;

  // The starting values: every constant and argument, in binder order (shape-checked).
  void set_constants(const std::vector<Tensor>& constants);
  void set_arguments(const std::vector<Tensor>& arguments);
  void set_argument(size_t index, const Tensor& value);
  // An f32 argument's buffer, to write the next batch in place. A bad-input Error for other dtypes.
  float* argument_f32(size_t index);

  // One step: returns the loss, computed before the update.
  float run();

  // A trained argument's current value; the gradient the last step applied (on a mesh, device 0's
  // blocks of them).
  Tensor argument(size_t index) const;
  std::optional<Tensor> gradient(size_t index) const;
  // The devices this process runs the step on: 1 off a mesh, or as one device of it.
  int64_t devices() const { return static_cast<int64_t>(runners_.size()); }
  // The step's memory: its arena layout, the peak it predicts and the peak the last step reached
  // (on a mesh, one device's layout and the highest any device's arena reached).
  const ArenaLayout& layout() const;
  int64_t predicted_peak(MemorySpace space = MemorySpace::kDevice) const { return layout().arena(space); }
  int64_t measured_peak(MemorySpace space = MemorySpace::kDevice) const;
  // What runs the step (rematkit/runtime/step_runner.hpp has the type): device 0's on a mesh.
  const ResidentRunner& runner() const { return *runners_[0]; }
  // StepRunner::time_steps on every device's runner: runner().step_ns() then says where a step's
  // time goes.
  void time_steps(bool on);

 private:
  void start(const Linearization& lin, const BackendOptions& backends, int64_t runners);  // checks, then the runners
  void update(ResidentRunner& runner);
  int64_t device_of(size_t runner) const;  // the mesh device runners_[runner] runs

  std::unique_ptr<Linearization> lin_;  // a copy of the caller's, which the runners read
  std::vector<std::unique_ptr<ResidentRunner>> runners_;  // one per device
  std::vector<size_t> trained_;  // the arguments update() updates
  float learning_rate_;
  MeshTransport* transport_ = nullptr;  // set: one device, this process's
};

}  // namespace rematkit
