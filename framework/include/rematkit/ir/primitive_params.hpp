// Typed params of the primitives: builders, for programs made in C++ (autodiff's JVP and transpose
// rules, Flax's modules, the sweep's models), and readers, for the rules; and the table's param
// schema applied to what a program wrote.
#pragma once
#include <optional>

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/ir/primitive.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

// --- builders: the params JAX prints for each primitive ---------------------------------------
// preferred_element_type: the result's dtype when it is not the operands' (bf16 operands, f32 result).
REMATKIT_CORE_EXPORT Params dot_general_params(const DotDims& dims,
                                               std::optional<DType> preferred_element_type = std::nullopt);
REMATKIT_CORE_EXPORT Params reduce_params(const std::vector<int64_t>& axes);  // reduce_sum, reduce_max
// psum over mesh axes, axis_index_groups=None.
REMATKIT_CORE_EXPORT Params psum_params(const std::vector<std::string>& axes);
REMATKIT_CORE_EXPORT Params broadcast_in_dim_params(const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
REMATKIT_CORE_EXPORT Params reshape_params(const Shape& new_sizes);
REMATKIT_CORE_EXPORT Params transpose_params(const std::vector<int64_t>& permutation);
REMATKIT_CORE_EXPORT Params integer_pow_params(int64_t y);
REMATKIT_CORE_EXPORT Params convert_element_type_params(DType new_dtype);
REMATKIT_CORE_EXPORT Params softmax_params(int64_t axis);
REMATKIT_CORE_EXPORT Params concatenate_params(int64_t dimension);
REMATKIT_CORE_EXPORT Params slice_params(const Shape& start_indices, const Shape& limit_indices,
                                         const std::vector<int64_t>& strides = {});  // empty: None
REMATKIT_CORE_EXPORT Params dynamic_slice_params(const Shape& slice_sizes);
REMATKIT_CORE_EXPORT Params pad_params(const std::vector<PaddingDim>& padding_config);
REMATKIT_CORE_EXPORT Params rev_params(const std::vector<int64_t>& dimensions);
REMATKIT_CORE_EXPORT Params cumsum_params(int64_t axis, bool reverse);
// gather's params as JAX prints them; fill_value nullopt: None. wrap_negative_indices is printed
// only when set.
REMATKIT_CORE_EXPORT Params gather_params(const IndexingDims& dims, const Shape& slice_sizes, IndexMode mode,
                                          std::optional<double> fill_value, bool wrap_negative_indices = false);
REMATKIT_CORE_EXPORT Params scatter_add_params(const IndexingDims& dims, IndexMode mode,
                                               bool wrap_negative_indices = false);
// conv_general_dilated's params as JAX prints them (precision=None).
REMATKIT_CORE_EXPORT Params conv_general_dilated_params(const ConvParams& conv,
                                                        std::optional<DType> preferred_element_type = std::nullopt);
// reduce_window_sum/max/min's window.
REMATKIT_CORE_EXPORT Params reduce_window_params(const WindowParams& window);
// select_prim is ge (the window's max) or le (its min); select_and_scatter_add keeps no dilations.
REMATKIT_CORE_EXPORT Params select_and_gather_add_params(Prim select_prim, const WindowParams& window);
REMATKIT_CORE_EXPORT Params select_and_scatter_add_params(Prim select_prim, const WindowParams& window);

// --- readers (bad-input errors at `where` name the param) --------------------------------------
REMATKIT_CORE_EXPORT DotDims dot_dims(const Params& params, const SourceLocation& where);
REMATKIT_CORE_EXPORT std::vector<PaddingDim> padding_config(const Params& params, const SourceLocation& where);
// A ((low, high), ...) param (conv_general_dilated's and the windows' padding).
REMATKIT_CORE_EXPORT std::vector<PadPair> padding_pairs(const Params& params, const std::string& key,
                                                        const SourceLocation& where);
// conv_general_dilated's dimension_numbers, ConvDimensionNumbers(lhs_spec=.., rhs_spec=.., out_spec=..).
REMATKIT_CORE_EXPORT ConvDims conv_dims(const Params& params, const SourceLocation& where);
// All of conv_general_dilated's params (the verifier has checked their kinds, not their values).
REMATKIT_CORE_EXPORT ConvParams conv_params(const Params& params, const SourceLocation& where);
// A window's params; select_and_scatter_add's, which has no dilations, with dilations of 1.
REMATKIT_CORE_EXPORT WindowParams window_params(const Params& params, const SourceLocation& where);
// select_and_gather_add's and select_and_scatter_add's select_prim: Prim::kGe or Prim::kLe.
REMATKIT_CORE_EXPORT Prim select_prim(const Params& params, const SourceLocation& where);
// gather's (GatherDimensionNumbers) or scatter-add's (ScatterDimensionNumbers) dimension_numbers.
REMATKIT_CORE_EXPORT IndexingDims indexing_dims(Prim prim, const Params& params, const SourceLocation& where);
// mode: GatherScatterMode.X or its value; a missing mode is FILL_OR_DROP, lax.gather's default.
REMATKIT_CORE_EXPORT IndexMode index_mode(const Params& params, const SourceLocation& where);
// gather's fill_value: a number, or nullopt for None (the dtype's default).
REMATKIT_CORE_EXPORT std::optional<double> fill_value(const Params& params, const SourceLocation& where);
// fft's fft_type: FftType.FFT ... IRFFT, or its value 0-3 (jax/_src/lax/fft.py).
REMATKIT_CORE_EXPORT FftKind fft_kind(const Params& params, const SourceLocation& where);
REMATKIT_CORE_EXPORT Params fft_params(FftKind kind, const Shape& fft_lengths);
REMATKIT_CORE_EXPORT DType dtype_param(const Params& params, const std::string& key, const SourceLocation& where);
// An optional dtype param: nullopt when absent or None (dot_general's preferred_element_type).
REMATKIT_CORE_EXPORT std::optional<DType> optional_dtype_param(const Params& params, const std::string& key,
                                                               const SourceLocation& where);
// round's rounding_method: RoundingMethod.TO_NEAREST_EVEN (1, what jnp.round prints) or AWAY_FROM_ZERO
// (0, lax.round's default, also when the param is missing).
REMATKIT_CORE_EXPORT bool rounds_to_nearest_even(const Params& params, const SourceLocation& where);

// --- the schema ---------------------------------------------------------------------------------
// Checks that every required param of `prim` is there and every param of its schema has the right
// kind (a bad-input error at `where` otherwise), so that rules read them without checking.
REMATKIT_CORE_EXPORT void check_params(Prim prim, const Params& params, const SourceLocation& where);
// `params` without the ones `prim`'s schema does not list, in their order (how a program written
// by a newer JAX, with params rematkit has no use for, is read).
REMATKIT_CORE_EXPORT Params schema_params(Prim prim, Params params);

}  // namespace rematkit
