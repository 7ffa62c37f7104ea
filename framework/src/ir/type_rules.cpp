// Type rules: what each primitive computes from its operand types and params, as lax.py's
// shape and dtype rules define it (jax/_src/lax/lax.py, jax/_src/lax/slicing.py,
// jax/_src/lax/control_flow/loops.py for cumsum); the windowed primitives' in window_type_rules.cpp.
#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "rematkit/ir/primitive.hpp"
#include "control_flow_types.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "collective_type_rules.hpp"
#include "window_type_rules.hpp"

namespace rematkit {
namespace {

// What the refusal of a complex operand lists.
constexpr const char* kComplexPrimitives =
    "add, sub, mul, div, neg, abs, exp, log, sin, cos, sqrt, square, integer_pow, eq, ne, dot_general, reduce_sum, "
    "cumsum, the primitives that move elements, real, imag, complex, conj and fft";

// The table's operand count.
void check_operand_count(Prim prim, const std::vector<Type>& in, const SourceLocation& where) {
  const PrimInfo& info = prim_info(prim);
  const int n = static_cast<int>(in.size());
  if (info.min_operands == info.max_operands && n != info.min_operands)
    fail_at(where, std::string(info.name) + " takes " + std::to_string(info.min_operands) + " operand(s), got " +
                       std::to_string(n));
  if (n < info.min_operands || (info.max_operands != kVariadic && n > info.max_operands))
    fail_at(where, std::string(info.name) + " takes at least " + std::to_string(info.min_operands) + " operands, got " +
                       std::to_string(n));
}

void expect_floating(Prim prim, const Type& t, const SourceLocation& where) {
  if (!is_floating(t.dtype))
    fail_at(where, std::string(prim_name(prim)) + " needs a floating operand, got " + t.str());
}

void expect_not_bool(Prim prim, const Type& t, const SourceLocation& where) {
  if (t.dtype == DType::kBool) fail_at(where, std::string(prim_name(prim)) + " does not take a bool operand");
}

void expect_integer(Prim prim, const Type& t, const SourceLocation& where) {
  if (!is_integer(t.dtype)) fail_at(where, std::string(prim_name(prim)) + " needs integer operands, got " + t.str());
}

void expect_bool_or_integer(Prim prim, const Type& t, const SourceLocation& where) {
  if (t.dtype != DType::kBool && !is_integer(t.dtype))
    fail_at(where, std::string(prim_name(prim)) + " needs bool or integer operands, got " + t.str());
}

// Axes must be distinct and within [0, rank).
void check_axes(Prim prim, const std::vector<int64_t>& axes, int rank, const SourceLocation& where) {
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    if (a < 0 || a >= rank || !seen.insert(a).second)
      fail_at(where, std::string(prim_name(prim)) + ": axis " + std::to_string(a) +
                         " is out of range or repeated for rank " + std::to_string(rank));
  }
}

// lax's broadcasting binary ops: same dtype, shapes equal, rank 0 or size-1 dims.
Type binary_result(Prim prim, const std::vector<Type>& in, const SourceLocation& where) {
  if (in[0].dtype != in[1].dtype)
    fail_at(where, std::string(prim_name(prim)) + " operands differ in dtype: " + types_str(in));
  auto shape = broadcast_shapes(in[0].shape, in[1].shape);
  if (!shape) fail_at(where, std::string(prim_name(prim)) + " operand shapes do not match: " + types_str(in));
  if (!is_comparison(prim) && in[0].dtype == DType::kBool)
    fail_at(where, std::string(prim_name(prim)) + " does not take bool operands");
  return Type{is_comparison(prim) ? DType::kBool : in[0].dtype, *shape, MemorySpace::kDevice};
}

// lax._dot_general_shape_rule: batch dims, then lhs's free dims, then rhs's.
// The bitwise ops: two operands of one bool or integer dtype (integer only for the shifts), shapes
// as lax broadcasts them.
Type bitwise_result(Prim prim, const std::vector<Type>& in, const SourceLocation& where, bool integer_only) {
  if (in[0].dtype != in[1].dtype)
    fail_at(where, std::string(prim_name(prim)) + " operands differ in dtype: " + types_str(in));
  if (integer_only) expect_integer(prim, in[0], where);
  else expect_bool_or_integer(prim, in[0], where);
  auto shape = broadcast_shapes(in[0].shape, in[1].shape);
  if (!shape) fail_at(where, std::string(prim_name(prim)) + " operand shapes do not match: " + types_str(in));
  return Type{in[0].dtype, *shape, MemorySpace::kDevice};
}

// lax.pow: a floating base; an exponent of the base's dtype or an integer one (lax._pow_dtype_rule).
Type pow_result(const std::vector<Type>& in, const SourceLocation& where) {
  expect_floating(Prim::kPow, in[0], where);
  if (in[1].dtype != in[0].dtype && !is_integer(in[1].dtype))
    fail_at(where, "pow's exponent must have the base's dtype or an integer dtype: " + types_str(in));
  auto shape = broadcast_shapes(in[0].shape, in[1].shape);
  if (!shape) fail_at(where, "pow operand shapes do not match: " + types_str(in));
  return Type{in[0].dtype, *shape, MemorySpace::kDevice};
}

// lax.clamp(min, x, max): one dtype; each bound rank 0 or the operand's shape.
Type clamp_result(const std::vector<Type>& in, const SourceLocation& where) {
  if (in[0].dtype != in[1].dtype || in[2].dtype != in[1].dtype)
    fail_at(where, "clamp operands differ in dtype: " + types_str(in));
  for (size_t bound : {size_t{0}, size_t{2}})
    if (!in[bound].shape.empty() && in[bound].shape != in[1].shape)
      fail_at(where, "clamp's bounds must be scalars or the operand's shape: " + types_str(in));
  return in[1];
}

// How lax._dot_general_dtype_rule ranks operand dtypes (XLA's HigherPrecisionType): max exponent,
// mantissa bits, width, signedness; the higher one is the product's dtype.
std::array<int, 4> precision_rank(DType dtype) {
  switch (dtype) {
    case DType::kC128: return {1024, 52, 128, 1};
    case DType::kC64: return {128, 23, 64, 1};
    case DType::kF64: return {1024, 52, 64, 1};
    case DType::kF32: return {128, 23, 32, 1};
    case DType::kBF16: return {128, 7, 16, 1};
    case DType::kF16: return {16, 10, 16, 1};
    case DType::kI64: return {-1, -1, 64, 1};
    case DType::kI32: return {-1, -1, 32, 1};
    case DType::kU32: return {-1, -1, 32, 0};
    case DType::kI8: return {-1, -1, 8, 1};
    case DType::kU8: return {-1, -1, 8, 0};
    case DType::kBool: case DType::kKeyFry: return {-1, -1, 1, 1};  // never multiplied (type rules refuse them)
  }
  return {};
}

Type dot_general_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const DotDims d = dot_dims(params, where);
  const Shape& l = in[0].shape;
  const Shape& r = in[1].shape;
  // Operands of different dtypes multiply in the higher one (an f32 cotangent times a bf16 weight
  // in the transpose of a mixed-precision product); two of one rank must be the same dtype.
  const std::array<int, 4> lhs_rank = precision_rank(in[0].dtype), rhs_rank = precision_rank(in[1].dtype);
  if ((lhs_rank == rhs_rank && in[0].dtype != in[1].dtype) || in[0].dtype == DType::kBool || in[1].dtype == DType::kBool ||
      is_floating(in[0].dtype) != is_floating(in[1].dtype) || is_complex(in[0].dtype) != is_complex(in[1].dtype))
    fail_at(where, "dot_general operands must share a numeric dtype: " + types_str(in));
  const DType product = lhs_rank >= rhs_rank ? in[0].dtype : in[1].dtype;
  if (d.lhs_contract.size() != d.rhs_contract.size() || d.lhs_batch.size() != d.rhs_batch.size())
    fail_at(where, "dot_general dimension_numbers pair lists of different lengths");
  std::vector<int64_t> lhs_used = d.lhs_contract, rhs_used = d.rhs_contract;
  lhs_used.insert(lhs_used.end(), d.lhs_batch.begin(), d.lhs_batch.end());
  rhs_used.insert(rhs_used.end(), d.rhs_batch.begin(), d.rhs_batch.end());
  check_axes(Prim::kDotGeneral, lhs_used, in[0].rank(), where);
  check_axes(Prim::kDotGeneral, rhs_used, in[1].rank(), where);
  auto check_pairs = [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* what) {
    for (size_t i = 0; i < a.size(); ++i)
      if (l[a[i]] != r[b[i]])
        fail_at(where, std::string("dot_general ") + what + " dimensions differ in size: lhs dim " +
                           std::to_string(a[i]) + " is " + std::to_string(l[a[i]]) + ", rhs dim " +
                           std::to_string(b[i]) + " is " + std::to_string(r[b[i]]));
  };
  check_pairs(d.lhs_contract, d.rhs_contract, "contracting");
  check_pairs(d.lhs_batch, d.rhs_batch, "batch");
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(l[b]);
  for (int64_t f : dot_free_dims(in[0].rank(), d.lhs_contract, d.lhs_batch)) out.push_back(l[f]);
  for (int64_t f : dot_free_dims(in[1].rank(), d.rhs_contract, d.rhs_batch)) out.push_back(r[f]);
  // lax._dot_general_dtype_rule: preferred_element_type names the result's dtype, of the operands' kind.
  const std::optional<DType> preferred = optional_dtype_param(params, "preferred_element_type", where);
  if (preferred && (is_floating(*preferred) != is_floating(product) || *preferred == DType::kBool))
    fail_at(where, "dot_general's preferred_element_type " + std::string(dtype_numpy_name(*preferred)) +
                       " is not of the operands' kind: " + types_str(in));
  if (preferred && !is_floating(product) && dtype_bytes(*preferred) < dtype_bytes(product))
    fail_at(where, "dot_general's preferred_element_type " + std::string(dtype_numpy_name(*preferred)) +
                       " is narrower than the operands' " + std::string(dtype_name(product)));
  return Type{preferred.value_or(product), out, MemorySpace::kDevice};
}

Type select_n_result(const std::vector<Type>& in, const SourceLocation& where) {
  if (in[0].dtype != DType::kBool && in[0].dtype != DType::kI32)
    fail_at(where, "select_n predicate must be bool or i32, got " + in[0].str());
  for (size_t i = 2; i < in.size(); ++i)
    if (in[i].dtype != in[1].dtype || in[i].shape != in[1].shape) fail_at(where, "select_n cases differ: " + types_str(in));
  if (!in[0].shape.empty() && in[0].shape != in[1].shape)
    fail_at(where, "select_n predicate shape does not match the cases: " + types_str(in));
  return in[1];
}

Type reduce_result(Prim prim, const Params& params, const Type& x, const SourceLocation& where) {
  expect_not_bool(prim, x, where);
  const auto axes = param_ints(params, "axes", where);
  check_axes(prim, axes, x.rank(), where);
  Type t = x;
  t.shape.clear();
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) t.shape.push_back(x.shape[i]);
  return t;
}

Type broadcast_in_dim_result(const Params& params, const Type& x, const SourceLocation& where) {
  const Shape shape = param_ints(params, "shape", where);
  const auto dims = param_ints(params, "broadcast_dimensions", where);
  if (static_cast<int>(dims.size()) != x.rank())
    fail_at(where, "broadcast_in_dim: broadcast_dimensions has " + std::to_string(dims.size()) +
                       " entries for an operand of rank " + std::to_string(x.rank()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size()) || (i && dims[i] <= dims[i - 1]))
      fail_at(where, "broadcast_in_dim: broadcast_dimensions must be increasing and within the output rank");
    if (x.shape[i] != 1 && x.shape[i] != shape[dims[i]])
      fail_at(where, "broadcast_in_dim: operand dim " + std::to_string(i) + " of size " + std::to_string(x.shape[i]) +
                         " cannot broadcast to " + std::to_string(shape[dims[i]]));
  }
  for (int64_t d : shape)
    if (d < 0) fail_at(where, "broadcast_in_dim: negative size in shape");
  return Type{x.dtype, shape, MemorySpace::kDevice};
}

Type reshape_result(const Params& params, const Type& x, const SourceLocation& where) {
  const Shape shape = param_ints(params, "new_sizes", where);
  for (int64_t d : shape)
    if (d < 0) fail_at(where, "reshape: negative size in new_sizes");
  if (num_elements(shape) != x.num_elements())
    fail_at(where, "reshape: cannot reshape " + x.str() + " to " + shape_str(shape));
  return Type{x.dtype, shape, MemorySpace::kDevice};
}

Type transpose_result(const Params& params, const Type& x, const SourceLocation& where) {
  const auto perm = param_ints(params, "permutation", where);
  if (static_cast<int>(perm.size()) != x.rank())
    fail_at(where, "transpose: permutation length does not match rank " + std::to_string(x.rank()));
  check_axes(Prim::kTranspose, perm, x.rank(), where);
  Type t = x;
  for (size_t i = 0; i < perm.size(); ++i) t.shape[i] = x.shape[perm[i]];
  return t;
}

Type squeeze_result(const Params& params, const Type& x, const SourceLocation& where) {
  const auto dims = param_ints(params, "dimensions", where);
  check_axes(Prim::kSqueeze, dims, x.rank(), where);
  Type t = x;
  t.shape.clear();
  for (int i = 0; i < x.rank(); ++i) {
    const bool squeezed = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (squeezed && x.shape[i] != 1)
      fail_at(where, "squeeze: dimension " + std::to_string(i) + " has size " + std::to_string(x.shape[i]));
    if (!squeezed) t.shape.push_back(x.shape[i]);
  }
  return t;
}

Type softmax_result(const Params& params, const Type& x, const SourceLocation& where) {
  expect_floating(Prim::kSoftmax, x, where);
  const int64_t axis = param_int(params, "axis", where);
  if (axis < -x.rank() || axis >= x.rank() || x.rank() == 0)
    fail_at(where, "softmax: axis " + std::to_string(axis) + " is out of range for " + x.str());
  return x;
}

// lax.iota: a numeric dtype, `dimension` within the shape.
Type iota_result(const Params& params, const SourceLocation& where) {
  const DType dtype = dtype_param(params, "dtype", where);
  if (dtype == DType::kBool) fail_at(where, "iota does not take dtype bool");
  const Shape shape = param_ints(params, "shape", where);
  for (int64_t d : shape)
    if (d < 0) fail_at(where, "iota: negative size in shape " + shape_str(shape));
  const int64_t dimension = param_int(params, "dimension", where);
  if (dimension < 0 || dimension >= static_cast<int64_t>(shape.size()))
    fail_at(where, "iota: dimension " + std::to_string(dimension) + " is out of range for shape " + shape_str(shape));
  return Type{dtype, shape, MemorySpace::kDevice};
}

// lax._concatenate_shape_rule: one dtype and rank; sizes agree except along `dimension`.
Type concatenate_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const int64_t dimension = param_int(params, "dimension", where);
  if (dimension < 0 || dimension >= in[0].rank())
    fail_at(where, "concatenate: dimension " + std::to_string(dimension) + " is out of range for " + types_str(in));
  Type t = in[0];
  t.shape[dimension] = 0;
  for (const Type& x : in) {
    if (x.dtype != in[0].dtype || x.rank() != in[0].rank())
      fail_at(where, "concatenate operands differ in dtype or rank: " + types_str(in));
    for (int d = 0; d < x.rank(); ++d)
      if (d != dimension && x.shape[d] != in[0].shape[d])
        fail_at(where, "concatenate operands differ in a dimension other than " + std::to_string(dimension) + ": " +
                           types_str(in));
    t.shape[dimension] += x.shape[dimension];
  }
  return t;
}

// slicing._slice_shape_rule: 0 <= start <= limit <= size; positive strides (None: all 1).
Type slice_result(const Params& params, const Type& x, const SourceLocation& where) {
  const Shape start = param_ints(params, "start_indices", where);
  const Shape limit = param_ints(params, "limit_indices", where);
  Shape strides = param_ints_or_none(params, "strides", where);
  if (strides.empty()) strides.assign(start.size(), 1);
  const size_t rank = static_cast<size_t>(x.rank());
  if (start.size() != rank || limit.size() != rank || strides.size() != rank)
    fail_at(where, "slice: start_indices, limit_indices and strides need " + std::to_string(rank) + " entries for " +
                       x.str());
  Type t = x;
  for (size_t d = 0; d < rank; ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > x.shape[d] || strides[d] < 1)
      fail_at(where, "slice: dim " + std::to_string(d) + " needs 0 <= start <= limit <= " + std::to_string(x.shape[d]) +
                         " and a positive stride, got start " + std::to_string(start[d]) + ", limit " +
                         std::to_string(limit[d]) + ", stride " + std::to_string(strides[d]));
    const int64_t extent = limit[d] - start[d];
    t.shape[d] = extent == 0 ? 0 : (extent - 1) / strides[d] + 1;
  }
  return t;
}

// The start indices of dynamic_slice and dynamic_update_slice: one integer scalar per operand dim.
void check_start_indices(Prim prim, const std::vector<Type>& in, size_t first, int rank, const SourceLocation& where) {
  if (static_cast<int>(in.size() - first) != rank)
    fail_at(where, std::string(prim_name(prim)) + " needs " + std::to_string(rank) + " start indices, got " +
                       std::to_string(in.size() - first) + ": " + types_str(in));
  for (size_t i = first; i < in.size(); ++i)
    if (!is_integer(in[i].dtype) || in[i].rank() != 0)
      fail_at(where, std::string(prim_name(prim)) + "'s start indices must be integer scalars: " + types_str(in));
}

// slicing._dynamic_slice_shape_rule: 0 <= slice_sizes <= the operand's sizes.
Type dynamic_slice_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const Shape sizes = param_ints(params, "slice_sizes", where);
  check_start_indices(Prim::kDynamicSlice, in, 1, in[0].rank(), where);
  if (static_cast<int>(sizes.size()) != in[0].rank())
    fail_at(where, "dynamic_slice: slice_sizes " + shape_str(sizes) + " does not match the rank of " + in[0].str());
  for (int d = 0; d < in[0].rank(); ++d)
    if (sizes[d] < 0 || sizes[d] > in[0].shape[d])
      fail_at(where, "dynamic_slice: slice_sizes " + shape_str(sizes) + " must lie within " + in[0].str());
  return Type{in[0].dtype, sizes, MemorySpace::kDevice};
}

// slicing._dynamic_update_slice_shape_rule: an update of the operand's dtype and rank, no larger.
Type dynamic_update_slice_result(const std::vector<Type>& in, const SourceLocation& where) {
  const Type& x = in[0];
  const Type& update = in[1];
  if (update.dtype != x.dtype || update.rank() != x.rank())
    fail_at(where, "dynamic_update_slice: the update must have the operand's dtype and rank: " + types_str(in));
  for (int d = 0; d < x.rank(); ++d)
    if (update.shape[d] > x.shape[d])
      fail_at(where, "dynamic_update_slice: the update is larger than the operand: " + types_str(in));
  check_start_indices(Prim::kDynamicUpdateSlice, in, 2, x.rank(), where);
  return x;
}

// lax._pad_shape_rule: lo + hi + dilated size per dim, non-negative interior and result.
Type pad_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const Type& x = in[0];
  if (in[1].rank() != 0 || in[1].dtype != x.dtype)
    fail_at(where, "pad's padding value must be a scalar of the operand's dtype: " + types_str(in));
  const std::vector<PaddingDim> config = padding_config(params, where);
  if (static_cast<int>(config.size()) != x.rank())
    fail_at(where, "pad: padding_config has " + std::to_string(config.size()) + " entries for " + x.str());
  Type t = x;
  for (int d = 0; d < x.rank(); ++d) {
    const PaddingDim& p = config[d];
    const int64_t dilated = x.shape[d] == 0 ? 0 : x.shape[d] + (x.shape[d] - 1) * p.interior;
    t.shape[d] = p.low + p.high + dilated;
    if (p.interior < 0 || t.shape[d] < 0)
      fail_at(where, "pad: dim " + std::to_string(d) + " has negative interior padding or a negative result size");
  }
  return t;
}

// lax._argminmax_shape_rule: one axis, not empty; the result has the integer index_dtype.
Type argminmax_result(Prim prim, const Params& params, const Type& x, const SourceLocation& where) {
  expect_not_bool(prim, x, where);
  const auto axes = param_ints(params, "axes", where);
  if (axes.size() != 1) fail_at(where, std::string(prim_name(prim)) + " takes exactly one axis");
  check_axes(prim, axes, x.rank(), where);
  if (x.shape[axes[0]] < 1) fail_at(where, std::string(prim_name(prim)) + " needs a non-empty axis, got " + x.str());
  const DType index_dtype = dtype_param(params, "index_dtype", where);
  if (!is_integer(index_dtype)) fail_at(where, std::string(prim_name(prim)) + ": index_dtype must be an integer dtype");
  Type t = x;
  t.dtype = index_dtype;
  t.shape.erase(t.shape.begin() + axes[0]);
  return t;
}

// loops.py's cumulative reductions: cumsum, cumprod, cummax, cummin (numbers), cumlogsumexp (floats).
Type cumulative_result(Prim prim, const Params& params, const Type& x, const SourceLocation& where) {
  if (prim == Prim::kCumlogsumexp) expect_floating(prim, x, where);
  expect_not_bool(prim, x, where);
  const int64_t axis = param_int(params, "axis", where);
  if (axis < 0 || axis >= x.rank())
    fail_at(where, std::string(prim_name(prim)) + ": axis " + std::to_string(axis) + " is out of range for " + x.str());
  return x;
}

// lax._reduce_precision_shape_rule: at least one exponent bit, no negative mantissa bits.
Type reduce_precision_result(const Params& params, const Type& x, const SourceLocation& where) {
  expect_floating(Prim::kReducePrecision, x, where);
  if (param_int(params, "exponent_bits", where) < 1 || param_int(params, "mantissa_bits", where) < 0)
    fail_at(where, "reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0");
  return x;
}

// The checks gather and scatter-add share (slicing._gather_shape_rule, _scatter_shape_rule):
// integer indices whose last dim is the index vector, dims within range and sorted where XLA
// wants them, and no vmap batching dims, which rematkit does not implement.
void check_indexing(Prim prim, const IndexingDims& d, const Type& operand, const Type& indices, const SourceLocation& where) {
  const std::string name(prim_name(prim));
  if (!d.operand_batching_dims.empty() || !d.indices_batching_dims.empty())
    fail_at(where, name + " with operand_batching_dims (a batched form vmap makes) is not supported");
  if (!is_integer(indices.dtype) || indices.rank() < 1)
    fail_at(where, name + "'s indices must be integers with the index vector as their last dim, got " + indices.str());
  if (indices.shape.back() != static_cast<int64_t>(d.index_map.size()))
    fail_at(where, name + ": the index vector has " + std::to_string(indices.shape.back()) + " component(s) but " +
                       std::to_string(d.index_map.size()) + " operand dim(s) are indexed");
  check_axes(prim, d.index_map, operand.rank(), where);
  check_axes(prim, d.collapsed_dims, operand.rank(), where);
  if (!std::is_sorted(d.window_dims.begin(), d.window_dims.end()) ||
      !std::is_sorted(d.collapsed_dims.begin(), d.collapsed_dims.end()))
    fail_at(where, name + ": window and collapsed dims must be sorted");
  if (static_cast<int>(d.window_dims.size() + d.collapsed_dims.size()) != operand.rank())
    fail_at(where, name + ": " + std::to_string(d.window_dims.size()) + " window dim(s) and " +
                       std::to_string(d.collapsed_dims.size()) + " collapsed dim(s) do not cover the operand " +
                       operand.str());
}

// The operand dims a window keeps (those not collapsed), in order.
std::vector<int64_t> kept_dims(const IndexingDims& d, int rank) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < rank; ++i)
    if (std::find(d.collapsed_dims.begin(), d.collapsed_dims.end(), i) == d.collapsed_dims.end()) kept.push_back(i);
  return kept;
}

// The output: the indices' batch dims, with the window's kept dims at window_dims.
Type gather_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const Type& operand = in[0];
  const Type& indices = in[1];
  const IndexingDims d = indexing_dims(Prim::kGather, params, where);
  check_indexing(Prim::kGather, d, operand, indices, where);
  index_mode(params, where);
  fill_value(params, where);
  const Shape sizes = param_ints(params, "slice_sizes", where);
  if (static_cast<int>(sizes.size()) != operand.rank())
    fail_at(where, "gather: slice_sizes " + shape_str(sizes) + " does not match the rank of " + operand.str());
  for (int i = 0; i < operand.rank(); ++i)
    if (sizes[i] < 0 || sizes[i] > operand.shape[i])
      fail_at(where, "gather: slice_sizes " + shape_str(sizes) + " must lie within " + operand.str());
  for (int64_t c : d.collapsed_dims)
    if (sizes[c] != 1) fail_at(where, "gather: collapsed dim " + std::to_string(c) + " must have slice size 1");
  const int out_rank = indices.rank() - 1 + static_cast<int>(d.window_dims.size());
  check_axes(Prim::kGather, d.window_dims, out_rank, where);
  const std::vector<int64_t> kept = kept_dims(d, operand.rank());
  Type t{operand.dtype, Shape(static_cast<size_t>(out_rank)), MemorySpace::kDevice};
  size_t window = 0, batch = 0;
  for (int i = 0; i < out_rank; ++i) {
    const bool is_window = window < d.window_dims.size() && d.window_dims[window] == i;
    t.shape[i] = is_window ? sizes[kept[window++]] : indices.shape[batch++];
  }
  return t;
}

// The updates: the indices' batch dims, with windows at update_window_dims no larger than the
// operand's kept dims; the result is the operand's type.
Type scatter_add_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const Type& operand = in[0];
  const Type& indices = in[1];
  const Type& updates = in[2];
  const IndexingDims d = indexing_dims(Prim::kScatterAdd, params, where);
  check_indexing(Prim::kScatterAdd, d, operand, indices, where);
  index_mode(params, where);
  expect_not_bool(Prim::kScatterAdd, operand, where);
  if (updates.dtype != operand.dtype) fail_at(where, "scatter-add's updates must have the operand's dtype: " + types_str(in));
  if (updates.rank() != indices.rank() - 1 + static_cast<int>(d.window_dims.size()))
    fail_at(where, "scatter-add: the updates' rank does not fit the indices and window dims: " + types_str(in));
  check_axes(Prim::kScatterAdd, d.window_dims, updates.rank(), where);
  const std::vector<int64_t> kept = kept_dims(d, operand.rank());
  size_t window = 0, batch = 0;
  for (int i = 0; i < updates.rank(); ++i) {
    const bool is_window = window < d.window_dims.size() && d.window_dims[window] == i;
    const bool fits = is_window ? updates.shape[i] <= operand.shape[kept[window++]] : updates.shape[i] == indices.shape[batch++];
    if (!fits) fail_at(where, "scatter-add: updates dim " + std::to_string(i) + " does not fit: " + types_str(in));
  }
  return operand;
}

}  // namespace

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  if (a == b) return a;
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.size() != b.size()) return std::nullopt;
  Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || b[i] == 1) out[i] = a[i];
    else if (a[i] == 1) out[i] = b[i];
    else return std::nullopt;
  }
  return out;
}

// A PRNG key is not a number: only the random primitives and those that move elements take one
// (k1, k2 = split(k) prints slice and squeeze of key<fry>[2]).
bool takes_keys(Prim prim) {
  if (prim_family(prim) == PrimFamily::kRandom || prim_family(prim) == PrimFamily::kLayout || is_control_flow(prim))
    return true;
  for (Prim mover : {Prim::kSelectN, Prim::kCopy, Prim::kOptimizationBarrier, Prim::kName, Prim::kStopGradient,
                     Prim::kReshape, Prim::kSqueeze, Prim::kTranspose, Prim::kBroadcastInDim})
    if (prim == mover) return true;
  return false;
}

// The primitives that take complex operands here: those lax defines on complex numbers that the
// reference math computes on them (complex_kernels.cpp). Others refuse c64/c128 in one line.
bool takes_complex(Prim prim) {
  static constexpr Prim kTakers[] = {
      Prim::kAdd, Prim::kSub, Prim::kMul, Prim::kDiv, Prim::kAddAny, Prim::kEq, Prim::kNe, Prim::kNeg, Prim::kAbs,
      Prim::kExp, Prim::kLog, Prim::kSin, Prim::kCos, Prim::kSqrt, Prim::kSquare, Prim::kIntegerPow,
      Prim::kStopGradient, Prim::kName, Prim::kConvertElementType, Prim::kSelectN, Prim::kDotGeneral,
      Prim::kReduceSum, Prim::kBroadcastInDim, Prim::kReshape, Prim::kTranspose, Prim::kSqueeze, Prim::kConcatenate,
      Prim::kSlice, Prim::kPad, Prim::kRev, Prim::kCopy, Prim::kOptimizationBarrier, Prim::kDynamicSlice,
      Prim::kDynamicUpdateSlice, Prim::kCumsum, Prim::kSplit, Prim::kGather, Prim::kScatterAdd, Prim::kDebugCallback,
      Prim::kPureCallback, Prim::kIoCallback};
  if (prim_family(prim) == PrimFamily::kComplexPart || prim_family(prim) == PrimFamily::kFourier ||
      prim_family(prim) == PrimFamily::kSharding || is_collective(prim) || is_control_flow(prim))
    return true;
  return std::find(std::begin(kTakers), std::end(kTakers), prim) != std::end(kTakers);
}

// lax.py's real, imag, complex and conj: real_p and imag_p take complex (_complex_basetype gives
// the part dtype); complex_p takes two f32 or f64 of one dtype; conj_p takes f32, f64 or complex
// and gives complex (_complex_dtype).
Type complex_part_result(Prim prim, const std::vector<Type>& in, const SourceLocation& where) {
  const std::string name(prim_name(prim));
  if (prim == Prim::kReal || prim == Prim::kImag) {
    if (!is_complex(in[0].dtype)) fail_at(where, name + " needs a complex operand (c64 or c128), got " + in[0].str());
    return Type{complex_part_dtype(in[0].dtype), in[0].shape, MemorySpace::kDevice};
  }
  const std::optional<DType> made = is_complex(in[0].dtype) ? in[0].dtype : complex_dtype_of(in[0].dtype);
  if (prim == Prim::kConj) {
    if (!made) fail_at(where, "conj needs an f32, f64 or complex operand, got " + in[0].str());
    return Type{*made, in[0].shape, MemorySpace::kDevice};
  }
  if (in[0].dtype != in[1].dtype || is_complex(in[0].dtype) || !made)
    fail_at(where, "complex needs two operands of one dtype, f32 or f64: " + types_str(in));
  auto shape = broadcast_shapes(in[0].shape, in[1].shape);
  if (!shape) fail_at(where, "complex operand shapes do not match: " + types_str(in));
  return Type{*made, *shape, MemorySpace::kDevice};
}

// fft.py's fft_abstract_eval, over the last L = len(fft_lengths) dims: FFT and IFFT keep a complex
// operand's type; RFFT takes f32 or f64 and halves the last length (n // 2 + 1, complex); IRFFT
// takes complex and gives the real lengths (its operand's last dim is not checked, as in JAX).
Type fft_result(const Params& params, const Type& x, const SourceLocation& where) {
  const FftKind kind = fft_kind(params, where);
  const Shape lengths = param_ints(params, "fft_lengths", where);
  const size_t rank = x.shape.size(), n = lengths.size();
  if (n == 0 || n > 3 || n > rank)
    fail_at(where, "fft: fft_lengths " + shape_str(lengths) + " must name 1 to 3 of the operand's last dims, for " + x.str());
  for (int64_t d : lengths)
    if (d < 1) fail_at(where, "fft: fft_lengths " + shape_str(lengths) + " must be positive");
  const size_t checked = kind == FftKind::kIrfft ? n - 1 : n;
  for (size_t i = 0; i < checked; ++i)
    if (x.shape[rank - n + i] != lengths[i])
      fail_at(where, "fft: the operand's last dims " + x.str() + " must be fft_lengths " + shape_str(lengths));
  Type t = x;
  if (kind == FftKind::kRfft) {
    const std::optional<DType> made = complex_dtype_of(x.dtype);
    if (!made) fail_at(where, "fft: an RFFT needs an f32 or f64 operand, got " + x.str());
    t.dtype = *made;
    t.shape.back() = lengths.back() / 2 + 1;
    return t;
  }
  if (!is_complex(x.dtype)) fail_at(where, "fft: an FFT, IFFT or IRFFT needs a complex operand, got " + x.str());
  if (kind == FftKind::kIrfft) {
    t.dtype = complex_part_dtype(x.dtype);
    t.shape.back() = lengths.back();
  }
  return t;
}

// jax/_src/random/prng.py: the impl must be threefry's ("fry"), the one rematkit implements.
void expect_threefry(Prim prim, const Params& params, const SourceLocation& where) {
  const std::string impl = param_name(params, "impl", where);
  if (impl != "fry")
    fail_at(where, std::string(prim_name(prim)) + ": PRNG impl '" + impl + "' is not supported (rematkit implements threefry keys, impl=fry)");
}

void expect_key(Prim prim, const Type& t, const SourceLocation& where) {
  if (t.dtype != DType::kKeyFry) fail_at(where, std::string(prim_name(prim)) + " needs a key<fry> operand, got " + t.str());
}

void expect_u32(Prim prim, const Type& t, const SourceLocation& where) {
  if (t.dtype != DType::kU32) fail_at(where, std::string(prim_name(prim)) + " needs u32 operands, got " + t.str());
}

Shape concat_shapes(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// prng.py's abstract evaluation rules; threefry2x32.py's for the hash.
Type random_result(Prim prim, const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  if (prim == Prim::kRandomSeed) {  // an integer seed of any shape: one key per element
    expect_threefry(prim, params, where);
    if (!is_integer(in[0].dtype)) fail_at(where, "random_seed needs an integer seed, got " + in[0].str());
    return Type{DType::kKeyFry, in[0].shape, MemorySpace::kDevice};
  }
  if (prim == Prim::kRandomWrap) {  // u32[..., 2] -> key<fry>[...]
    expect_threefry(prim, params, where);
    if (in[0].dtype != DType::kU32 || in[0].rank() < 1 || in[0].shape.back() != 2)
      fail_at(where, "random_wrap needs u32 key data whose last dim is 2 (a threefry key's two words), got " + in[0].str());
    return Type{DType::kKeyFry, Shape(in[0].shape.begin(), in[0].shape.end() - 1), MemorySpace::kDevice};
  }
  if (prim == Prim::kThreefry2x32) {
    Shape shape;
    for (const Type& t : in) {
      expect_u32(prim, t, where);
      auto s = broadcast_shapes(shape, t.shape);
      if (!s) fail_at(where, "threefry2x32 operand shapes do not broadcast: " + types_str(in));
      shape = *s;
    }
    const int64_t output = params.find("output") ? param_int(params, "output", where) : 0;
    if (output != 0 && output != 1) fail_at(where, "threefry2x32: output must be 0 or 1");
    return Type{DType::kU32, shape, MemorySpace::kDevice};
  }
  expect_key(prim, in[0], where);  // the others take keys
  if (prim == Prim::kRandomUnwrap) return Type{DType::kU32, concat_shapes(in[0].shape, {2}), MemorySpace::kDevice};
  if (prim == Prim::kRandomSplit)
    return Type{DType::kKeyFry, concat_shapes(in[0].shape, param_ints(params, "shape", where)), MemorySpace::kDevice};
  if (prim == Prim::kRandomFoldIn) {
    expect_u32(prim, in[1], where);
    auto shape = broadcast_shapes(in[0].shape, in[1].shape);
    if (!shape) fail_at(where, "random_fold_in's keys and data do not broadcast: " + types_str(in));
    return Type{DType::kKeyFry, *shape, MemorySpace::kDevice};
  }
  if (prim == Prim::kRandomBits) {
    const int64_t width = param_int(params, "bit_width", where);
    if (width != 8 && width != 32)
      fail_at(where, "random_bits: bit_width=" + std::to_string(width) + " needs u" + std::to_string(width) +
                         ", which rematkit does not support (8 and 32 are)");
    return Type{width == 8 ? DType::kU8 : DType::kU32, concat_shapes(in[0].shape, param_ints(params, "shape", where)),
                MemorySpace::kDevice};
  }
  return in[0];  // random_clone
}

// lax._split_shape_rule: sizes add up to the axis's size; output `output` has its size there.
Type split_result(const Params& params, const Type& x, const SourceLocation& where) {
  const auto sizes = param_ints(params, "sizes", where);
  const int64_t axis = param_int(params, "axis", where);
  const int64_t output = params.find("output") ? param_int(params, "output", where) : 0;
  if (axis < 0 || axis >= x.rank()) fail_at(where, "split: axis " + std::to_string(axis) + " is out of range for " + x.str());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail_at(where, "split: sizes must not be negative");
    total += s;
  }
  if (total != x.shape[axis])
    fail_at(where, "split: sizes add up to " + std::to_string(total) + ", not axis " + std::to_string(axis) + "'s " +
                       std::to_string(x.shape[axis]) + " in " + x.str());
  if (output < 0 || output >= static_cast<int64_t>(sizes.size()))
    fail_at(where, "split: output " + std::to_string(output) + " is not one of its " + std::to_string(sizes.size()));
  Type t = x;
  t.shape[axis] = sizes[output];
  return t;
}

// lax._sort_abstract_eval: operands of one shape; output `output` is operand `output` sorted.
Type sort_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const int64_t dimension = param_int(params, "dimension", where);
  const int64_t num_keys = param_int(params, "num_keys", where);
  const int64_t output = params.find("output") ? param_int(params, "output", where) : 0;
  for (const Type& t : in)
    if (t.shape != in[0].shape) fail_at(where, "sort's operands must have one shape: " + types_str(in));
  if (dimension < 0 || dimension >= in[0].rank())
    fail_at(where, "sort: dimension " + std::to_string(dimension) + " is out of range for " + in[0].str());
  if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size()))
    fail_at(where, "sort: num_keys must be between 1 and the number of operands, not " + std::to_string(num_keys));
  for (int64_t k = 0; k < num_keys; ++k) expect_not_bool(Prim::kSort, in[static_cast<size_t>(k)], where);
  if (output < 0 || output >= static_cast<int64_t>(in.size()))
    fail_at(where, "sort: output " + std::to_string(output) + " is not one of its " + std::to_string(in.size()));
  return in[static_cast<size_t>(output)];
}

// callback.py, pure_callback_abstract_eval and io_callback_abstract_eval: the result_avals given,
// read as ((dtype, (dims...)), ...) (parser.cpp turns JAX's ShapedArray reprs into that).
static std::vector<Type> host_call_results(const Params& params, const SourceLocation& where) {
  std::vector<Type> out;
  for (const ParamValue& aval : params.find("result_avals")->items) {
    const bool pair = aval.kind == ParamValue::Kind::kTuple && aval.items.size() == 2;
    const std::optional<DType> dtype = pair ? parse_dtype(aval.items[0].text) : std::nullopt;
    if (!dtype) fail_at(where, "result_avals: expected ShapedArray(DTYPE[DIMS]) or (DTYPE, (DIMS)), got " + aval.str());
    out.push_back(Type{*dtype, ints_of(aval.items[1], "result_avals", where), MemorySpace::kDevice});
  }
  return out;
}

std::vector<Type> infer_types(Prim prim, const Params& params, const std::vector<Type>& in,
                              const SourceLocation& where) {
  if (has_body(prim) || is_mapped_call(prim))
    fail_at(where, std::string(prim_name(prim)) + "'s types come from its sub-program (build it with ProgramBuilder::call)");
  check_operand_count(prim, in, where);
  check_params(prim, params, where);
  if (!takes_keys(prim))
    for (const Type& t : in)
      if (t.dtype == DType::kKeyFry)
        fail_at(where, std::string(prim_name(prim)) + " does not take a PRNG key (" + t.str() +
                           "): a key is not a number; random_bits or random_unwrap give numbers from it");
  if (!takes_complex(prim))
    for (const Type& t : in)
      if (is_complex(t.dtype))
        fail_at(where, std::string(prim_name(prim)) + " of a complex operand (" + t.str() +
                           ") is not supported: rematkit computes complex numbers through " + kComplexPrimitives);
  switch (prim) {
    case Prim::kAdd: case Prim::kSub: case Prim::kMul: case Prim::kDiv: case Prim::kMax: case Prim::kMin:
    case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq: case Prim::kNe:
    case Prim::kAddAny: case Prim::kRem:
      return {binary_result(prim, in, where)};
    case Prim::kAtan2:
      expect_floating(prim, in[0], where);
      return {binary_result(prim, in, where)};
    case Prim::kPow: return {pow_result(in, where)};
    case Prim::kAnd: case Prim::kOr: case Prim::kXor: return {bitwise_result(prim, in, where, false)};
    case Prim::kShiftLeft: case Prim::kShiftRightLogical: case Prim::kShiftRightArithmetic:
      return {bitwise_result(prim, in, where, true)};
    case Prim::kClamp: return {clamp_result(in, where)};
    case Prim::kAbs:
      if (is_complex(in[0].dtype)) return {Type{complex_part_dtype(in[0].dtype), in[0].shape, MemorySpace::kDevice}};
      [[fallthrough]];
    case Prim::kNeg: case Prim::kSign:
      expect_not_bool(prim, in[0], where);
      return {in[0]};
    case Prim::kNot:
      expect_bool_or_integer(prim, in[0], where);
      return {in[0]};
    case Prim::kRound:
      rounds_to_nearest_even(params, where);
      [[fallthrough]];
    case Prim::kFloor: case Prim::kCeil: case Prim::kExp2: case Prim::kExpm1: case Prim::kLog1p: case Prim::kTan:
    case Prim::kErf: case Prim::kErfc: case Prim::kErfInv:
      expect_floating(prim, in[0], where);
      return {in[0]};
    case Prim::kIsFinite: {
      expect_floating(prim, in[0], where);
      Type t = in[0];
      t.dtype = DType::kBool;
      return {t};
    }
    case Prim::kExp: case Prim::kLog: case Prim::kSin: case Prim::kCos: case Prim::kTanh: case Prim::kLogistic:
    case Prim::kSqrt: case Prim::kRsqrt: case Prim::kSquare: case Prim::kRelu: case Prim::kIntegerPow:
      if (!is_complex(in[0].dtype)) expect_floating(prim, in[0], where);  // takes_complex has said which take c64
      return {in[0]};
    case Prim::kStopGradient: case Prim::kName: return {in[0]};
    case Prim::kConvertElementType: {
      Type t = in[0];
      t.dtype = dtype_param(params, "new_dtype", where);
      return {t};
    }
    case Prim::kSelectN: return {select_n_result(in, where)};
    case Prim::kDotGeneral: return {dot_general_result(params, in, where)};
    case Prim::kReduceSum: case Prim::kReduceMax: case Prim::kReduceProd:
      return {reduce_result(prim, params, in[0], where)};
    case Prim::kBroadcastInDim: return {broadcast_in_dim_result(params, in[0], where)};
    case Prim::kReshape: return {reshape_result(params, in[0], where)};
    case Prim::kTranspose: return {transpose_result(params, in[0], where)};
    case Prim::kSqueeze: return {squeeze_result(params, in[0], where)};
    case Prim::kSoftmax: return {softmax_result(params, in[0], where)};
    case Prim::kReduceMin: return {reduce_result(prim, params, in[0], where)};
    case Prim::kArgMax: case Prim::kArgMin: return {argminmax_result(prim, params, in[0], where)};
    case Prim::kCumsum: case Prim::kCumprod: case Prim::kCummax: case Prim::kCummin: case Prim::kCumlogsumexp:
      return {cumulative_result(prim, params, in[0], where)};
    case Prim::kIota: return {iota_result(params, where)};
    case Prim::kConcatenate: return {concatenate_result(params, in, where)};
    case Prim::kSlice: return {slice_result(params, in[0], where)};
    case Prim::kSplit: return {split_result(params, in[0], where)};
    case Prim::kSort: return {sort_result(params, in, where)};
    case Prim::kDynamicSlice: return {dynamic_slice_result(params, in, where)};
    case Prim::kDynamicUpdateSlice: return {dynamic_update_slice_result(in, where)};
    case Prim::kPad: return {pad_result(params, in, where)};
    case Prim::kRev:
      check_axes(prim, param_ints(params, "dimensions", where), in[0].rank(), where);
      return {in[0]};
    case Prim::kCopy: case Prim::kOptimizationBarrier: return {in[0]};
    case Prim::kBitcastConvertType: {  // lax._bitcast_convert_type_shape_rule for dtypes of one size
      Type t = in[0];
      t.dtype = dtype_param(params, "new_dtype", where);
      if (dtype_bytes(t.dtype) != dtype_bytes(in[0].dtype))
        fail_at(where, "bitcast_convert_type from " + std::string(dtype_name(in[0].dtype)) + " to " +
                           std::string(dtype_name(t.dtype)) + " changes the element size, which is not supported");
      return {t};
    }
    case Prim::kReducePrecision: return {reduce_precision_result(params, in[0], where)};
    case Prim::kGather: return {gather_result(params, in, where)};
    case Prim::kScatterAdd: return {scatter_add_result(params, in, where)};
    case Prim::kConvGeneralDilated: return {conv_general_dilated_result(params, in, where)};
    case Prim::kReduceWindowSum: case Prim::kReduceWindowMax: case Prim::kReduceWindowMin:
      return {reduce_window_result(prim, params, in[0], where)};
    case Prim::kSelectAndGatherAdd: return {select_and_gather_add_result(params, in, where)};
    case Prim::kSelectAndScatterAdd: return {select_and_scatter_add_result(params, in, where)};
    case Prim::kRandomSeed: case Prim::kRandomWrap: case Prim::kRandomUnwrap: case Prim::kRandomSplit:
    case Prim::kRandomFoldIn: case Prim::kRandomBits: case Prim::kRandomClone: case Prim::kThreefry2x32:
      return {random_result(prim, params, in, where)};
    case Prim::kScan: return ir::scan_result(params, in, where);
    case Prim::kCond: return ir::cond_result(params, in, where);
    case Prim::kWhile: return ir::while_result(params, in, where);
    case Prim::kDebugCallback: return {};  // debugging.py, debug_callback_abstract_eval: no outputs
    case Prim::kPureCallback: case Prim::kIoCallback: return host_call_results(params, where);
    case Prim::kReal: case Prim::kImag: case Prim::kComplex: case Prim::kConj:
      return {complex_part_result(prim, in, where)};
    case Prim::kFft: return {fft_result(params, in[0], where)};
    case Prim::kShardingConstraint: case Prim::kReshard: return {in[0]};  // pjit.py: the value's aval
    case Prim::kShardMapIn: case Prim::kShardMapOut: case Prim::kPsum: case Prim::kPmax: case Prim::kPmin:
    case Prim::kAllGather: case Prim::kReduceScatter: case Prim::kPpermute: case Prim::kAllToAll:
    case Prim::kAxisIndex: case Prim::kPbroadcast: case Prim::kPvary:
      return {collective_result(prim, params, in, where)};
    case Prim::kPjit: case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall:
    case Prim::kShardMap: case Prim::kXlaPmap:
      break;  // typed by their body (verifier.cpp)
  }
  internal_error("no type rule for " + std::string(prim_name(prim)));
}

}  // namespace rematkit
