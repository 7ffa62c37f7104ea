// Shape rules of the windowed primitives, with JAX's checks and, where JAX has one, its message:
// jax/_src/lax/convolution.py (_conv_general_dilated_shape_rule, conv_shape_tuple) and
// jax/_src/lax/windowed_reductions.py (_common_reduce_window_shape_rule, reduce_window_shape_tuple).
#include "window_type_rules.hpp"

#include <algorithm>
#include <string>

#include "rematkit/ir/primitive_params.hpp"

namespace rematkit {
namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string pairs_str(const std::vector<PadPair>& pairs) {
  std::string s = "(";
  for (size_t i = 0; i < pairs.size(); ++i)
    s += (i ? ", (" : "(") + std::to_string(pairs[i].low) + ", " + std::to_string(pairs[i].high) + ")";
  return s + (pairs.size() == 1 ? ",)" : ")");
}

// lax._check_shapelike: every element positive (window sizes, strides, dilations).
void expect_positive(std::string_view prim, const char* what, const std::vector<int64_t>& values,
                     const SourceLocation& where) {
  for (int64_t v : values)
    if (v < 1)
      fail_at(where, std::string(prim) + " " + what + " must have every element be positive, got " + ints_str(values));
}

void expect_numeric(Prim prim, const Type& t, const SourceLocation& where) {
  if (t.dtype == DType::kBool) fail_at(where, std::string(prim_name(prim)) + " does not take a bool operand");
}

// A spec must name each of the operand's dims once.
void check_spec(const char* name, const std::vector<int64_t>& spec, const Type& t, const SourceLocation& where) {
  std::vector<int64_t> sorted = spec;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int>(spec.size()) == t.rank();
  for (size_t i = 0; permutation && i < sorted.size(); ++i) permutation = sorted[i] == static_cast<int64_t>(i);
  if (!permutation)
    fail_at(where, std::string("conv_general_dilated dimension_numbers' ") + name + " " + ints_str(spec) +
                       " must name each dim of " + t.str() + " once");
}

// One list per spatial dim.
void check_spatial_count(const char* what, size_t got, size_t spatial, const SourceLocation& where) {
  if (got != spatial)
    fail_at(where, std::string("conv_general_dilated ") + what + " has " + std::to_string(got) + " entries for " +
                       std::to_string(spatial) + " spatial dim(s)");
}

// reduce_window_shape_tuple: the operand dilated and padded, then the dilated window strided over it.
Shape window_shape(const Shape& operand, const WindowParams& w) {
  Shape out;
  for (size_t d = 0; d < operand.size(); ++d) {
    const int64_t padded = dilate_dim(operand[d], w.base_dilation[d]) + w.padding[d].low + w.padding[d].high;
    out.push_back(stride_dim(padded, dilate_dim(w.window_dimensions[d], w.window_dilation[d]), w.window_strides[d]));
  }
  return out;
}

// _common_reduce_window_shape_rule's checks.
Shape checked_window_shape(Prim prim, const Params& params, const Type& operand, const SourceLocation& where) {
  const std::string name(prim_name(prim));
  const WindowParams w = window_params(params, where);
  expect_positive(name, "window_dimensions", w.window_dimensions, where);
  expect_positive(name, "window_strides", w.window_strides, where);
  expect_positive(name, "base_dilation", w.base_dilation, where);
  expect_positive(name, "window_dilation", w.window_dilation, where);
  if (operand.rank() != static_cast<int>(w.window_dimensions.size()))
    fail_at(where, name + " got the wrong number of window_dimensions for operand: got operand shape " +
                       shape_str(operand.shape) + " with window_dimensions " + ints_str(w.window_dimensions));
  auto same_length = [&](const char* what, size_t n, const std::string& shown) {
    if (n != w.window_dimensions.size())
      fail_at(where, name + " got inconsistent " + what + " and window_dimensions: got " + what + " " + shown +
                         " and window_dimensions " + ints_str(w.window_dimensions));
  };
  same_length("window_strides", w.window_strides.size(), ints_str(w.window_strides));
  same_length("padding", w.padding.size(), pairs_str(w.padding));
  same_length("base_dilation", w.base_dilation.size(), ints_str(w.base_dilation));
  same_length("window_dilation", w.window_dilation.size(), ints_str(w.window_dilation));
  return window_shape(operand.shape, w);
}

}  // namespace

Type conv_general_dilated_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const Type& lhs = in[0];
  const Type& rhs = in[1];
  const ConvParams c = conv_params(params, where);
  if (lhs.dtype != rhs.dtype || lhs.dtype == DType::kBool)
    fail_at(where, "conv_general_dilated operands must share a numeric dtype: " + types_str(in));
  if (lhs.rank() != rhs.rank())
    fail_at(where, "conv_general_dilated lhs and rhs must have the same number of dimensions, but got " + lhs.str() +
                       " and " + rhs.str());
  if (lhs.rank() < 2) fail_at(where, "conv_general_dilated needs operands of rank 2 or more, got " + types_str(in));
  check_spec("lhs_spec", c.dims.lhs_spec, lhs, where);
  check_spec("rhs_spec", c.dims.rhs_spec, rhs, where);
  check_spec("out_spec", c.dims.out_spec, lhs, where);
  const size_t spatial = static_cast<size_t>(lhs.rank() - 2);
  check_spatial_count("window_strides", c.window_strides.size(), spatial, where);
  check_spatial_count("padding", c.padding.size(), spatial, where);
  check_spatial_count("lhs_dilation", c.lhs_dilation.size(), spatial, where);
  check_spatial_count("rhs_dilation", c.rhs_dilation.size(), spatial, where);
  expect_positive("conv_general_dilated", "window_strides", c.window_strides, where);
  expect_positive("conv_general_dilated", "lhs_dilation", c.lhs_dilation, where);
  expect_positive("conv_general_dilated", "rhs_dilation", c.rhs_dilation, where);

  const int64_t groups = c.feature_group_count, batch_groups = c.batch_group_count;
  const int64_t lhs_features = lhs.shape[c.dims.lhs_spec[1]], lhs_batch = lhs.shape[c.dims.lhs_spec[0]];
  const int64_t rhs_in = rhs.shape[c.dims.rhs_spec[1]], rhs_out = rhs.shape[c.dims.rhs_spec[0]];
  if (groups < 1)
    fail_at(where, "conv_general_dilated feature_group_count must be a positive integer, got " + std::to_string(groups) + ".");
  if (lhs_features % groups)
    fail_at(where, "conv_general_dilated feature_group_count must divide lhs feature dimension size, but " +
                       std::to_string(groups) + " does not divide " + std::to_string(lhs_features) + ".");
  if (lhs_features / groups != rhs_in)
    fail_at(where, "conv_general_dilated lhs feature dimension size divided by feature_group_count must equal the rhs "
                   "input feature dimension size, but " + std::to_string(lhs_features) + " // " + std::to_string(groups) +
                       " != " + std::to_string(rhs_in) + ".");
  if (rhs_out % groups)
    fail_at(where, "conv_general_dilated rhs output feature dimension size must be a multiple of feature_group_count, but " +
                       std::to_string(rhs_out) + " is not a multiple of " + std::to_string(groups) + ".");
  if (batch_groups < 1)
    fail_at(where, "conv_general_dilated batch_group_count must be a positive integer, got " + std::to_string(batch_groups) + ".");
  if (lhs_batch % batch_groups)
    fail_at(where, "conv_general_dilated batch_group_count must divide lhs batch dimension size, but " +
                       std::to_string(batch_groups) + " does not divide " + std::to_string(lhs_batch) + ".");
  if (rhs_out % batch_groups)
    fail_at(where, "conv_general_dilated rhs output feature dimension size must be a multiple of batch_group_count, but " +
                       std::to_string(rhs_out) + " is not a multiple of " + std::to_string(batch_groups) + ".");
  if (groups > 1 && batch_groups > 1)
    fail_at(where, "At most one of batch_group_count and feature_group_count may be > 1, got batch_group_count=" +
                       std::to_string(batch_groups) + " and feature_group_count=" + std::to_string(groups));

  // conv_shape_tuple on the dilated operands in (batch, feature, spatial...) order.
  Shape canonical{lhs_batch / batch_groups, rhs_out};
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t lhs_size = dilate_dim(lhs.shape[c.dims.lhs_spec[2 + s]], c.lhs_dilation[s]);
    const int64_t window = dilate_dim(rhs.shape[c.dims.rhs_spec[2 + s]], c.rhs_dilation[s]);
    const int64_t padded = lhs_size + c.padding[s].low + c.padding[s].high;
    if (padded < 0)
      fail_at(where, "Negative padding is larger than the size of the corresponding dimension: got padding=" +
                         pairs_str(c.padding) + " for " + lhs.str());
    canonical.push_back(stride_dim(padded, window, c.window_strides[s]));
  }
  // lax._conv_general_dilated_dtype_rule: preferred_element_type names the result's dtype, of the operands' kind.
  const std::optional<DType> preferred = optional_dtype_param(params, "preferred_element_type", where);
  if (preferred && (is_floating(*preferred) != is_floating(lhs.dtype) || *preferred == DType::kBool))
    fail_at(where, "conv_general_dilated's preferred_element_type " + std::string(dtype_numpy_name(*preferred)) +
                       " is not of the operands' kind: " + types_str(in));
  Type out{preferred.value_or(lhs.dtype), Shape(canonical.size()), MemorySpace::kDevice};
  for (size_t i = 0; i < canonical.size(); ++i) out.shape[c.dims.out_spec[i]] = canonical[i];
  return out;
}

Type reduce_window_result(Prim prim, const Params& params, const Type& operand, const SourceLocation& where) {
  expect_numeric(prim, operand, where);
  return Type{operand.dtype, checked_window_shape(prim, params, operand, where), MemorySpace::kDevice};
}

Type select_and_gather_add_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  select_prim(params, where);
  if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
    fail_at(where, "select_and_gather_add tangents and operand shapes must match, got " + types_str(in) + ".");
  expect_numeric(Prim::kSelectAndGatherAdd, in[1], where);
  return Type{in[0].dtype, checked_window_shape(Prim::kSelectAndGatherAdd, params, in[1], where), MemorySpace::kDevice};
}

// The source holds one value per window of the operand; the result is the operand's type.
Type select_and_scatter_add_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  select_prim(params, where);
  const Type& source = in[0];
  const Type& operand = in[1];
  expect_numeric(Prim::kSelectAndScatterAdd, operand, where);
  const Shape windows = checked_window_shape(Prim::kSelectAndScatterAdd, params, operand, where);
  if (source.dtype != operand.dtype || source.shape != windows)
    fail_at(where, "select_and_scatter_add's source must be " + Type{operand.dtype, windows, MemorySpace::kDevice}.str() +
                       ", one value per window of " + operand.str() + ", got " + source.str());
  return operand;
}

}  // namespace rematkit
