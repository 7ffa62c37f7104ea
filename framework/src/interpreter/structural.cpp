#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.hpp"

namespace rematkit::kernels {
namespace {

// Calls fn(out_index, in_index) for every element of `in_shape`, where out_index drops `axes`.
template <typename Fn>
void for_each_reduced(const Shape& in_shape, const std::vector<int64_t>& axes, Fn fn) {
  Shape out_shape;
  std::vector<bool> reduced(in_shape.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (!reduced[d]) out_shape.push_back(in_shape[d]);
  const auto out_strides = row_major_strides(out_shape);
  const int64_t n = num_elements(in_shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, out = 0;
    int k = static_cast<int>(out_shape.size()) - 1;
    for (int d = static_cast<int>(in_shape.size()) - 1; d >= 0; --d) {
      int64_t c = rem % in_shape[d];
      rem /= in_shape[d];
      if (!reduced[d]) out += c * out_strides[k--];
    }
    fn(out, i);
  }
}

}  // namespace

Tensor reduce(Prim prim, const std::vector<int64_t>& axes, const Tensor& x, const Type& out, Arithmetic arithmetic) {
  const bool is_max = prim == Prim::kReduceMax;
  const double init = !is_max ? 0.0
                      : out.dtype == DType::kI32 ? static_cast<double>(std::numeric_limits<int32_t>::min())
                                                 : -std::numeric_limits<double>::infinity();
  Tensor r = Tensor::filled(out, init);
  for_each_reduced(x.type.shape, axes, [&](int64_t o, int64_t i) {
    double v = x.data[i];
    if (!is_max) r.data[o] += v;
    else if (std::isnan(v) || v > r.data[o]) r.data[o] = std::isnan(r.data[o]) ? r.data[o] : v;
  });
  for (double& v : r.data) v = round_to_dtype(v, out.dtype, arithmetic);
  return r;
}

Tensor broadcast_in_dim(const std::vector<int64_t>& dims, const Tensor& x, const Type& out) {
  Tensor r{out, std::vector<double>(static_cast<size_t>(out.num_elements()))};
  const auto xs = row_major_strides(x.type.shape);
  for (int64_t o = 0; o < r.size(); ++o) {
    int64_t rem = o, idx = 0;
    std::vector<int64_t> coord(out.shape.size());
    for (int d = static_cast<int>(out.shape.size()) - 1; d >= 0; --d) {
      coord[d] = rem % out.shape[d];
      rem /= out.shape[d];
    }
    for (size_t i = 0; i < dims.size(); ++i)
      if (x.type.shape[i] != 1) idx += coord[dims[i]] * xs[i];
    r.data[o] = x.data[idx];
  }
  return r;
}

Tensor transpose(const std::vector<int64_t>& perm, const Tensor& x, const Type& out) {
  Tensor r{out, std::vector<double>(static_cast<size_t>(out.num_elements()))};
  const auto xs = row_major_strides(x.type.shape);
  for (int64_t o = 0; o < r.size(); ++o) {
    int64_t rem = o, idx = 0;
    for (int d = static_cast<int>(out.shape.size()) - 1; d >= 0; --d) {
      idx += (rem % out.shape[d]) * xs[perm[d]];
      rem /= out.shape[d];
    }
    r.data[o] = x.data[idx];
  }
  return r;
}

// jax.nn.softmax: exp(x - max) / sum(exp(x - max)) along `axis`.
Tensor softmax(int64_t axis, const Tensor& x, Arithmetic arithmetic) {
  const int rank = x.type.rank();
  if (axis < 0) axis += rank;
  Shape reduced_shape = x.type.shape;
  reduced_shape.erase(reduced_shape.begin() + axis);
  const int64_t groups = num_elements(reduced_shape);
  std::vector<double> maxes(static_cast<size_t>(groups), -std::numeric_limits<double>::infinity());
  std::vector<double> sums(static_cast<size_t>(groups), 0.0);
  std::vector<double> exps(x.data.size());
  for_each_reduced(x.type.shape, {axis}, [&](int64_t g, int64_t i) { maxes[g] = std::max(maxes[g], x.data[i]); });
  for_each_reduced(x.type.shape, {axis}, [&](int64_t g, int64_t i) {
    exps[i] = std::exp(x.data[i] - maxes[g]);
    sums[g] += exps[i];
  });
  Tensor r{x.type, std::vector<double>(x.data.size())};
  for_each_reduced(x.type.shape, {axis}, [&](int64_t g, int64_t i) {
    r.data[i] = round_to_dtype(exps[i] / sums[g], x.type.dtype, arithmetic);
  });
  return r;
}

}  // namespace rematkit::kernels
