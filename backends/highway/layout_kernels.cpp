#include "highway/layout_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <vector>

#include "highway/half_costs.hpp"
#include "highway/half_values.hpp"

namespace rematkit::hwy_backend {
namespace {

// The element size of a kind that moves f32, bf16 or f16 elements: 4 or 2 when the result and
// every operand are of one of those dtypes, nullopt otherwise.
std::optional<size_t> moved_float_bytes(const rk_equation_view* e) {
  const int32_t t = e->outputs[0].dtype;
  if (t != RK_DTYPE_F32 && !is_half(t)) return std::nullopt;
  for (size_t i = 0; i < e->num_inputs; ++i)
    if (e->inputs[i].dtype != t) return std::nullopt;
  return t == RK_DTYPE_F32 ? size_t{4} : size_t{2};
}

template <typename T>
const T* in_as(const rk_tensor_view& t) {
  return static_cast<const T*>(t.data);
}
template <typename T>
T* out_as(const rk_tensor_view& t) {
  return static_cast<T*>(t.data);
}

}  // namespace

std::optional<BroadcastKernel> BroadcastKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(Prim::kBroadcastInDim) || e->inputs[0].dtype != e->outputs[0].dtype) return std::nullopt;
  const int32_t t = e->outputs[0].dtype;
  const size_t bytes = t == RK_DTYPE_BOOL ? 1 : is_half(t) ? 2 : 4;
  if (t != RK_DTYPE_F32 && t != RK_DTYPE_I32 && t != RK_DTYPE_U32 && t != RK_DTYPE_BOOL && !is_half(t)) return std::nullopt;
  return BroadcastKernel{bytes, shape_of(e->inputs[0]), plugin::ints_param(e, "broadcast_dimensions"), eq.out};
}
void BroadcastKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  with_element_type(element_bytes, [&]<typename T>(T) {  // the bits, whatever the dtype
    broadcast(in_shape, dims, out_shape, in_as<T>(in[0]), out_as<T>(out[0]));
  });
}
double BroadcastKernel::expected_ns() const {
  return element_bytes == 2 ? half_copy_ns(static_cast<double>(count(out_shape))) : -1;
}

std::optional<PermuteKernel> PermuteKernel::prepare(const Equation& eq) {
  const std::optional<size_t> bytes = eq.is(Prim::kTranspose) ? moved_float_bytes(eq.view) : std::nullopt;
  if (!bytes) return std::nullopt;
  return PermuteKernel{*bytes, {shape_of(eq.view->inputs[0]), plugin::ints_param(eq.view, "permutation")}};
}
void PermuteKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  with_float_element_type(element_bytes, [&]<typename T>(T) { permutation.apply(in_as<T>(in[0]), out_as<T>(out[0])); });
}
double PermuteKernel::expected_ns() const {
  return element_bytes == 2 ? half_permute_ns(static_cast<double>(permutation.count())) : -1;
}

std::optional<ReverseKernel> ReverseKernel::prepare(const Equation& eq) {
  const std::optional<size_t> bytes = eq.is(Prim::kRev) ? moved_float_bytes(eq.view) : std::nullopt;
  if (!bytes) return std::nullopt;
  ReverseKernel k{*bytes, eq.out, plugin::ints_param(eq.view, "dimensions")};
  for (int64_t d : k.dims)
    if (d < 0 || d >= static_cast<int64_t>(eq.out.size())) return std::nullopt;
  return k;
}
void ReverseKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  with_float_element_type(element_bytes, [&]<typename T>(T) { reverse(shape, dims, in_as<T>(in[0]), out_as<T>(out[0])); });
}
double ReverseKernel::expected_ns() const {
  return element_bytes == 2 ? half_permute_ns(static_cast<double>(count(shape))) : -1;
}

std::optional<ReshapeKernel> ReshapeKernel::prepare(const Equation& eq) {
  if ((!eq.is(Prim::kReshape) && !eq.is(Prim::kSqueeze)) || !is_half(eq.view->outputs[0].dtype)) return std::nullopt;
  // reshape's dimensions (a transposition first, never set by today's JAX) are declined; squeeze's
  // are the dims it drops.
  if (moved_float_bytes(eq.view) != size_t{2} ||
      (eq.is(Prim::kReshape) && !plugin::ints_param_or_none(eq.view, "dimensions").empty()))
    return std::nullopt;
  return ReshapeKernel{2 * count(eq.out)};
}
void ReshapeKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  std::memcpy(out[0].data, in[0].data, bytes);
}
double ReshapeKernel::expected_ns() const { return half_copy_ns(static_cast<double>(bytes / 2)); }

std::optional<SliceKernel> SliceKernel::prepare(const Equation& eq) {
  const std::optional<size_t> bytes = eq.is(Prim::kSlice) ? moved_float_bytes(eq.view) : std::nullopt;
  if (!bytes) return std::nullopt;
  Slice s{shape_of(eq.view->inputs[0]), plugin::ints_param(eq.view, "start_indices"),
          plugin::ints_param_or_none(eq.view, "strides"), eq.out};
  if (s.stride.empty()) s.stride.assign(s.in_shape.size(), 1);
  if (s.start.size() != s.in_shape.size() || s.stride.size() != s.in_shape.size() || s.out_shape.size() != s.in_shape.size())
    return std::nullopt;
  for (size_t d = 0; d < s.in_shape.size(); ++d)
    if (s.start[d] < 0 || s.stride[d] < 1 || (s.out_shape[d] > 0 && s.start[d] + (s.out_shape[d] - 1) * s.stride[d] >= s.in_shape[d]))
      return std::nullopt;
  return SliceKernel{*bytes, std::move(s)};
}
void SliceKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  if (count(slice.out_shape) == 0) return;
  with_float_element_type(element_bytes, [&]<typename T>(T) { slice.apply(in_as<T>(in[0]), out_as<T>(out[0])); });
}
double SliceKernel::expected_ns() const {
  if (element_bytes != 2) return -1;
  const double n = static_cast<double>(count(slice.out_shape));
  return slice.stride.empty() || slice.stride.back() == 1 ? half_copy_ns(n) : half_permute_ns(n);
}

std::optional<ConcatenateKernel> ConcatenateKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  const std::optional<size_t> bytes = eq.is(Prim::kConcatenate) ? moved_float_bytes(e) : std::nullopt;
  const int64_t axis = bytes ? plugin::int_param(e, "dimension") : -1;
  if (axis < 0 || axis >= static_cast<int64_t>(eq.out.size())) return std::nullopt;
  const size_t a = static_cast<size_t>(axis);
  const size_t inner = count(Dims(eq.out.begin() + axis + 1, eq.out.end()));
  ConcatenateKernel k{*bytes, count(Dims(eq.out.begin(), eq.out.begin() + axis)), static_cast<size_t>(eq.out[a]) * inner, {}};
  size_t total = 0;
  for (size_t i = 0; i < e->num_inputs; ++i) {
    if (e->inputs[i].rank != e->outputs[0].rank) return std::nullopt;
    k.in_runs.push_back(static_cast<size_t>(e->inputs[i].shape[a]) * inner);
    total += k.in_runs.back();
  }
  if (total != k.out_run) return std::nullopt;
  return k;
}
// In bytes: whole runs are copied, whatever the element.
void ConcatenateKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  over_items(outer, out_run * element_bytes, [&](size_t begin, size_t end) {
    char* to = static_cast<char*>(out[0].data) + begin * out_run * element_bytes;
    for (size_t o = begin; o < end; ++o)
      for (size_t i = 0; i < in_runs.size(); ++i) {
        const size_t bytes = in_runs[i] * element_bytes;
        if (bytes == 0) continue;  // an empty operand may have no buffer
        std::memcpy(to, static_cast<const char*>(in[i].data) + o * bytes, bytes);
        to += bytes;
      }
  });
}
double ConcatenateKernel::expected_ns() const {
  return element_bytes == 2 ? half_copy_ns(static_cast<double>(outer * out_run)) : -1;
}

std::optional<SplitKernel> SplitKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  const std::optional<size_t> bytes = eq.is(Prim::kSplit) ? moved_float_bytes(e) : std::nullopt;
  if (!bytes || e->num_inputs != 1) return std::nullopt;
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
  return SplitKernel{*bytes, r};
}
void SplitKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  const size_t bytes = runs.out_run * element_bytes;
  if (bytes == 0) return;
  over_items(runs.outer, bytes, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r)
      std::memcpy(static_cast<char*>(out[0].data) + r * bytes,
                  static_cast<const char*>(in[0].data) + (r * runs.in_run + runs.at) * element_bytes, bytes);
  });
}
double SplitKernel::expected_ns() const {
  return element_bytes == 2 ? half_copy_ns(static_cast<double>(runs.outer * runs.out_run)) : -1;
}

namespace {

// A pad of one axis by edges of zero or more and no interior padding, as runs; nullopt otherwise.
std::optional<Runs> padded_runs(const Dims& in, const Dims& out, const std::vector<PaddingDim>& config) {
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
  Runs r;
  r.outer = count(Dims(in.begin(), in.begin() + axis));
  r.in_run = in.empty() ? 1 : static_cast<size_t>(in[static_cast<size_t>(axis)]) * inner;
  r.out_run = out.empty() ? 1 : static_cast<size_t>(out[static_cast<size_t>(axis)]) * inner;
  r.at = in.empty() ? 0 : static_cast<size_t>(config[static_cast<size_t>(axis)].low) * inner;
  return r;
}

template <typename T>
void pad_runs(const Runs& runs, const T* in, T value, T* out) {
  over_items(runs.outer, runs.out_run * sizeof(T), [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      T* to = out + r * runs.out_run;
      fill(value, to, runs.at);
      std::copy_n(in + r * runs.in_run, runs.in_run, to + runs.at);
      fill(value, to + runs.at + runs.in_run, runs.out_run - runs.at - runs.in_run);
    }
  });
}

}  // namespace

std::optional<PadKernel> PadKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  const std::optional<size_t> bytes = eq.is(Prim::kPad) ? moved_float_bytes(e) : std::nullopt;
  if (!bytes || e->num_inputs != 2 || e->inputs[1].rank != 0) return std::nullopt;
  Padding padding{shape_of(e->inputs[0]), eq.out, plugin::padding_config(e)};
  if (padding.config.size() != padding.in_shape.size() || padding.out_shape.size() != padding.in_shape.size())
    return std::nullopt;
  for (const PaddingDim& p : padding.config)
    if (p.interior < 0) return std::nullopt;
  std::optional<Runs> runs = padded_runs(padding.in_shape, padding.out_shape, padding.config);
  return PadKernel{*bytes, runs, std::move(padding)};
}
void PadKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  with_float_element_type(element_bytes, [&]<typename T>(T) {
    const T value = in_as<T>(in[1])[0];
    if (runs) pad_runs(*runs, in_as<T>(in[0]), value, out_as<T>(out[0]));
    else padding.apply(in_as<T>(in[0]), value, out_as<T>(out[0]));
  });
}
double PadKernel::expected_ns() const {
  if (element_bytes != 2) return -1;
  const double n = static_cast<double>(count(padding.out_shape));
  return runs ? half_copy_ns(n) : half_copy_ns(n) + half_permute_ns(static_cast<double>(count(padding.in_shape)));
}

std::optional<IotaKernel> IotaKernel::prepare(const Equation& eq) {
  const rk_equation_view* e = eq.view;
  const int32_t t = e->outputs[0].dtype;
  if (!eq.is(Prim::kIota) || (t != RK_DTYPE_I32 && t != RK_DTYPE_F32 && !is_half(t)) || e->num_inputs != 0)
    return std::nullopt;
  const Dims& out = eq.out;
  const int64_t dim = plugin::int_param(e, "dimension");
  if (dim < 0 || dim >= static_cast<int64_t>(out.size()) || out[static_cast<size_t>(dim)] > (int64_t{1} << 31) - 1)
    return std::nullopt;
  return IotaKernel{t, count(out), count(Dims(out.begin() + dim + 1, out.end())), static_cast<size_t>(out[static_cast<size_t>(dim)])};
}
void IotaKernel::run(const rk_tensor_view*, const rk_tensor_view* out, void*) const {
  // Runs of run_length equal values counting 0 .. size-1, written once, then that period copied:
  // no division per element, and no call per element when the runs are single (the last dim).
  // Each value v is stored as the reference stores the double v: exact in i32, rounded to the float.
  const bool is_int = dtype == RK_DTYPE_I32;
  const Half half = Half::of(dtype);
  with_float_element_type(is_half(dtype) ? 2 : 4, [&]<typename T>(T) {
    T* to = out_as<T>(out[0]);
    auto bits = [&](size_t v) -> T {
      if constexpr (sizeof(T) == 2) return half.bits(static_cast<double>(v));
      else return is_int ? static_cast<T>(v) : std::bit_cast<T>(static_cast<float>(v));
    };
    const size_t period = std::min(n, size * run_length);
    for (size_t v = 0, i = 0; i < period; ++v, i += run_length) fill(bits(v), to + i, std::min(run_length, period - i));
    for (size_t i = period; i < n; i += period) std::memcpy(to + i, to, std::min(period, n - i) * sizeof(T));
  });
}
double IotaKernel::expected_ns() const { return is_half(dtype) ? half_copy_ns(static_cast<double>(n)) : -1; }

}  // namespace rematkit::hwy_backend
