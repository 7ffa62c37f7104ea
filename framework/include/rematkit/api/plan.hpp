// rematkit's front door: a program differentiated under a checkpoint policy and planned on
// backends, once; then its residual report, its memory plan, and as many forward passes,
// gradients and training steps as you like.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/gradient_result.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/runtime/training_step.hpp"

namespace rematkit {

struct Linearization;
class OneShotRunner;
class PluginRegistry;
class SimulatedDevices;

// What a Plan is built with; every field has a default.
struct PlanOptions {
  // Checkpoint the whole program with this policy (any spec `rematkit residuals --policy` takes);
  // empty: only the checkpoints the program has, each with its own policy.
  std::string policy;
  // How it runs: backends in order of preference (each equation runs on the first that supports
  // it; empty: onednn, highway, reference, those of them that are installed), threads, the most
  // bytes a step may take, fusion. Its plugins are where the policy comes from too.
  BackendOptions backends{.preference = {}};
  std::vector<size_t> differentiate;  // jax.grad's argnums; empty: every floating argument
};

// One program, one policy, one list of backends: linearized and planned at construction, then run
// any number of times (not from two threads at once). A program on a mesh (shard_map, pmap) is
// placed on it: its answers are one device's, and it runs a step program per device in this
// process (SimulatedDevices, mesh_step_runner.hpp).
class REMATKIT_CORE_EXPORT Plan {
 public:
  // Linearizes `program` and plans its forward and backward pass. A bad-input Error names an
  // unknown policy or backend, or an equation no listed backend runs.
  explicit Plan(Program program, PlanOptions options = {});
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  // Moving keeps the linearization where it is, so training steps made from the plan stay valid.
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  const Program& program() const { return program_; }
  // The gradient as JAX linearizes it: what the forward pass keeps and the backward pass runs
  // (rematkit/autodiff/linearize.hpp has the type).
  const Linearization& linearization() const;

  // What the backward pass keeps, as jax.ad_checkpoint.print_saved_residuals prints it; with
  // `explain`, each residual's bytes, reader and the policy decision behind it.
  std::string residual_report(bool explain = false) const;
  int64_t residual_bytes() const;
  // The arena layout of a forward and backward pass: every buffer's offset in its arena, and the
  // predicted peak per memory space.
  const ArenaLayout& layout() const;
  int64_t predicted_peak(MemorySpace space = MemorySpace::kDevice) const { return layout().arena(space); }
  // The peak the last gradient() reached, equal to predicted_peak() once gradient() has run. Before
  // the first gradient() nothing has run, and it is 0: for the memory of a plan not yet run, ask
  // predicted_peak(), or memory_report() for where the peak comes from.
  int64_t measured_peak(MemorySpace space = MemorySpace::kDevice) const;
  // Where the memory of gradient() goes (rematkit/analysis/memory_report.hpp): each buffer's kind, bytes and
  // lifetime, the bytes alive at each step, and the peak step with every buffer alive there. Known
  // without a run: worked out from the plan on the first call, then the same every call.
  const MemoryReport& memory_report() const;

  // The program's outputs. Arguments (and constants, if the program has any) in binder order;
  // a bad-input Error for a wrong count or shape.
  std::vector<Tensor> forward(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants = {});
  // The outputs, and the gradient of the sum of the outputs with respect to each differentiated argument.
  GradientResult gradient(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants = {});
  // SGD on the arguments `params` (a program with one f32[] output, its loss); starts from
  // `arguments`. The step keeps a reference to this plan's linearization: it must not outlive the plan.
  TrainingStep training_step(const std::vector<Tensor>& arguments, std::vector<size_t> params, double learning_rate,
                             const std::vector<Tensor>& constants = {}) const;

 private:
  void check_inputs(const std::vector<Tensor>& arguments, const std::vector<Tensor>& constants) const;

  Program program_;
  BackendOptions backends_;
  std::unique_ptr<Linearization> lin_;  // stable: runners and training steps point at it
  std::unique_ptr<OneShotRunner> gradient_, forward_;  // forward_ is made by the first forward()
  std::unique_ptr<SimulatedDevices> devices_;         // on a mesh, instead of gradient_
  mutable std::unique_ptr<MemoryReport> memory_report_;  // made by the first memory_report()
};

}  // namespace rematkit
