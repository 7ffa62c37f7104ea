// Transposes of the windowed primitives as JAX builds them: a convolution's are convolutions of
// the cotangent (jax/_src/lax/convolution.py, _conv_general_dilated_transpose_lhs/_rhs), a window
// sum's is a padded window sum, and select_and_gather_add and select_and_scatter_add transpose
// into each other (jax/_src/lax/windowed_reductions.py).
#include "window_transpose_rules.hpp"

#include <cmath>

namespace rematkit::autodiff {
namespace {

std::vector<int64_t> spatial_sizes(const Shape& shape, const std::vector<int64_t>& spec) {
  std::vector<int64_t> out;
  for (size_t i = 2; i < spec.size(); ++i) out.push_back(shape[spec[i]]);
  return out;
}

std::vector<int64_t> spatial_dims(const std::vector<int64_t>& spec) { return {spec.begin() + 2, spec.end()}; }

// convolution._conv_spec_transpose: the first two entries swapped.
std::vector<int64_t> spec_transpose(std::vector<int64_t> spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

// convolution._conv_general_vjp_lhs_padding: the padding under which the reversed kernel, strided
// by lhs_dilation over ct dilated by the strides, gives back the lhs's (dilated) size.
std::vector<PadPair> vjp_lhs_padding(const std::vector<int64_t>& in, const std::vector<int64_t>& window,
                                     const std::vector<int64_t>& strides, const std::vector<int64_t>& out,
                                     const std::vector<PadPair>& padding, const std::vector<int64_t>& lhs_dilation,
                                     const std::vector<int64_t>& rhs_dilation) {
  std::vector<PadPair> pads;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t lhs = dilate_dim(in[d], lhs_dilation[d]), rhs = dilate_dim(window[d], rhs_dilation[d]);
    const int64_t before = rhs - padding[d].low - 1;
    pads.push_back(PadPair{before, lhs + rhs - 1 - dilate_dim(out[d], strides[d]) - before});
  }
  return pads;
}

// convolution._conv_general_vjp_rhs_padding: the forward padding below, and above what the lhs and
// the kernel leave over of the dilated ct.
std::vector<PadPair> vjp_rhs_padding(const std::vector<int64_t>& in, const std::vector<int64_t>& window,
                                     const std::vector<int64_t>& strides, const std::vector<int64_t>& out,
                                     const std::vector<PadPair>& padding, const std::vector<int64_t>& lhs_dilation,
                                     const std::vector<int64_t>& rhs_dilation) {
  std::vector<PadPair> pads;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t lhs = dilate_dim(in[d], lhs_dilation[d]), rhs = dilate_dim(window[d], rhs_dilation[d]);
    const int64_t from_lhs = dilate_dim(out[d], strides[d]) - lhs, from_rhs = rhs - padding[d].low - 1;
    pads.push_back(PadPair{padding[d].low, from_lhs + from_rhs});
  }
  return pads;
}

// convolution._reshape_axis_out_of: dim `src` split into (size1, rest).
ValueId reshape_axis_out_of(Emitter& em, int64_t src, int64_t size1, ValueId x) {
  Shape shape = em.shape(x);
  shape[src] /= size1;
  shape.insert(shape.begin() + src, size1);
  return em.linear(Prim::kReshape, {x}, reshape_params(shape));
}

// convolution._reshape_axis_into: dim `src` merged into dim `dst` (numbered without `src`) as its
// major part; lax.reshape with dimensions is a transpose, then a reshape.
ValueId reshape_axis_into(Emitter& em, int64_t src, int64_t dst, ValueId x) {
  const Shape shape = em.shape(x);
  std::vector<int64_t> perm;
  Shape merged;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != src) {
      perm.push_back(i);
      merged.push_back(shape[i]);
    }
  perm.insert(perm.begin() + dst, src);
  merged[dst] *= shape[src];
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (!identity) x = em.linear(Prim::kTranspose, {x}, transpose_params(perm));
  return em.linear(Prim::kReshape, {x}, reshape_params(merged));
}

ValueId as_dtype(Emitter& em, ValueId v, DType dtype) {
  return em.type(v).dtype == dtype ? v : em.linear(Prim::kConvertElementType, {v}, convert_element_type_params(dtype));
}

// lax._get_max_identity / _get_min_identity for the window's select_prim (floating operands).
double select_identity(Prim select) { return select == Prim::kGe ? -INFINITY : INFINITY; }

}  // namespace

// convolution._conv_general_dilated_transpose_lhs: ct convolved with the kernel reversed in space,
// its in and out features swapped; the strides become lhs dilation. A feature group count moves the
// groups from the kernel's out features into its in features; a batch group count is a feature
// group count here, whose groups then move from the result's features into its batch.
ValueId conv_transpose_lhs(Emitter& em, ValueId ct, ValueId rhs, const Params& params, const Type lhs_type,
                           const SourceLocation& where) {
  const ConvParams c = conv_params(params, where);
  const std::optional<DType> preferred = optional_dtype_param(params, "preferred_element_type", where);
  const ConvDims& d = c.dims;
  const Shape rhs_shape = em.shape(rhs), ct_shape = em.shape(ct);
  int64_t groups = c.feature_group_count;
  if (c.feature_group_count > 1 || c.batch_group_count > 1) {
    groups = std::max(c.feature_group_count, c.batch_group_count);
    rhs = reshape_axis_into(em, d.rhs_spec[0], d.rhs_spec[1], reshape_axis_out_of(em, d.rhs_spec[0], groups, rhs));
  }
  ConvParams t;
  t.dims = ConvDims{d.out_spec, spec_transpose(d.rhs_spec), d.lhs_spec};
  t.window_strides = c.lhs_dilation;
  t.padding = vjp_lhs_padding(spatial_sizes(lhs_type.shape, d.lhs_spec), spatial_sizes(rhs_shape, d.rhs_spec),
                              c.window_strides, spatial_sizes(ct_shape, d.out_spec), c.padding, c.lhs_dilation,
                              c.rhs_dilation);
  t.lhs_dilation = c.window_strides;
  t.rhs_dilation = c.rhs_dilation;
  t.feature_group_count = groups;
  t.batch_group_count = 1;
  ValueId reversed = em.linear(Prim::kRev, {rhs}, rev_params(spatial_dims(d.rhs_spec)));
  reversed = as_dtype(em, reversed, em.type(ct).dtype);
  ValueId out = as_dtype(em, em.linear(Prim::kConvGeneralDilated, {ct, reversed}, conv_general_dilated_params(t, preferred)),
                         lhs_type.dtype);
  if (c.batch_group_count > 1)
    out = reshape_axis_into(em, d.lhs_spec[1], d.lhs_spec[0], reshape_axis_out_of(em, d.lhs_spec[1], c.batch_group_count, out));
  return out;
}

// convolution._conv_general_dilated_transpose_rhs: lhs convolved with ct as the kernel, batch and
// feature dims swapped in every spec (the contraction runs over the batch); the strides become
// rhs dilation. Feature groups become batch groups and batch groups feature groups.
ValueId conv_transpose_rhs(Emitter& em, ValueId ct, ValueId lhs, const Params& params, const Type rhs_type,
                           const SourceLocation& where) {
  const ConvParams c = conv_params(params, where);
  const std::optional<DType> preferred = optional_dtype_param(params, "preferred_element_type", where);
  const ConvDims& d = c.dims;
  const Shape lhs_shape = em.shape(lhs), ct_shape = em.shape(ct);
  if (num_elements(ct_shape) == 0) return kNoValue;  // ad.Zero: no degenerate convolution with an empty kernel
  ConvParams t;
  t.dims = ConvDims{spec_transpose(d.lhs_spec), spec_transpose(d.out_spec), spec_transpose(d.rhs_spec)};
  t.window_strides = c.rhs_dilation;
  t.padding = vjp_rhs_padding(spatial_sizes(lhs_shape, d.lhs_spec), spatial_sizes(rhs_type.shape, d.rhs_spec),
                              c.window_strides, spatial_sizes(ct_shape, d.out_spec), c.padding, c.lhs_dilation,
                              c.rhs_dilation);
  t.lhs_dilation = c.lhs_dilation;
  t.rhs_dilation = c.window_strides;
  t.feature_group_count = c.batch_group_count;
  t.batch_group_count = c.feature_group_count;
  lhs = as_dtype(em, lhs, em.type(ct).dtype);
  return as_dtype(em, em.linear(Prim::kConvGeneralDilated, {lhs, ct}, conv_general_dilated_params(t, preferred)),
                  rhs_type.dtype);
}

// windowed_reductions._reduce_window_sum_transpose_rule: ct dilated by the strides and padded as
// a convolution's lhs transpose pads, then summed over the window, strided by the base dilation.
ValueId reduce_window_sum_transpose(Emitter& em, ValueId ct, const Params& params, const Shape& operand,
                                    const SourceLocation& where) {
  const WindowParams w = window_params(params, where);
  const std::vector<PadPair> pads = vjp_lhs_padding(operand, w.window_dimensions, w.window_strides, em.shape(ct),
                                                    w.padding, w.base_dilation, w.window_dilation);
  std::vector<PaddingDim> config;
  for (size_t d = 0; d < pads.size(); ++d) config.push_back(PaddingDim{pads[d].low, pads[d].high, w.window_strides[d] - 1});
  const ValueId padded = em.linear(Prim::kPad, {ct, em.literal(0.0, em.type(ct).dtype)}, pad_params(config));
  WindowParams back;
  back.window_dimensions = w.window_dimensions;
  back.window_strides = w.base_dilation;
  back.padding.assign(operand.size(), PadPair{0, 0});
  back.base_dilation.assign(operand.size(), 1);
  back.window_dilation = w.window_dilation;
  return em.linear(Prim::kReduceWindowSum, {padded}, reduce_window_params(back));
}

// windowed_reductions._select_and_gather_add_transpose: ct scattered to where each window picked;
// under a base dilation the operand is dilated with the select's identity first, and the result
// strided back. JAX has no rule under a window dilation, and neither has rematkit.
ValueId select_and_gather_add_transpose(Emitter& em, ValueId ct, ValueId operand, const Params& params,
                                        const SourceLocation& where) {
  const WindowParams w = window_params(params, where);
  const Prim select = select_prim(params, where);
  for (int64_t d : w.window_dilation)
    if (d != 1)
      fail_at(where, "VJP not implemented for select_and_gather (MaxPool) with window dilation, got window_dilation=" +
                         ParamValue::of_ints(w.window_dilation).str());
  bool dilated = false;
  std::vector<PaddingDim> holes;
  for (int64_t d : w.base_dilation) {
    dilated |= d != 1;
    holes.push_back(PaddingDim{0, 0, d - 1});
  }
  if (dilated)
    operand = em.linear(Prim::kPad, {operand, em.literal(select_identity(select), em.type(operand).dtype)}, pad_params(holes));
  ValueId result = em.linear(Prim::kSelectAndScatterAdd, {ct, operand}, select_and_scatter_add_params(select, w));
  if (dilated) result = em.linear(Prim::kSlice, {result}, slice_params(Shape(holes.size(), 0), em.shape(result), w.base_dilation));
  return result;
}

// windowed_reductions._select_and_scatter_add_transpose: ct gathered from where each window picks.
ValueId select_and_scatter_add_transpose(Emitter& em, ValueId ct, ValueId operand, const Params& params,
                                         const SourceLocation& where) {
  WindowParams w = window_params(params, where);
  w.base_dilation.assign(w.window_dimensions.size(), 1);
  w.window_dilation.assign(w.window_dimensions.size(), 1);
  return em.linear(Prim::kSelectAndGatherAdd, {ct, operand}, select_and_gather_add_params(select_prim(params, where), w));
}

}  // namespace rematkit::autodiff
