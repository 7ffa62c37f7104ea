#include "highway/reduction_kernels.hpp"

#include <algorithm>

#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {
namespace {

// A reduce_sum or reduce_max's axes: as listed, sorted, and the elements each output reduces.
struct Axes {
  Dims in_shape, listed, sorted;
  size_t len = 1;
};
std::optional<Axes> reduced_axes(const Equation& eq) {
  if ((!eq.is(Prim::kReduceSum) && !eq.is(Prim::kReduceMax)) || !eq.all_f32) return std::nullopt;
  Axes a;
  a.listed = plugin::ints_param(eq.view, "axes");
  a.in_shape = shape_of(eq.view->inputs[0]);
  a.sorted = a.listed;
  std::sort(a.sorted.begin(), a.sorted.end());
  for (int64_t d : a.listed) a.len *= static_cast<size_t>(a.in_shape[d]);
  return a;
}

}  // namespace

std::optional<ReduceLeadingKernel> ReduceLeadingKernel::prepare(const Equation& eq) {
  const std::optional<Axes> a = reduced_axes(eq);
  if (!a) return std::nullopt;
  const Dims& sorted = a->sorted;
  bool adjacent = !sorted.empty() && sorted.back() + 1 < static_cast<int64_t>(a->in_shape.size());
  for (size_t i = 1; i < sorted.size(); ++i) adjacent = adjacent && sorted[i] == sorted[i - 1] + 1;
  if (!adjacent) return std::nullopt;
  size_t outer = 1;
  for (int64_t d = 0; d < sorted.front(); ++d) outer *= static_cast<size_t>(a->in_shape[d]);
  return ReduceLeadingKernel{eq.is(Prim::kReduceMax), count(eq.out), a->len, outer};
}
void ReduceLeadingKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  const size_t row = n / outer;
  for (size_t o = 0; o < outer; ++o) reduce_leading(is_max, f32(in[0]) + o * len * row, f32(out[0]) + o * row, len, row);
}

std::optional<ReduceKernel> ReduceKernel::prepare(const Equation& eq) {
  const std::optional<Axes> a = reduced_axes(eq);
  if (!a) return std::nullopt;
  Permutation rows{a->in_shape, {}};
  for (int64_t d = 0; d < static_cast<int64_t>(a->in_shape.size()); ++d)
    if (std::find(a->listed.begin(), a->listed.end(), d) == a->listed.end()) rows.perm.push_back(d);
  rows.perm.insert(rows.perm.end(), a->sorted.begin(), a->sorted.end());
  return ReduceKernel{eq.is(Prim::kReduceMax), count(eq.out), a->len, std::move(rows)};
}
size_t ReduceKernel::workspace() const { return rows.identity() ? 0 : sizeof(float) * rows.count(); }
void ReduceKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const float* data = f32(in[0]);
  if (!rows.identity()) {
    rows.apply(data, static_cast<float*>(workspace));
    data = static_cast<const float*>(workspace);
  }
  reduce_rows(is_max, data, f32(out[0]), n, len);
}

std::optional<SoftmaxKernel> SoftmaxKernel::prepare(const Equation& eq) {
  if (!eq.is(Prim::kSoftmax) || !eq.all_f32) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(eq.out.size());
  const int64_t axis = plugin::int_param(eq.view, "axis");
  if (rank == 0 || eq.view->inputs[0].dtype != RK_DTYPE_F32 || (axis != rank - 1 && axis != -1)) return std::nullopt;
  return SoftmaxKernel{count(eq.out), static_cast<size_t>(eq.out.back())};
}
void SoftmaxKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  softmax_rows(f32(in[0]), f32(out[0]), len == 0 ? 0 : n / len, len);
}

}  // namespace rematkit::hwy_backend
