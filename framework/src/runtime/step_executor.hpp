// Runs a step program's steps on one arena: what a StepRunner does each run, and what a loop does
// for its body each iteration. Per step, the buffers' addresses are fixed when it is made, so a run
// builds no argument lists; a loop step gets a LoopRunner over its workspace.
#pragma once
#include <array>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <vector>

#include "rematkit/autodiff/gradient_result.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

class LoopRunner;

// The tensors of a one-shot run (null pointers elsewhere) and where results go.
struct StepIo {
  const std::vector<Tensor>* constants = nullptr;
  const std::vector<Tensor>* arguments = nullptr;
  const std::vector<Tensor>* cotangents = nullptr;  // null: ones
  GradientResult* results = nullptr;                // null: results stay in the arena
  MeshTransport* transport = nullptr;               // on a mesh: the device's way to the others
};

class StepExecutor {
 public:
  // `device_memory`: where the device arena lives (a loop's workspace), or null to allocate it.
  // `program` must outlive the executor and stay where it is.
  StepExecutor(const StepProgram& program, std::byte* device_memory = nullptr);
  ~StepExecutor();

  // A collective step runs through io.transport; without one it is a bad-input error.
  void run(const StepIo& io);
  // Where `buffer` is: its arena place, or where bind() pointed it.
  std::byte* data(int buffer) const { return address_[static_cast<size_t>(buffer)]; }
  // Points `buffer` at `at`, memory outside the arena (a loop's row, read or written in place), for
  // the runs that follow; null points it back at its arena place. The arena keeps its room, so the
  // memory plan is the same either way.
  void bind(int buffer, std::byte* at);
  bool in_arena(int buffer) const { return data(buffer) == arena_->data(buffer); }
  Tensor read(int buffer) const;
  // The highest byte the arena reached in the last run.
  int64_t high_water(MemorySpace space) const { return arena_->high_water(space); }
  // From now on (until false), each run adds each step's wall time to step_ns()[s] (a loop step's
  // is its whole loop's). Off, a run reads no clock. step_ns() is empty until the first call.
  void time_steps(bool on);
  const std::vector<int64_t>& step_ns() const { return step_ns_; }

 private:
  void run_collective_step(const Step& step, size_t s, MeshTransport* transport);

  const StepProgram& program_;
  std::unique_ptr<Arena> arena_;
  std::vector<std::vector<const void*>> input_data_;
  std::vector<std::vector<void*>> output_data_;
  std::vector<std::byte*> address_;  // per buffer
  // Per buffer, the slots of input_data_ and output_data_ that hold its address (for bind).
  std::vector<std::vector<const void**>> input_slots_;
  std::vector<std::vector<void**>> output_slots_;
  std::vector<std::unique_ptr<LoopRunner>> loops_;  // per step; null but for loop steps
  bool timing_ = false;
  std::vector<int64_t> step_ns_;  // per step, while timing_ or since
};

}  // namespace rematkit
