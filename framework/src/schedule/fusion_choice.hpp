// Which fusions a step program runs (build_step_program's search, step_program.hpp).
#pragma once

#include "prepared_kernels.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit {

// A fused step runs where its last part was, so the values it reads can live longer than they
// would part by part, and its operands and results are all live at once. So fusing everywhere can
// raise the peak above the unfused plan's. Where it does, the fusions live at the peak are held
// apart, a few times over (the peak may move), then one pass alone is fused, then none: the first
// of these whose predicted peak is no higher than the unfused plan's. Each candidate is a whole
// plan on `kernels`, so its peak is exact and no kernel is prepared twice; the one chosen is
// returned as it is (its fusion() says what was chosen), not built again.
StepProgram choose_fusion(const Linearization& lin, PreparedKernels& kernels, Pass last_pass, InputMode inputs);

// The program with `fusion`'s fusions on `kernels` (step_program.cpp).
StepProgram build_steps(const Linearization& lin, PreparedKernels& kernels, Pass last_pass, InputMode inputs,
                        const FusionChoice& fusion);

}  // namespace rematkit
