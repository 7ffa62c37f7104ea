// Where a step's time goes: the wall times a runner took per step (StepRunner::time_steps), summed
// per what ran them, so that a researcher can see which primitives, on which backend and in which
// dtype, a policy or a dtype makes slower.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit {

// The steps of one kind: kernels of the same primitives on the same backend with results of the
// same dtype, or all steps of another kind ("load", "loop", "readout", "effect", "host call",
// "collective" as the backend, the primitive as `what` where the step runs one).
struct StepTimeRow {
  std::string backend;
  std::string what;   // a kernel's primitive; a fused kernel's, in order, joined by '+'
  std::string dtype;  // its first result's dtype ("" for a step without results)
  int64_t steps = 0;  // how many steps of the program are of this kind
  int64_t ns = 0;     // their times, summed
};

// `step_ns` holds a time per step of `program` (StepRunner::step_ns()); the rows come longest
// first, ties in the order their first step runs. A bad-input Error if the counts differ.
REMATKIT_CORE_EXPORT std::vector<StepTimeRow> step_time_rows(const StepProgram& program, const std::vector<int64_t>& step_ns);

}  // namespace rematkit
