// Typed params of the primitives: builders, for programs made in C++ (autodiff's JVP and transpose
// rules, Flax's modules, the sweep's models), and readers, for the rules; and the table's param
// schema applied to what a program wrote.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/params.hpp"
#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/primitive.hpp"
#include "rematkit/types.hpp"

namespace rematkit {

// --- builders: the params JAX prints for each primitive ---------------------------------------
Params dot_general_params(const DotDims& dims);
Params reduce_params(const std::vector<int64_t>& axes);  // reduce_sum, reduce_max
Params broadcast_in_dim_params(const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
Params reshape_params(const Shape& new_sizes);
Params transpose_params(const std::vector<int64_t>& permutation);
Params integer_pow_params(int64_t y);
Params convert_element_type_params(DType new_dtype);
Params softmax_params(int64_t axis);

// --- readers (bad-input errors at `where` name the param) --------------------------------------
DotDims dot_dims(const Params& params, const SourceLocation& where);
DType dtype_param(const Params& params, const std::string& key, const SourceLocation& where);

// --- the schema ---------------------------------------------------------------------------------
// Checks that every required param of `prim` is there and every param of its schema has the right
// kind (a bad-input error at `where` otherwise), so that rules read them without checking.
void check_params(Prim prim, const Params& params, const SourceLocation& where);
// `params` without the ones `prim`'s schema does not list, in their order (how a program written
// by a newer JAX, with params rematkit has no use for, is read).
Params schema_params(Prim prim, Params params);

}  // namespace rematkit
