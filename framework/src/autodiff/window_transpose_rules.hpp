// The transpose rules of the windowed primitives, each built as JAX builds it from other
// primitives (jax/_src/lax/convolution.py, jax/_src/lax/windowed_reductions.py).
#pragma once

#include "emitter.hpp"

namespace rematkit::autodiff {

// conv_general_dilated's cotangent for lhs given the output's `ct` and `rhs`; for rhs given `lhs`.
// `lhs_type` / `rhs_type`: the operand whose cotangent this is (copies: the graph's values move as
// equations are added). conv_transpose_rhs returns kNoValue, a zero cotangent, when ct is empty.
ValueId conv_transpose_lhs(Emitter& em, ValueId ct, ValueId rhs, const Params& params, const Type lhs_type,
                           const SourceLocation& where);
ValueId conv_transpose_rhs(Emitter& em, ValueId ct, ValueId lhs, const Params& params, const Type rhs_type,
                           const SourceLocation& where);
// reduce_window_sum's cotangent for an operand of shape `operand`.
ValueId reduce_window_sum_transpose(Emitter& em, ValueId ct, const Params& params, const Shape& operand,
                                    const SourceLocation& where);
// The tangents' cotangent of select_and_gather_add, and the source's of select_and_scatter_add;
// `operand` is their (non-linear) second operand.
ValueId select_and_gather_add_transpose(Emitter& em, ValueId ct, ValueId operand, const Params& params,
                                        const SourceLocation& where);
ValueId select_and_scatter_add_transpose(Emitter& em, ValueId ct, ValueId operand, const Params& params,
                                         const SourceLocation& where);

}  // namespace rematkit::autodiff
