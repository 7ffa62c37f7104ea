#include <algorithm>
#include <cmath>
#include <limits>

#include "loops.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::reference {
namespace {

// Calls fn(out_index, in_index) for every element of `in_shape`, where out_index drops `axes`.
template <typename Fn>
void for_each_reduced(std::span<const int64_t> in_shape, const std::vector<int64_t>& axes, Fn fn) {
  Dims out_shape;
  std::vector<bool> reduced(in_shape.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (!reduced[d]) out_shape.push_back(in_shape[d]);
  const Dims out_strides = strides_of(out_shape);
  const int64_t n = count(in_shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, out = 0;
    int k = static_cast<int>(out_shape.size()) - 1;
    for (int d = static_cast<int>(in_shape.size()) - 1; d >= 0; --d) {
      const int64_t c = rem % in_shape[d];
      rem /= in_shape[d];
      if (!reduced[d]) out += c * out_strides[k--];
    }
    fn(out, i);
  }
}

}  // namespace

// select_n(p, *cases): case p[i] (an out-of-range predicate clamps to the nearest case).
void select_n(std::span<const Input> in, const Output& out) {
  const Input& pred = in[0];
  const int64_t cases = static_cast<int64_t>(in.size()) - 1;
  for (int64_t i = 0; i < static_cast<int64_t>(out.data.size()); ++i) {
    const int64_t which = static_cast<int64_t>(pred.data[pred.shape.empty() ? 0 : i]);
    out.data[i] = in[1 + std::clamp<int64_t>(which, 0, cases - 1)].data[i];
  }
}

// Sums and products in double in row-major order; max and min propagate NaN; an empty reduction
// gives 0, 1, or the dtype's lowest (max) or highest (min) value.
void reduce(Reduction kind, const std::vector<int64_t>& axes, const Input& x, const Output& out) {
  const IntegerFormat format = integer_format(out.dtype);
  const bool integer = format.bits != 0;
  const double highest = integer ? integer_highest(format) : std::numeric_limits<double>::infinity();
  const double lowest = integer ? integer_lowest(format) : -highest;
  const double init = kind == Reduction::kSum    ? 0.0
                      : kind == Reduction::kProd ? 1.0
                      : kind == Reduction::kMax  ? lowest
                                                 : highest;
  std::fill(out.data.begin(), out.data.end(), init);
  for_each_reduced(x.shape, axes, [&](int64_t o, int64_t i) {
    const double v = x.data[i];
    double& acc = out.data[o];
    if (kind == Reduction::kSum) acc += v;
    else if (kind == Reduction::kProd) acc *= v;
    else if (!std::isnan(acc) && (std::isnan(v) || (kind == Reduction::kMax ? v > acc : v < acc))) acc = v;
  });
}

// lax.argmax/argmin (lax._compute_argminmax): the first index of the extreme value along the
// axis, a NaN counting as more extreme than any number.
void arg_extreme(bool is_max, int64_t axis, const Input& x, const Output& out) {
  std::vector<double> best(out.data.size());
  std::vector<bool> seen(out.data.size(), false);
  const int64_t inner = count(x.shape.subspan(static_cast<size_t>(axis) + 1));
  for_each_reduced(x.shape, {axis}, [&](int64_t o, int64_t i) {
    const double v = x.data[i];
    const bool better = !seen[o] || (!std::isnan(best[o]) && (std::isnan(v) || (is_max ? v > best[o] : v < best[o])));
    if (!better) return;
    seen[o] = true;
    best[o] = v;
    out.data[o] = static_cast<double>((i / inner) % x.shape[axis]);
  });
}

// lax.cumsum, cumprod, cummax, cummin, cumlogsumexp: the running reduction along `axis` in double,
// from the far end when `reverse`; max and min propagate NaN, logsumexp is logaddexp's
// max(a, b) + log1p(exp(-|a - b|)) (a + b where that difference is NaN: two equal infinities).
void cumulative(Cumulative kind, int64_t axis, bool reverse, const Input& x, const Output& out) {
  auto combine = [kind](double acc, double v) {
    switch (kind) {
      case Cumulative::kSum: return acc + v;
      case Cumulative::kProd: return acc * v;
      case Cumulative::kMax: return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
      case Cumulative::kMin: return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
      case Cumulative::kLogSumExp: {
        const double delta = acc - v;
        return std::isnan(delta) ? acc + v : std::max(acc, v) + std::log1p(std::exp(-std::fabs(delta)));
      }
    }
    return v;
  };
  const int64_t size = x.shape[axis];
  const int64_t inner = count(x.shape.subspan(static_cast<size_t>(axis) + 1));
  const int64_t outer = size == 0 ? 0 : count(x.shape) / (size * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double acc = 0;
      for (int64_t k = 0; k < size; ++k) {
        const int64_t j = reverse ? size - 1 - k : k;
        const int64_t at = (o * size + j) * inner + in;
        acc = k == 0 ? x.data[at] : combine(acc, x.data[at]);
        out.data[at] = acc;
      }
    }
}

void broadcast_in_dim(const std::vector<int64_t>& dims, const Input& x, const Output& out) {
  const Dims xs = strides_of(x.shape);
  Dims coord;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, coord);
    int64_t idx = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      if (x.shape[i] != 1) idx += coord[dims[i]] * xs[i];
    out.data[o] = x.data[idx];
  }
}

void transpose(const std::vector<int64_t>& perm, const Input& x, const Output& out) {
  const Dims xs = strides_of(x.shape);
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    int64_t rem = o, idx = 0;
    for (int d = static_cast<int>(out.shape.size()) - 1; d >= 0; --d) {
      idx += (rem % out.shape[d]) * xs[perm[d]];
      rem /= out.shape[d];
    }
    out.data[o] = x.data[idx];
  }
}

// jax.nn.softmax: exp(x - max) / sum(exp(x - max)) along `axis`.
void softmax(int64_t axis, const Input& x, const Output& out) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += rank;
  Dims reduced_shape(x.shape.begin(), x.shape.end());
  reduced_shape.erase(reduced_shape.begin() + axis);
  const int64_t groups = count(reduced_shape);
  std::vector<double> maxes(static_cast<size_t>(groups), -std::numeric_limits<double>::infinity());
  std::vector<double> sums(static_cast<size_t>(groups), 0.0);
  std::vector<double> exps(x.data.size());
  for_each_reduced(x.shape, {axis}, [&](int64_t g, int64_t i) { maxes[g] = std::max(maxes[g], x.data[i]); });
  for_each_reduced(x.shape, {axis}, [&](int64_t g, int64_t i) {
    exps[i] = std::exp(x.data[i] - maxes[g]);
    sums[g] += exps[i];
  });
  for_each_reduced(x.shape, {axis}, [&](int64_t g, int64_t i) { out.data[i] = exps[i] / sums[g]; });
}

// lax.sort: each line along `dimension` ordered by the first `num_keys` operands, lexicographically
// and stably; output `output` is that operand in the keys' order. Floats compare as
// lax._sort_lt_comparator makes them: -0 equal to 0, every NaN equal and after everything.
void sort(int64_t dimension, int64_t num_keys, int64_t output, std::span<const Input> in, const Output& out) {
  const std::span<const int64_t> shape = in[0].shape;
  const int64_t n = shape.empty() ? 1 : shape[static_cast<size_t>(dimension)];
  if (count(shape) == 0) return;
  const Dims strides = strides_of(shape);
  const int64_t stride = strides[static_cast<size_t>(dimension)];
  auto less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::vector<int64_t> order(static_cast<size_t>(n));
  Dims coord;
  for (int64_t start = 0; start < count(shape); ++start) {
    coords_of(start, shape, coord);
    if (coord[static_cast<size_t>(dimension)] != 0) continue;  // one line per start at index 0
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = start + i * stride;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < num_keys; ++k) {
        const double x = in[static_cast<size_t>(k)].data[a], y = in[static_cast<size_t>(k)].data[b];
        if (less(x, y)) return true;
        if (less(y, x)) return false;
      }
      return false;
    });
    for (int64_t i = 0; i < n; ++i)
      out.data[start + i * stride] = in[static_cast<size_t>(output)].data[order[static_cast<size_t>(i)]];
  }
}

}  // namespace rematkit::reference
