// The type rules of the primitives with a window: conv_general_dilated (jax/_src/lax/convolution.py)
// and the window reductions with their derivatives' select_and_* (windowed_reductions.py).
#pragma once
#include <vector>

#include "rematkit/ir/params.hpp"
#include "rematkit/ir/primitive.hpp"

namespace rematkit {

Type conv_general_dilated_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);
// reduce_window_sum, reduce_window_max, reduce_window_min.
Type reduce_window_result(Prim prim, const Params& params, const Type& operand, const SourceLocation& where);
Type select_and_gather_add_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);
Type select_and_scatter_add_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where);

}  // namespace rematkit
