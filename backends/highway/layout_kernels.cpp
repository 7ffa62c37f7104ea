#include "highway/layout_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace rematkit::hwy_backend {

std::optional<BroadcastKernel> BroadcastKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kBroadcastInDim) || e->inputs[0].dtype != e->outputs[0].dtype) return std::nullopt;
  const int32_t t = e->outputs[0].dtype;
  if (t != RK_DTYPE_F32 && t != RK_DTYPE_I32 && t != RK_DTYPE_U32 && t != RK_DTYPE_BOOL) return std::nullopt;
  return BroadcastKernel{t == RK_DTYPE_BOOL ? size_t{1} : size_t{4}, shape_of(e->inputs[0]),
                         plugin::ints_param(e, "broadcast_dimensions"), eq.out};
}
void BroadcastKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  if (element_bytes == 1)
    broadcast(in_shape, dims, out_shape, static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(out[0].data));
  else  // the bits, whatever the 4-byte dtype
    broadcast(in_shape, dims, out_shape, static_cast<const uint32_t*>(in[0].data), static_cast<uint32_t*>(out[0].data));
}

std::optional<PermuteKernel> PermuteKernel::prepare(const Equation& eq) {
  if (!eq.is(Prim::kTranspose) || !eq.all_f32) return std::nullopt;
  return PermuteKernel{{shape_of(eq.view->inputs[0]), plugin::ints_param(eq.view, "permutation")}};
}
void PermuteKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  permutation.apply(f32(in[0]), f32(out[0]));
}

std::optional<ReverseKernel> ReverseKernel::prepare(const Equation& eq) {
  if (!eq.is(Prim::kRev) || !eq.all_f32) return std::nullopt;
  ReverseKernel k{eq.out, plugin::ints_param(eq.view, "dimensions")};
  for (int64_t d : k.dims)
    if (d < 0 || d >= static_cast<int64_t>(eq.out.size())) return std::nullopt;
  return k;
}
void ReverseKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  reverse(shape, dims, f32(in[0]), f32(out[0]));
}

std::optional<SplitKernel> SplitKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kSplit) || !eq.all_f32 || e->num_inputs != 1) return std::nullopt;
  const Dims in = shape_of(e->inputs[0]), sizes = plugin::ints_param(e, "sizes");
  const int64_t axis = plugin::int_param(e, "axis"), piece = plugin::int_param(e, "output");
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || piece < 0 || piece >= static_cast<int64_t>(sizes.size()))
    return std::nullopt;
  const size_t inner = count(Dims(in.begin() + axis + 1, in.end()));
  Runs r;
  r.outer = count(Dims(in.begin(), in.begin() + axis));
  r.in_run = static_cast<size_t>(in[static_cast<size_t>(axis)]) * inner;
  r.out_run = static_cast<size_t>(sizes[static_cast<size_t>(piece)]) * inner;
  r.at = static_cast<size_t>(std::accumulate(sizes.begin(), sizes.begin() + piece, int64_t{0})) * inner;
  if (r.at + r.out_run > r.in_run) return std::nullopt;
  return SplitKernel{r};
}
void SplitKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  for (size_t r = 0; r < runs.outer; ++r)
    std::copy_n(f32(in[0]) + r * runs.in_run + runs.at, runs.out_run, f32(out[0]) + r * runs.out_run);
}

std::optional<PadKernel> PadKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kPad) || !eq.all_f32 || e->num_inputs != 2 || e->inputs[1].rank != 0) return std::nullopt;
  const Dims in = shape_of(e->inputs[0]);
  const std::vector<PaddingDim> config = plugin::padding_config(e);
  if (config.size() != in.size()) return std::nullopt;
  int64_t axis = -1;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t lo = config[d].low, hi = config[d].high, interior = config[d].interior;
    if (lo < 0 || hi < 0 || interior != 0) return std::nullopt;
    if (lo == 0 && hi == 0) continue;
    if (axis >= 0) return std::nullopt;
    axis = static_cast<int64_t>(d);
  }
  if (axis < 0) axis = 0;  // nothing padded: a copy
  const size_t inner = count(Dims(in.begin() + axis + 1, in.end()));
  const Dims& out = eq.out;
  Runs r;
  r.outer = count(Dims(in.begin(), in.begin() + axis));
  r.in_run = in.empty() ? 1 : static_cast<size_t>(in[static_cast<size_t>(axis)]) * inner;
  r.out_run = out.empty() ? 1 : static_cast<size_t>(out[static_cast<size_t>(axis)]) * inner;
  r.at = in.empty() ? 0 : static_cast<size_t>(config[static_cast<size_t>(axis)].low) * inner;
  return PadKernel{r};
}
void PadKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  const float fill = f32(in[1])[0];
  for (size_t r = 0; r < runs.outer; ++r) {
    float* to = f32(out[0]) + r * runs.out_run;
    std::fill(to, to + runs.at, fill);
    std::copy_n(f32(in[0]) + r * runs.in_run, runs.in_run, to + runs.at);
    std::fill(to + runs.at + runs.in_run, to + runs.out_run, fill);
  }
}

std::optional<IotaKernel> IotaKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kIota) || e->outputs[0].dtype != RK_DTYPE_I32 || e->num_inputs != 0) return std::nullopt;
  const Dims& out = eq.out;
  const int64_t dim = plugin::int_param(e, "dimension");
  if (dim < 0 || dim >= static_cast<int64_t>(out.size()) || out[static_cast<size_t>(dim)] > (int64_t{1} << 31) - 1)
    return std::nullopt;
  return IotaKernel{count(out), count(Dims(out.begin() + dim + 1, out.end())), static_cast<size_t>(out[static_cast<size_t>(dim)])};
}
void IotaKernel::run(const rk_tensor_view*, const rk_tensor_view* out, void*) const {
  // Runs of run_length equal values counting 0 .. size-1, written once, then that period copied:
  // no division per element, and no call per element when the runs are single (the last dim).
  uint32_t* to = static_cast<uint32_t*>(out[0].data);
  const size_t period = std::min(n, size * run_length);
  for (size_t v = 0, i = 0; i < period; ++v, i += run_length)
    fill(static_cast<uint32_t>(v), to + i, std::min(run_length, period - i));
  for (size_t i = period; i < n; i += period) std::memcpy(to + i, to, std::min(period, n - i) * sizeof(uint32_t));
}

}  // namespace rematkit::hwy_backend
