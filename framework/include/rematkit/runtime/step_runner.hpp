// Running a step program: a OneShotRunner takes tensors and gives tensors back each run (one-off
// gradients, the CLI); a ResidentRunner keeps every constant and argument in its arena between runs
// and leaves results where they lie (a training loop: a run converts and allocates nothing). Each
// owns its program and one arena, reused by every run, and measures the peak the arena reaches.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit {

// What both runners share: the program, its arena and its threads. Not used on its own.
class StepExecutor;

class REMATKIT_CORE_EXPORT StepRunner {
 public:
  ~StepRunner();
  StepRunner(StepRunner&&) noexcept;  // the arena and the kernels stay where they are
  StepRunner& operator=(StepRunner&&) noexcept;

  const StepProgram& program() const { return *program_; }
  const ArenaLayout& layout() const { return program_->layout(); }
  // The highest byte the arena reached during the last run, per memory space (the layout's
  // predicted peak, once a run has happened).
  int64_t measured_peak(MemorySpace space = MemorySpace::kDevice) const;
  // From now on (until false), each run adds the wall time of each step to step_ns()[s], per step
  // of program().steps() (a loop step's is its whole loop's); step_times.hpp sums them per backend,
  // primitives and dtype.
  // Off by default: then a run reads no clock, and step_ns() is empty until the first call.
  void time_steps(bool on);
  const std::vector<int64_t>& step_ns() const;

 protected:
  // A MemoryLimitError, before anything is allocated, when the program's arena is over
  // `backends.max_memory`.
  StepRunner(StepProgram program, const BackendOptions& backends);
  // The tensors of a one-shot run (null pointers in a resident run) and where results go.
  struct RunIo {
    const std::vector<Tensor>* constants = nullptr;
    const std::vector<Tensor>* arguments = nullptr;
    const std::vector<Tensor>* cotangents = nullptr;  // null: ones
    GradientResult* results = nullptr;                // null: results stay in the arena
    MeshTransport* transport = nullptr;               // a device's, on a mesh (mesh_step_runner.hpp)
  };
  // Runs every step in order, then `then`, inside the runner's threads.
  void run_steps(const RunIo& io, const std::function<void()>& then);
  void* buffer_data(int buffer) const;
  Tensor read_buffer(int buffer) const;

 private:
  struct Threads;
  std::unique_ptr<StepProgram> program_;     // where it is for good: the executor points into it
  std::unique_ptr<StepExecutor> executor_;  // its steps on one arena
  std::array<int64_t, kNumMemorySpaces> measured_peak_{};
  std::unique_ptr<Threads> threads_;  // a oneTBB arena of BackendOptions::threads, made once; null for 0
};

class REMATKIT_CORE_EXPORT OneShotRunner : public StepRunner {
 public:
  // A bad-input Error if a backend is unknown or none in `backends` runs an equation.
  // `lin` must outlive the runner.
  OneShotRunner(const Linearization& lin, const BackendOptions& backends, Pass last_pass = Pass::kBackward);
  // A program built already (build_step_program with a FusionChoice of one's own) on the backends
  // and threads of `backends`; it must load its inputs each run (InputMode::kLoadedEachRun).
  OneShotRunner(StepProgram program, const BackendOptions& backends);

  // The program's outputs and (unless forward-only) the gradient of sum(output_i * cotangent_i) with
  // respect to every floating argument; `cotangents` default to ones. Inputs cross into f32/i32/u8
  // buffers once, on the step that first reads them; results cross back once, at their readout.
  // A bad-input Error for a wrong number of inputs or elements.
  GradientResult run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                     const std::vector<Tensor>* cotangents = nullptr);
};

class REMATKIT_CORE_EXPORT ResidentRunner : public StepRunner {
 public:
  // Both passes, with resident inputs. `lin` must outlive the runner.
  ResidentRunner(const Linearization& lin, const BackendOptions& backends);

  // Copies a constant or argument in (converted to its dtype); it stays until written again.
  // A bad-input Error for an index past the end or another shape.
  void write_constant(size_t index, const Tensor& value);
  void write_argument(size_t index, const Tensor& value);
  // An argument's buffer, to write a new batch in place without conversion.
  void* argument_data(size_t index);
  // Runs both passes on the resident inputs with ones as the output cotangents; `then` runs
  // afterwards on the same threads (a training step's update). On a mesh, `transport` is the
  // device's (the program placed on it, mesh_step_runner.hpp).
  void run(const std::function<void()>& then = nullptr, MeshTransport* transport = nullptr);
  // After run(): an output's or an argument's gradient buffer (nullptr for an argument without a
  // gradient), valid until the next run; read_* copy into tensors.
  const void* output_data(size_t index) const;
  const void* gradient_data(size_t index) const;
  Tensor read_argument(size_t index) const;
  Tensor read_output(size_t index) const;
  std::optional<Tensor> read_gradient(size_t index) const;
};

}  // namespace rematkit
