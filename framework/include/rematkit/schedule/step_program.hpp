// A linearization compiled for backends: the forward and the backward pass as one flat list of
// steps over buffers, and the arena layout that places every buffer. Built once by
// build_step_program() and never changed after; a OneShotRunner or a ResidentRunner
// (step_runner.hpp) runs it.
//
// Steps count through both passes, so a residual's buffer lives from the forward step that makes it
// to the last backward step that reads it, and the layout's predicted peak is that of the whole
// training step.
#pragma once

#include <memory>
#include <set>
#include <vector>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/pass.hpp"

namespace rematkit {

// Where constants and arguments come from.
enum class InputMode {
  kLoadedEachRun,  // load steps convert the given tensors on the step that first reads them (one-off runs)
  kResident,       // each has a buffer for the whole step, written by the caller and kept between runs
};

struct LoopProgram;
class PreparedKernels;

enum class StepKind {
  kLoad,     // fills a buffer from outside the program: a constant, an argument, a cotangent, a literal
  kKernel,   // runs one equation's prepared kernel
  kLoop,     // runs a loop body's own step program once per iteration (loop_program.hpp)
  kReadout,  // the end of a pass: the buffers holding its results (outputs, then gradients)
  kEffect,   // an equation run for its effect (debug_callback): reads its operands, writes nothing
  kHostCall, // a call back into Python (pure_callback, io_callback): its buffers are planned, but
             // running it is refused (the program does not carry the function)
  kCollective,  // moves values between devices (psum, all_gather, a shard_map's split and join): its
                // buffers are planned as one device's; one device's executor cannot run it
};

// What a load step fills its buffer with.
struct LoadSource {
  enum class Kind { kConstant, kArgument, kCotangentSeed, kLiteral };
  Kind kind = Kind::kLiteral;
  size_t index = 0;     // into the constants, arguments or outputs (whose cotangent it is)
  double literal = 0.0;  // kLiteral's value, for every element (a complex literal's real part)
  double literal_imag = 0.0;
};

struct Step {
  StepKind kind = StepKind::kKernel;
  Pass pass = Pass::kForward;
  LoadSource load;                        // kLoad: what fills outputs[0]
  int equation = -1;                      // the graph equation a step that runs one runs (a fused one's first)
  bool prints = false;                    // kEffect: whether it prints its operands (debug_prints)
  std::vector<int> fused;                 // kKernel of a fusion: the graph equations it runs, in order
                                          // (fusion_steps.hpp); empty for a kernel of one equation
  const PreparedKernel* kernel = nullptr; // kKernel: owned by the program
  const LoopProgram* loop = nullptr;      // kLoop: owned by the program
  int workspace = -1;                     // for this step only: kLoop's body arena; kKernel's scratch
                                          // (its kernel's workspace_bytes(); -1 if none)
  std::vector<int> inputs;                // buffers read; a readout's results (-1: no gradient)
  std::vector<int> outputs;               // buffers written
  std::vector<int> acquire, release;      // buffers whose lifetime starts / ends at this step

  // Whether it runs an equation of the graph (`equation`), not a load or a readout.
  bool runs_equation() const { return kind != StepKind::kLoad && kind != StepKind::kReadout; }
};

class StepProgram;

// What a step program fuses (fusion_steps.hpp): chains in the forward pass, in the backward pass,
// or both, but for the graph equations held apart. FusionChoice{} fuses wherever a backend can;
// FusionChoice::none() nowhere.
struct FusionChoice {
  bool forward = true, backward = true;
  std::set<int> held_apart;
  static FusionChoice none() { return {false, false, {}}; }
};

// Binds every equation of the passes to a backend (the first in `backends` that runs it), gives
// every definition of a value its own buffer (a recomputed value is defined again in the backward
// pass), and lays out the buffers by their lifetimes. A bad-input Error if a backend is unknown or
// none runs an equation. `lin` must outlive the program.
// `last_pass`: kBackward for both passes, kForward for the forward pass alone.
// What it fuses is choose_fusion's answer (fusion_choice.hpp: where fusing everywhere would raise
// the predicted peak above the unfused plan's, a fusion that does not), or none where
// backends.fusion is kOff; StepProgram::fusion() says which. Every kernel is prepared once,
// however many plans the choice compares.
REMATKIT_CORE_EXPORT StepProgram build_step_program(const Linearization& lin, const BackendOptions& backends, Pass last_pass,
                                                    InputMode inputs);
// The same with `fusion` as the answer, not compared with anything (FusionChoice{}: fused wherever a
// backend can, what the fusion tests set beside the unfused plan).
REMATKIT_CORE_EXPORT StepProgram build_step_program(const Linearization& lin, const BackendOptions& backends, Pass last_pass,
                                                    InputMode inputs, const FusionChoice& fusion);

// One pass of a loop body on its own (loop_program.hpp): `given` values are buffers for the whole
// program that the loop writes before each iteration (their buffers in `given_buffers`, in order),
// `eqns` of lin.graph run in order, and `results` are read after it (output_buffers()).
REMATKIT_CORE_EXPORT StepProgram build_body_program(const Linearization& lin, BackendSet& backends,
                                                    const std::vector<ValueId>& given, const std::vector<int>& eqns,
                                                    const std::vector<ValueId>& results,
                                                    std::vector<int>& given_buffers);

// The step program a scan's loop step runs once per iteration (its part's body pass); nullptr for
// any other step (a cond's, a while's, a kernel). Its arena is the loop step's workspace.
REMATKIT_CORE_EXPORT const StepProgram* scan_body_program(const Step& step);

class REMATKIT_CORE_EXPORT StepProgram {
 public:
  StepProgram(StepProgram&&) noexcept;
  StepProgram& operator=(StepProgram&&) noexcept;
  ~StepProgram();

  const Linearization& linearization() const { return *lin_; }
  Pass last_pass() const { return last_pass_; }
  InputMode input_mode() const { return inputs_; }
  const std::vector<Step>& steps() const { return steps_; }
  const ArenaLayout& layout() const { return layout_; }
  const Type& buffer_type(int buffer) const { return buffer_types_.at(static_cast<size_t>(buffer)); }
  // The graph value a buffer holds, one definition of it (kNoValue: a step's workspace).
  ValueId buffer_value(int buffer) const { return buffer_values_.at(static_cast<size_t>(buffer)); }
  // The buffers the readouts read: per output, and per argument (-1 for no gradient; none for a
  // forward-only program).
  const std::vector<int>& output_buffers() const { return output_buffers_; }
  const std::vector<int>& gradient_buffers() const { return gradient_buffers_; }
  // kResident: the whole-step buffer of constant or argument `index`.
  int constant_buffer(size_t index) const { return constant_buffers_.at(index); }
  int argument_buffer(size_t index) const { return argument_buffers_.at(index); }
  // Values whose forward buffer stays alive into the backward pass: what the program really keeps.
  const std::vector<ValueId>& kept_values() const { return kept_; }
  // What it fuses (build_step_program's choice, or the one it was given).
  const FusionChoice& fusion() const { return fusion_; }

  // Kernel steps that run several equations (Step::fused).
  size_t fused_steps() const {
    size_t n = 0;
    for (const Step& s : steps_) n += s.fused.empty() ? 0 : 1;
    return n;
  }

 private:
  friend StepProgram build_steps(const Linearization&, PreparedKernels&, Pass, InputMode, const FusionChoice&);
  friend StepProgram build_body_program(const Linearization&, BackendSet&, const std::vector<ValueId>&,
                                        const std::vector<int>&, const std::vector<ValueId>&, std::vector<int>&);
  StepProgram() = default;

  const Linearization* lin_ = nullptr;
  Pass last_pass_ = Pass::kBackward;
  InputMode inputs_ = InputMode::kLoadedEachRun;
  FusionChoice fusion_ = FusionChoice::none();
  // The kernel and loop steps point at these (shared: every plan choose_fusion compares uses the
  // same prepared kernels).
  std::vector<std::shared_ptr<const PreparedKernel>> kernels_;
  std::vector<std::shared_ptr<const LoopProgram>> loops_;
  std::vector<Step> steps_;
  std::vector<Type> buffer_types_;
  std::vector<ValueId> buffer_values_;
  ArenaLayout layout_;
  std::vector<int> output_buffers_, gradient_buffers_, constant_buffers_, argument_buffers_;
  std::vector<ValueId> kept_;
};

}  // namespace rematkit
