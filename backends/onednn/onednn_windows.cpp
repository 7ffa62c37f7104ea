// conv_general_dilated and the window reductions on oneDNN 2.6, f32, 1 to 3 spatial dims. Each
// activation is read and written where it lies: its (batch, feature, spatial...) dims, in whatever
// order the dimension numbers put them (Flax's NHWC included), are strides of a oneDNN memory
// descriptor, never a copy. A kernel (HWIO from Flax) is reordered into the blocked layout oneDNN's
// JIT convolutions choose, and a kernel's gradient out of it: as it lies, oneDNN 2.6 falls back to
// slower implementations. A convolution equation runs as one of oneDNN's three convolutions:
//  - backward weights when it is a kernel's gradient as JAX builds it (_conv_general_dilated_
//    transpose_rhs: the lhs's batch is contracted, so its "feature" dim is the outermost in memory);
//  - backward data when it dilates its lhs (_conv_general_dilated_transpose_lhs of a strided
//    convolution), with the kernel reversed back into the workspace;
//  - forward otherwise, feature groups as oneDNN's groups.
// bf16 convolutions run natively where oneDNN multiplies bf16 (AVX512_BF16, AMX): bf16 operands,
// a bf16 or f32 result, f32 accumulation rounded once on store, as XLA:CPU computes them; elsewhere
// onednn_backend.cpp runs them as f32 ones on widened copies.
// Pooling: reduce_window_max as max pooling, reduce_window_sum as average pooling (padding
// included) scaled back by the window's size; two dims the window leaves alone are batch and
// channels. Whatever does not fit (lhs dilation with strides, batch groups outside a kernel's
// gradient, negative padding, base or window dilation of a pool, other dtypes) is declined.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "onednn_recipe.hpp"

namespace rematkit_onednn {
namespace {

using rematkit::ConvParams;
using rematkit::Prim;
using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

Dims row_major_strides(const rk_type& t) {
  Dims s(static_cast<size_t>(t.rank), 1);
  for (int i = t.rank - 2; i >= 0; --i) s[i] = s[i + 1] * t.shape[i + 1];
  return s;
}

// An operand's dims in the order `order` (positions in its shape) and the strides that read them
// from its row-major buffer.
struct View {
  Dims dims, strides;
  dt type = dt::f32;
  dnnl::memory::desc desc() const { return dnnl::memory::desc(dims, type, strides); }
};
View view(const rk_type& t, const std::vector<int64_t>& order) {
  const Dims rm = row_major_strides(t);
  View v;
  v.type = t.dtype == RK_DTYPE_BF16 ? dt::bf16 : dt::f32;
  for (int64_t d : order) {
    v.dims.push_back(t.shape[d]);
    v.strides.push_back(rm[d]);
  }
  return v;
}

// A spec with its first two entries swapped (convolution._conv_spec_transpose).
std::vector<int64_t> swapped(std::vector<int64_t> spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

// A view's first dim split into (groups, rest), groups major: oneDNN's grouped weights.
View grouped(const View& v, int64_t groups) {
  View g;
  g.type = v.type;
  g.dims = {groups, v.dims[0] / groups};
  g.strides = {v.strides[0] * (v.dims[0] / groups), v.strides[0]};
  g.dims.insert(g.dims.end(), v.dims.begin() + 1, v.dims.end());
  g.strides.insert(g.strides.end(), v.strides.begin() + 1, v.strides.end());
  return g;
}

bool nonempty(const rk_type& t) {
  for (int32_t d = 0; d < t.rank; ++d)
    if (t.shape[d] == 0) return false;
  return true;
}

bool f32_nonempty(const rk_type& t) { return t.dtype == RK_DTYPE_F32 && nonempty(t); }

// oneDNN's high padding where the exact one, `exact`, is negative: oneDNN's output size rounds
// down, (in + low + high - window) / stride + 1, so up to stride - 1 rows more reach no output
// either; the smallest such padding that is not negative, or `exact` when none is.
int64_t high_padding(int64_t exact, int64_t stride) {
  return exact < 0 && exact + stride - 1 >= 0 ? 0 : exact;
}

Dims minus_one(const std::vector<int64_t>& dilation) {
  Dims d;
  for (int64_t x : dilation) d.push_back(x - 1);  // oneDNN counts the holes: 0 is no dilation
  return d;
}

bool all_one(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// The memory descriptors and params of one oneDNN convolution, in oneDNN's roles.
struct ConvSetup {
  dnnl::memory::desc src, weights, dst;
  Dims strides, dilates, padding_l, padding_r;
};

// Row-major strides of `dims`, in elements.
Dims dense_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

// An input in the layout a convolution's JIT implementation wants (format_tag::any, then
// `chosen`): before each run a oneDNN reorder writes it at the workspace's start, which the
// convolution reads, from the input's buffer as `lies` describes it; or, with `arrange` (a
// rearrangement no strides express: a kernel reversed in space), from a dense `lies` that
// `arrange` first writes into the workspace after the chosen layout's bytes. The reorder's
// scratchpad follows.
void stage_in_chosen_layout(const dnnl::engine& engine, const dnnl::memory::desc& lies, const dnnl::memory::desc& chosen,
                            std::function<void(const void*, void*)> arrange, Recipe& r, int input) {
  auto reordering = std::make_shared<Reordering>(engine, lies, chosen);
  const size_t arranged_at = cache_lines(chosen.get_size());
  const size_t scratchpad_at = arrange ? cache_lines(arranged_at + lies.get_size()) : arranged_at;
  r.staged = {{input, 0}};
  r.workspace_bytes = scratchpad_at + reordering->scratchpad_bytes();
  r.stage = [reordering, arrange, arranged_at, scratchpad_at, input](const rk_tensor_view* inputs, std::byte* base) {
    const void* from = inputs[input].data;
    if (arrange) {
      arrange(from, base + arranged_at);
      from = base + arranged_at;
    }
    reordering->run(from, base, base + scratchpad_at);
  };
}

// The output in the layout the convolution chose (`chosen`), written at the workspace's start and
// reordered after each run into the output's buffer, as `lies` describes it.
void unstage_from_chosen_layout(const dnnl::engine& engine, const dnnl::memory::desc& chosen, const dnnl::memory::desc& lies,
                                Recipe& r) {
  auto reordering = std::make_shared<Reordering>(engine, chosen, lies);
  const size_t scratchpad_at = cache_lines(chosen.get_size());
  r.workspace_bytes = scratchpad_at + reordering->scratchpad_bytes();
  r.unstage = [reordering, scratchpad_at](std::byte* workspace, void* output) {
    reordering->run(workspace, output, workspace + scratchpad_at);
  };
}

// oneDNN's plain-loop implementations ("ref:any") are what it falls back to for layouts its JIT
// kernels do not take.
bool is_reference_impl(const char* impl) { return std::string(impl).rfind("ref", 0) == 0; }

dnnl::convolution_forward::primitive_desc forward_pd(const dnnl::engine& engine, const ConvSetup& s, dnnl::prop_kind prop) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, s.src, s.weights, s.dst, s.strides,
                                      s.dilates, s.padding_l, s.padding_r),
      user_scratchpad(), engine);
}

// The kernel of a backward-data convolution: oneDNN's weights (groups, lhs features per group,
// out features per group, spatial...) dense in the workspace, the equation's kernel reversed in
// every spatial dim into them.
template <typename Element>
std::function<void(const void*, void*)> reverse_kernel(const View& rhs, int64_t groups) {
  const Dims window(rhs.dims.begin() + 2, rhs.dims.end());
  int64_t window_size = 1;
  for (int64_t k : window) window_size *= k;
  return [rhs, groups, window, window_size](const void* from, void* to) {
    const Element* in = static_cast<const Element*>(from);
    Element* out = static_cast<Element*>(to);
    const int64_t out_features = rhs.dims[0], in_features = rhs.dims[1], per_group = out_features / groups;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < in_features; ++i)
        for (int64_t o = 0; o < per_group; ++o)
          for (int64_t k = 0; k < window_size; ++k) {
            int64_t rest = k, at = (g * per_group + o) * rhs.strides[0] + i * rhs.strides[1];
            for (int d = static_cast<int>(window.size()) - 1; d >= 0; --d) {
              at += (window[d] - 1 - rest % window[d]) * rhs.strides[2 + d];
              rest /= window[d];
            }
            *out++ = in[at];
          }
  };
}

// What the three kinds of convolution below read of an equation: its params, its operands and
// result in oneDNN's dim order, and its padding split into low and high.
struct ConvEquation {
  ConvParams c;
  View l, k, o;
  Dims lows, highs;
  size_t spatial = 0;
};

// Backward weights. The equation contracts the lhs's feature dim (oneDNN's minibatch) with the
// rhs's in-feature dim; oneDNN's source is the lhs with batch and feature swapped, its diff_dst the
// rhs likewise, its diff_weights the output (out feature, batch), grouped by the equation's batch
// groups. The equation's window strides are oneDNN's dilation and its rhs dilation oneDNN's stride;
// the high padding is what makes oneDNN's sizes add up.
bool backward_weights_recipe(const dnnl::engine& engine, const rk_equation_view* e, const ConvEquation& q, Recipe& r) {
  const ConvParams& c = q.c;
  const auto& d = c.dims;
  const rk_type &lhs = e->inputs[0], &rhs = e->inputs[1], &out = e->outputs[0];
  ConvSetup s;
  const View src = view(lhs, swapped(d.lhs_spec)), diff_dst = view(rhs, swapped(d.rhs_spec));
  View diff_weights = view(out, swapped(d.out_spec));
  if (c.batch_group_count > 1) diff_weights = grouped(diff_weights, c.batch_group_count);
  s.strides = Dims(c.rhs_dilation.begin(), c.rhs_dilation.end());
  s.dilates = minus_one(c.window_strides);
  s.padding_l = q.lows;
  for (size_t i = 0; i < q.spatial; ++i) {
    const int64_t kept = q.o.dims[2 + i], taps = q.k.dims[2 + i];
    s.padding_r.push_back(high_padding((taps - 1) * s.strides[i] + (kept - 1) * c.window_strides[i] + 1 -
                                           q.l.dims[2 + i] - q.lows[i], s.strides[i]));
    if (s.padding_r.back() < 0) return false;
  }
  s.src = src.desc();
  s.dst = diff_dst.desc();
  // The kernel's gradient in the layout oneDNN chooses, reordered into the output after: with
  // it as it lies (HWIO from Flax) oneDNN 2.6 falls back to im2col and a GEMM, several times
  // slower at the CNN's shapes than its blocked JIT kernel, reorder included (docs/performance.md).
  s.weights = dnnl::memory::desc(diff_weights.dims, diff_weights.type, dnnl::memory::format_tag::any);
  const auto hint = forward_pd(engine, s, dnnl::prop_kind::forward_training);
  const dnnl::convolution_backward_weights::primitive_desc pd(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, s.src, s.weights, s.dst, s.strides,
                                               s.dilates, s.padding_l, s.padding_r),
      user_scratchpad(), engine, hint);
  if (src.type == dt::bf16 && is_reference_impl(pd.impl_info_str())) return false;  // widened instead
  s.weights = pd.diff_weights_desc();
  if (s.weights != diff_weights.desc()) unstage_from_chosen_layout(engine, s.weights, diff_weights.desc(), r);
  r.key = key_of("conv-bwd-weights", {&src.dims, &src.strides, &diff_dst.dims, &diff_dst.strides, &diff_weights.dims,
                                      &diff_weights.strides, &s.strides, &s.dilates, &s.padding_l, &s.padding_r});
  r.inputs = {{DNNL_ARG_SRC, s.src}, {DNNL_ARG_DIFF_DST, s.dst}};
  r.output = {DNNL_ARG_DIFF_WEIGHTS, s.weights};
  r.make = [pd](const dnnl::engine&) -> dnnl::primitive { return dnnl::convolution_backward_weights(pd); };
  return true;
}

// Backward data: out[n, o, y] sums lhs[n, c, j] k[o, c, t] over y + t*rd - low = j*ld, which is
// oneDNN's diff_src of a convolution strided by ld, dilated by rd, of the kernel reversed
// (t' = K-1-t), padded (K-1)*rd - low below; the lhs is its diff_dst.
bool backward_data_recipe(const dnnl::engine& engine, const ConvEquation& q, Recipe& r) {
  const ConvParams& c = q.c;
  const View &l = q.l, &k = q.k, &o = q.o;
  ConvSetup s;
  if (!all_one(c.window_strides)) return false;
  const int64_t groups = c.feature_group_count;
  s.strides = Dims(c.lhs_dilation.begin(), c.lhs_dilation.end());
  s.dilates = minus_one(c.rhs_dilation);
  for (size_t i = 0; i < q.spatial; ++i) {
    const int64_t span = (k.dims[2 + i] - 1) * c.rhs_dilation[i];
    s.padding_l.push_back(span - q.lows[i]);
    s.padding_r.push_back(
        high_padding((l.dims[2 + i] - 1) * s.strides[i] + span + 1 - o.dims[2 + i] - s.padding_l[i], s.strides[i]));
    if (s.padding_l.back() < 0 || s.padding_r.back() < 0) return false;
  }
  // oneDNN's weights: (lhs features, out features) per group, dense, reversed.
  Dims weights = {l.dims[1], k.dims[0]};
  if (groups > 1) weights = {groups, l.dims[1] / groups, k.dims[0] / groups};
  weights.insert(weights.end(), k.dims.begin() + 2, k.dims.end());
  s.src = o.desc();
  const dnnl::memory::desc plain(weights, k.type, dense_strides(weights));
  s.weights = dnnl::memory::desc(weights, k.type, dnnl::memory::format_tag::any);
  s.dst = l.desc();
  const auto hint = forward_pd(engine, s, dnnl::prop_kind::forward_training);
  const dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, s.src, s.weights, s.dst, s.strides,
                                            s.dilates, s.padding_l, s.padding_r),
      user_scratchpad(), engine, hint);
  if (k.type == dt::bf16 && is_reference_impl(pd.impl_info_str())) return false;  // widened instead
  s.weights = pd.weights_desc();
  r.key = key_of("conv-bwd-data", {&l.dims, &l.strides, &o.dims, &o.strides, &weights, &s.strides, &s.dilates,
                                   &s.padding_l, &s.padding_r});
  r.inputs = {{DNNL_ARG_DIFF_DST, s.dst}, {DNNL_ARG_WEIGHTS, s.weights}};
  r.output = {DNNL_ARG_DIFF_SRC, s.src};
  stage_in_chosen_layout(engine, plain, s.weights,
                         k.type == dt::bf16 ? reverse_kernel<uint16_t>(k, groups) : reverse_kernel<float>(k, groups), r, 1);
  r.make = [pd](const dnnl::engine&) -> dnnl::primitive { return dnnl::convolution_backward_data(pd); };
  return true;
}

// Forward, feature groups as oneDNN's groups of the kernel's out features.
bool forward_recipe(const dnnl::engine& engine, const ConvEquation& q, Recipe& r) {
  const ConvParams& c = q.c;
  const View &l = q.l, &k = q.k, &o = q.o;
  ConvSetup s;
  const View weights = c.feature_group_count > 1 ? grouped(k, c.feature_group_count) : k;
  s.src = l.desc();
  s.weights = weights.desc();
  s.dst = o.desc();
  s.strides = Dims(c.window_strides.begin(), c.window_strides.end());
  s.dilates = minus_one(c.rhs_dilation);
  s.padding_l = q.lows;
  s.padding_r = q.highs;
  const dnnl::memory::desc as_it_lies = s.weights;
  s.weights = dnnl::memory::desc(weights.dims, weights.type, dnnl::memory::format_tag::any);
  auto pd = forward_pd(engine, s, dnnl::prop_kind::forward_inference);
  s.weights = pd.weights_desc();
  if (s.weights != as_it_lies) stage_in_chosen_layout(engine, as_it_lies, s.weights, nullptr, r, 1);
  // oneDNN's reference forward convolution on layouts as they lie is far slower than rematkit's own
  // reference kernel (on the cnn example; docs/performance.md has the figures): decline it. Its
  // backward ones cost less than ours and stay.
  if (is_reference_impl(pd.impl_info_str())) return false;
  r.key = key_of("conv-fwd", {&l.dims, &l.strides, &weights.dims, &weights.strides, &o.dims, &o.strides, &s.strides,
                              &s.dilates, &s.padding_l, &s.padding_r});
  r.inputs = {{DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights}};
  r.output = {DNNL_ARG_DST, s.dst};
  r.make = [pd](const dnnl::engine&) -> dnnl::primitive { return dnnl::convolution_forward(pd); };
  return true;
}

}  // namespace

bool convolution_recipe(const dnnl::engine& engine, const rk_equation_view* e, bool native_bf16, Recipe& r) {
  if (rematkit::plugin::primitive_of(e) != Prim::kConvGeneralDilated || e->num_inputs != 2 || e->num_outputs != 1)
    return false;
  const rk_type &lhs = e->inputs[0], &rhs = e->inputs[1], &out = e->outputs[0];
  const bool bf16 = native_bf16 && lhs.dtype == RK_DTYPE_BF16 && rhs.dtype == RK_DTYPE_BF16 &&
                    (out.dtype == RK_DTYPE_BF16 || out.dtype == RK_DTYPE_F32) && nonempty(lhs) && nonempty(rhs) && nonempty(out);
  if (!bf16 && (!f32_nonempty(lhs) || !f32_nonempty(rhs) || !f32_nonempty(out))) return false;
  const ConvParams c = rematkit::plugin::conv_params(e);
  const size_t spatial = c.window_strides.size();
  if (spatial < 1 || spatial > 3) return false;
  // A negative high padding drops the last rows a strided window never reaches (JAX's transposes
  // of a stride-2 convolution on an even size); the two gradient branches below recompute oneDNN's
  // high padding from the sizes, the forward one takes it as given.
  bool negative_high = false;
  for (const rematkit::PadPair& p : c.padding) {
    if (p.low < 0) return false;
    negative_high = negative_high || p.high < 0;
  }
  const auto& d = c.dims;
  ConvEquation q{c, view(lhs, d.lhs_spec), view(rhs, d.rhs_spec), view(out, d.out_spec), {}, {}, spatial};
  for (const rematkit::PadPair& p : c.padding) {
    q.lows.push_back(p.low);
    q.highs.push_back(p.high);
  }
  // Multiply-adds: each output element sums a kernel's worth of one group.
  int64_t work = 1;
  for (int64_t x : q.o.dims) work *= x;
  for (size_t i = 1; i < q.k.dims.size(); ++i) work *= q.k.dims[i];
  r.work = work;
  const bool dilates_lhs = !all_one(c.lhs_dilation);
  if (!dilates_lhs && c.feature_group_count == 1 && d.lhs_spec[1] == 0) return backward_weights_recipe(engine, e, q, r);
  if (c.batch_group_count != 1) return false;
  if (dilates_lhs) return backward_data_recipe(engine, q, r);
  if (negative_high) return false;
  return forward_recipe(engine, q, r);
}

bool pooling_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r) {
  const std::optional<Prim> prim = rematkit::plugin::primitive_of(e);
  if ((prim != Prim::kReduceWindowMax && prim != Prim::kReduceWindowSum) || e->num_inputs != 1 || e->num_outputs != 1)
    return false;
  const rk_type &x = e->inputs[0], &y = e->outputs[0];
  if (!f32_nonempty(x) || !f32_nonempty(y)) return false;
  const rematkit::WindowParams w = rematkit::plugin::window_params(e);
  if (!all_one(w.base_dilation) || !all_one(w.window_dilation)) return false;
  // Two dims the window leaves alone are oneDNN's batch and channels (a missing one is a size-1
  // dim); the others are spatial.
  std::vector<int64_t> trivial, spatial;
  for (int32_t d = 0; d < x.rank; ++d) {
    if (w.padding[d].low < 0 || w.padding[d].high < 0) return false;
    const bool alone = w.window_dimensions[d] == 1 && w.window_strides[d] == 1 && w.padding[d].low == 0 && w.padding[d].high == 0;
    (alone && trivial.size() < 2 ? trivial : spatial).push_back(d);
  }
  if (spatial.empty() || spatial.size() > 3) return false;
  auto pooled = [&](const rk_type& t) {
    const Dims rm = row_major_strides(t);
    View v;
    for (size_t i = 0; i < 2; ++i) {
      v.dims.push_back(i < trivial.size() ? t.shape[trivial[i]] : 1);
      v.strides.push_back(i < trivial.size() ? rm[trivial[i]] : 1);
    }
    for (int64_t d : spatial) {
      v.dims.push_back(t.shape[d]);
      v.strides.push_back(rm[d]);
    }
    return v;
  };
  const View src = pooled(x), dst = pooled(y);
  Dims strides, kernel, low, high;
  double window_size = 1;
  for (int64_t d : spatial) {
    strides.push_back(w.window_strides[d]);
    kernel.push_back(w.window_dimensions[d]);
    low.push_back(w.padding[d].low);
    high.push_back(w.padding[d].high);
    window_size *= static_cast<double>(w.window_dimensions[d]);
  }
  const bool max = prim == Prim::kReduceWindowMax;
  // A sum is the average over the padded window (padding counted as zeros) times its size.
  dnnl::primitive_attr attr;
  if (!max) {
    dnnl::post_ops scale;
    scale.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, static_cast<float>(window_size), 0.0f);
    attr.set_post_ops(scale);
  }
  const dnnl::pooling_forward::primitive_desc pd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference,
                                  max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding,
                                  src.desc(), dst.desc(), strides, kernel, low, high),
      user_scratchpad(attr), engine);
  r.key = key_of(max ? "pool-max" : "pool-sum", {&src.dims, &src.strides, &dst.dims, &dst.strides, &strides, &kernel, &low, &high});
  r.inputs = {{DNNL_ARG_SRC, src.desc()}};
  r.output = {DNNL_ARG_DST, dst.desc()};
  r.make = [pd](const dnnl::engine&) -> dnnl::primitive { return dnnl::pooling_forward(pd); };
  return true;
}

}  // namespace rematkit_onednn
