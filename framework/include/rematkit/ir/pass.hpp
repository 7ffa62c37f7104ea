// The parts of a training step, as the memory plan and its reports name them.
#pragma once

namespace rematkit {

// A step program runs the forward pass, then (unless it is built to stop after the forward) the
// backward pass; a Step's pass is one of those two. kRecompute is how the analysis names a
// backward-pass step that runs a program equation again (the recomputation: memory_report.hpp's
// StepMemory::pass).
enum class Pass { kForward, kRecompute, kBackward };

}  // namespace rematkit
