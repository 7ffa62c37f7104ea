// A gradient built once and run many times: the forward and the backward pass are each a flat list
// of steps on backends (BackendPlan), over buffer slots that one static memory plan places in an
// arena. Steps count through both passes, so a residual's buffer lives from the forward step that
// makes it to the last backward step that reads it, and the plan's predicted peak is that of the
// whole training step. Running measures the peak the arena really reaches.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/backend_plan.hpp"
#include "rematkit/gradient.hpp"
#include "rematkit/linearize.hpp"
#include "rematkit/memory_plan.hpp"

namespace rematkit {

class GradientPlan {
 public:
  enum class Passes { kForwardAndBackward, kForwardOnly };

  // A bad-input Error if a backend is unknown or none in `backends` runs an equation.
  // `lin` must outlive the plan.
  GradientPlan(const Linearization& lin, const BackendOptions& backends, Passes passes = Passes::kForwardAndBackward);
  ~GradientPlan();
  GradientPlan(const GradientPlan&) = delete;
  GradientPlan& operator=(const GradientPlan&) = delete;

  // The program's outputs and (unless kForwardOnly) the gradient of sum(output_i * cotangent_i) with
  // respect to every floating argument; `cotangents` default to ones. Inputs cross into f32/i32/u8
  // buffers once, on the step that first reads them; results cross back once at the end of their pass.
  GradientResult run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                     const std::vector<Tensor>* cotangents = nullptr);

  const MemoryPlan& memory() const { return memory_; }
  // The highest byte the arena reached during the last run(), per memory space.
  int64_t measured_peak(MemorySpace space) const;
  // Values whose forward buffer stays alive into the backward pass: what the plan really keeps.
  const std::vector<ValueId>& kept_values() const { return kept_; }
  const BackendPlan& forward() const { return *forward_; }
  const BackendPlan* backward() const { return backward_.get(); }

 private:
  GradientResult run_steps(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                           const std::vector<Tensor>* cotangents);

  struct Load;
  struct Step;
  class Builder;

  const Linearization& lin_;
  std::unique_ptr<BackendPlan> forward_, backward_;
  std::vector<Load> loads_;  // buffers filled from outside: constants, arguments, seeds, literals
  std::vector<int> load_of_buffer_;  // per buffer: its index in loads_, or -1
  std::vector<Type> buffer_types_;   // per buffer
  std::vector<Step> steps_;  // forward steps, the forward readout, backward steps, the gradient readout
  MemoryPlan memory_;
  std::unique_ptr<Arena> arena_;  // run() is not reentrant: one arena per plan
  std::array<int64_t, kNumMemorySpaces> measured_peak_{};
  int threads_ = 0;  // BackendOptions::threads
  std::vector<ValueId> kept_;
};

}  // namespace rematkit
