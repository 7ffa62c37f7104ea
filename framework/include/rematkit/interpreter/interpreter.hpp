// The reference interpreter: the forward semantics of every primitive, on host tensors.
#pragma once

#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

// Applies one primitive (not a call) to `inputs`; `out_types` are the verified output types.
REMATKIT_CORE_EXPORT std::vector<Tensor> apply_primitive(Prim prim, const Params& params, const std::vector<const Tensor*>& inputs,
                                    const std::vector<Type>& out_types, Arithmetic arithmetic);

// Evaluates a whole program, calls included, on constants and arguments in binder order.
REMATKIT_CORE_EXPORT std::vector<Tensor> evaluate_program(const Program& program, const std::vector<Tensor>& consts,
                                     const std::vector<Tensor>& args, Arithmetic arithmetic);

}  // namespace rematkit
