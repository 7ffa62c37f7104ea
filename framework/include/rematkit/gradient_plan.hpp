// A gradient built once and run many times: the forward and the backward pass are each a flat list
// of steps on backends (BackendPlan), over buffer slots that one static memory plan places in an
// arena. Steps count through both passes, so a residual's buffer lives from the forward step that
// makes it to the last backward step that reads it, and the plan's predicted peak is that of the
// whole training step. Running measures the peak the arena really reaches.
//
// Inputs come in two ways. kLoadedEachRun: run() converts the given tensors into buffers on the
// step that first reads them, and results back at the end of their pass (one-off gradients, the
// CLI). kResident: every constant and argument has a buffer for the whole step that keeps its
// contents between runs; write them once (or whenever they change), then run_resident() does no
// conversion and no allocation, and results are read where they lie (a training loop).
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/backend_plan.hpp"
#include "rematkit/gradient.hpp"
#include "rematkit/linearize.hpp"
#include "rematkit/memory_plan.hpp"

namespace rematkit {

// Built once per linearization and backend list; run() and run_resident() any number of times.
class GradientPlan {
 public:
  enum class Passes { kForwardAndBackward, kForwardOnly };
  enum class Inputs { kLoadedEachRun, kResident };

  // A bad-input Error if a backend is unknown or none in `backends` runs an equation.
  // `lin` must outlive the plan.
  GradientPlan(const Linearization& lin, const BackendOptions& backends, Passes passes = Passes::kForwardAndBackward,
               Inputs inputs = Inputs::kLoadedEachRun);
  ~GradientPlan();
  GradientPlan(const GradientPlan&) = delete;
  GradientPlan& operator=(const GradientPlan&) = delete;
  GradientPlan(GradientPlan&&) noexcept;  // buffers and kernels stay where they are


  // The program's outputs and (unless kForwardOnly) the gradient of sum(output_i * cotangent_i) with
  // respect to every floating argument; `cotangents` default to ones. Inputs cross into f32/i32/u8
  // buffers once, on the step that first reads them; results cross back once at the end of their pass.
  GradientResult run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                     const std::vector<Tensor>* cotangents = nullptr);

  // kResident plans. Constants and arguments are copied in (converted to their dtype) and stay;
  // argument_data() is an argument's buffer, to write a new batch in place without conversion.
  void write_constant(size_t index, const Tensor& value);
  void write_argument(size_t index, const Tensor& value);
  void* argument_data(size_t index);
  // Runs both passes on the resident inputs with ones as the output cotangents; `then` runs
  // afterwards in the same oneTBB arena (a training step's update).
  void run_resident(const std::function<void()>& then = nullptr);
  // After run_resident(): an output's or a floating argument's gradient buffer (nullptr for a
  // non-floating argument), valid until the next run; read_* copy them into tensors.
  const void* output_data(size_t index) const;
  const void* gradient_data(size_t index) const;
  Tensor read_argument(size_t index) const;
  Tensor read_output(size_t index) const;
  std::optional<Tensor> read_gradient(size_t index) const;

  const Linearization& linearization() const { return lin_; }
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
  void in_arena(const std::function<void()>& work);
  void require_resident(const char* what) const;
  int resident_buffer(const std::vector<ValueId>& values, const char* what, size_t index) const;
  void write_resident(const std::vector<ValueId>& values, const char* what, size_t index, const Tensor& value);
  static void checked_index(size_t count, const char* what, size_t index);  // a bad-input Error past the end

  struct Load;
  struct Step;
  struct TaskArena;
  class Builder;

  const Linearization& lin_;
  std::unique_ptr<BackendPlan> forward_, backward_;
  std::vector<Load> loads_;  // buffers filled from outside: constants, arguments, seeds, literals
  std::vector<int> load_of_buffer_;  // per buffer: its index in loads_, or -1
  std::vector<Type> buffer_types_;   // per buffer
  std::vector<Step> steps_;  // forward steps, the forward readout, backward steps, the gradient readout
  std::vector<int> output_buffers_, gradient_buffers_;  // what the readouts read (-1: no gradient)
  std::vector<int> resident_of_value_;  // kResident: per graph value, its whole-step buffer, or -1
  Inputs inputs_ = Inputs::kLoadedEachRun;
  MemoryPlan memory_;
  std::unique_ptr<Arena> arena_;  // run() is not reentrant: one arena per plan
  std::array<int64_t, kNumMemorySpaces> measured_peak_{};
  int threads_ = 0;  // BackendOptions::threads
  std::unique_ptr<TaskArena> task_arena_;  // threads_ > 0: threads_ oneTBB threads, made once
  std::vector<ValueId> kept_;
};

}  // namespace rematkit
