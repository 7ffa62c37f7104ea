#include "highway/reduction_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "highway/half_costs.hpp"
#include "highway/half_row_reductions.hpp"
#include "highway/half_values.hpp"
#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {
namespace {

// A reduce_sum, reduce_max or reduce_min's axes: as listed, sorted, and the elements each output
// reduces; nullopt for other primitives, and for dtypes (or f32's min) no loop here reduces.
struct Axes {
  Reduction reduction;
  Dims in_shape, listed, sorted;
  size_t len = 1;
};
std::optional<Axes> reduced_axes(const Equation& eq) {
  const std::optional<Reduce> op = eq.is(Prim::kReduceSum)   ? std::optional(Reduce::kSum)
                                   : eq.is(Prim::kReduceMax) ? std::optional(Reduce::kMax)
                                   : eq.is(Prim::kReduceMin) ? std::optional(Reduce::kMin)
                                                             : std::nullopt;
  if (!op) return std::nullopt;
  const int32_t t = eq.view->outputs[0].dtype;
  if (eq.view->inputs[0].dtype != t || !(is_half(t) || (t == RK_DTYPE_F32 && *op != Reduce::kMin))) return std::nullopt;
  Axes a;
  a.reduction = Reduction{*op, t};
  a.listed = plugin::ints_param(eq.view, "axes");
  a.in_shape = shape_of(eq.view->inputs[0]);
  a.sorted = a.listed;
  std::sort(a.sorted.begin(), a.sorted.end());
  for (int64_t d : a.listed) a.len *= static_cast<size_t>(a.in_shape[d]);
  return a;
}

// The reference's accumulation (structural.cpp's reduce): a sum in double in order; max and min
// keep the first NaN, else the extreme value; an empty reduction gives 0, -inf or inf. A sum's NaN
// is the one its compiled `acc += v` keeps: SSE's addsd keeps its first operand's NaN of two, and
// the reference's build puts the element first (objdump of structural.cpp.o), so the last NaN read.
template <Reduce op>
struct Accumulator {
  static constexpr double init() {
    if constexpr (op == Reduce::kSum) return 0.0;
    else if constexpr (op == Reduce::kMax) return -std::numeric_limits<double>::infinity();
    else return std::numeric_limits<double>::infinity();
  }
  static void add(double& acc, double v) {
    if constexpr (op == Reduce::kSum) acc = std::isnan(v) ? v : acc + v;
    else if (!std::isnan(acc) && (std::isnan(v) || (op == Reduce::kMax ? v > acc : v < acc))) acc = v;
  }
};

// The reduction of one row of len, as the reference accumulates it.
template <Reduce op, class Decode>
double reduced_row(const uint16_t* x, size_t len) {
  double acc = Accumulator<op>::init();
  for (size_t i = 0; i < len; ++i) Accumulator<op>::add(acc, Decode::value(x[i]));
  return acc;
}

// acc combined with v as the reference does when neither is NaN.
template <Reduce op>
double combined(double acc, double v) {
  if constexpr (op == Reduce::kSum) return acc + v;
  else if constexpr (op == Reduce::kMax) return v > acc ? v : acc;
  else return v < acc ? v : acc;
}

// Rows this long or longer are reduced one at a time in SIMD (half_row_reductions.hpp): a row
// whose result could depend on the order again in order.
constexpr size_t kSimdRow = 64;

template <Reduce op, class Decode>
void reduce_long_half_rows(Half half, const uint16_t* x, uint16_t* y, size_t rows, size_t len) {
  const HalfRowLoops& loops = half_row_loops();
  for (size_t r = 0; r < rows; ++r) {
    const uint16_t* row = x + r * len;
    const bool done = op == Reduce::kSum ? loops.sum(!half.is_bf16, row, len, y + r)
                                         : loops.extreme(!half.is_bf16, op == Reduce::kMax, row, len, y + r);
    if (!done) y[r] = half.bits(reduced_row<op, Decode>(row, len));
  }
}

// y[r] = the reduction of row r of x (rows of len), each rounded once as the reference stores it.
// Four rows at a time, NaNs aside (four chains, each in order: without a NaN, the reference's
// results), and a row that holds a NaN again by the reference's rule, for its NaN.
template <Reduce op, class Decode>
void reduce_half_rows(Half half, const uint16_t* x, uint16_t* y, size_t rows, size_t len) {
  if (len >= kSimdRow) return reduce_long_half_rows<op, Decode>(half, x, y, rows, len);
  constexpr size_t kRows = 4;
  size_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    double acc[kRows];
    bool nan[kRows] = {};
    std::fill(acc, acc + kRows, Accumulator<op>::init());
    for (size_t i = 0; i < len; ++i)
      for (size_t k = 0; k < kRows; ++k) {
        const double v = Decode::value(x[(r + k) * len + i]);
        nan[k] = nan[k] || std::isnan(v);
        acc[k] = combined<op>(acc[k], v);
      }
    for (size_t k = 0; k < kRows; ++k)
      y[r + k] = half.bits(nan[k] ? reduced_row<op, Decode>(x + (r + k) * len, len) : acc[k]);
  }
  for (; r < rows; ++r) y[r] = half.bits(reduced_row<op, Decode>(x + r * len, len));
}

// y[j] = the reduction over r < rows of x[r * stride + j] for j in [begin, end), rows in order,
// `acc` a double per j. Sums with plain adds, and a column whose sum is NaN again by the
// reference's rule, as rows are.
template <Reduce op, class Decode>
void reduce_half_leading(Half half, const uint16_t* x, uint16_t* y, size_t rows, size_t stride, size_t begin, size_t end,
                         double* acc) {
  std::fill(acc + begin, acc + end, Accumulator<op>::init());
  if constexpr (op == Reduce::kSum) {
    half_row_loops().add_rows(!half.is_bf16, x + begin, rows, stride, end - begin, acc + begin);
  } else {
    for (size_t r = 0; r < rows; ++r)
      for (size_t j = begin; j < end; ++j) Accumulator<op>::add(acc[j], Decode::value(x[r * stride + j]));
  }
  for (size_t j = begin; j < end; ++j) {
    if (op == Reduce::kSum && std::isnan(acc[j])) {
      acc[j] = Accumulator<op>::init();
      for (size_t r = 0; r < rows; ++r) Accumulator<op>::add(acc[j], Decode::value(x[r * stride + j]));
    }
    y[j] = half.bits(acc[j]);
  }
}

// f(begin, end) over [0, n) in pieces of `grain` on oneTBB when the reduction reads `elements` at
// least kParallelFrom (elementwise.cpp's threshold for the f32 loops), else once. Each output is
// reduced whole by one call, so the bits do not depend on the split.
template <typename F>
void split_over_threads(size_t n, size_t grain, size_t elements, F&& f) {
  constexpr size_t kParallelFrom = size_t{1} << 17;
  if (elements < kParallelFrom || n <= grain) return f(size_t{0}, n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, (n + grain - 1) / grain), [&](const tbb::blocked_range<size_t>& r) {
    f(r.begin() * grain, std::min(n, r.end() * grain));
  });
}

// The element decoders, as types: the loops above are compiled once for each, the conversion
// inlined (element_values.hpp's).
struct DecodeBf16 {
  static float value(uint16_t bits) { return reference::bf16_value(bits); }
};
struct DecodeF16 {
  static float value(uint16_t bits) { return reference::f16_value(bits); }
};

// Calls f(std::integral_constant<Reduce, op>{}, decoder) for the run-time op and half dtype.
template <typename F>
void with_op(Reduction reduction, F&& f) {
  auto with_decoder = [&](auto op) {
    if (reduction.dtype == RK_DTYPE_BF16) f(op, DecodeBf16{});
    else f(op, DecodeF16{});
  };
  switch (reduction.op) {
    case Reduce::kSum: return with_decoder(std::integral_constant<Reduce, Reduce::kSum>{});
    case Reduce::kMax: return with_decoder(std::integral_constant<Reduce, Reduce::kMax>{});
    case Reduce::kMin: return with_decoder(std::integral_constant<Reduce, Reduce::kMin>{});
  }
}

// The operand with its reduced axes moved last (in the workspace, unless they are), then its rows.
template <typename T>
const T* as_rows(const Permutation& rows, const void* in, void* workspace) {
  if (rows.identity()) return static_cast<const T*>(in);
  rows.apply(static_cast<const T*>(in), static_cast<T*>(workspace));
  return static_cast<const T*>(workspace);
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
  return ReduceLeadingKernel{a->reduction, count(eq.out), a->len, outer};
}
double ReduceLeadingKernel::expected_ns() const {
  return reduction.dtype == RK_DTYPE_F32 ? -1 : half_reduce_ns(static_cast<double>(n * len));
}
size_t ReduceLeadingKernel::workspace() const {
  return reduction.dtype == RK_DTYPE_F32 ? 0 : sizeof(double) * (outer == 0 ? 0 : n / outer);
}
void ReduceLeadingKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const size_t row = outer == 0 ? 0 : n / outer;
  if (reduction.dtype == RK_DTYPE_F32) {
    for (size_t o = 0; o < outer; ++o)
      reduce_leading(reduction.op == Reduce::kMax, f32(in[0]) + o * len * row, f32(out[0]) + o * row, len, row);
    return;
  }
  const auto* x = static_cast<const uint16_t*>(in[0].data);
  auto* y = static_cast<uint16_t*>(out[0].data);
  with_op(reduction, [&](auto op, auto decode) {
    for (size_t o = 0; o < outer; ++o)
      split_over_threads(row, 1024, len * row, [&](size_t begin, size_t end) {
        reduce_half_leading<op(), decltype(decode)>(Half::of(reduction.dtype), x + o * len * row, y + o * row, len, row, begin, end,
                                  static_cast<double*>(workspace));
      });
  });
}

std::optional<ReduceKernel> ReduceKernel::prepare(const Equation& eq) {
  const std::optional<Axes> a = reduced_axes(eq);
  if (!a) return std::nullopt;
  Permutation rows{a->in_shape, {}};
  for (int64_t d = 0; d < static_cast<int64_t>(a->in_shape.size()); ++d)
    if (std::find(a->listed.begin(), a->listed.end(), d) == a->listed.end()) rows.perm.push_back(d);
  rows.perm.insert(rows.perm.end(), a->sorted.begin(), a->sorted.end());
  return ReduceKernel{a->reduction, count(eq.out), a->len, std::move(rows)};
}
double ReduceKernel::expected_ns() const {
  if (reduction.dtype == RK_DTYPE_F32) return -1;
  const double elements = static_cast<double>(n * len);
  return half_reduce_ns(elements) + (rows.identity() ? 0.0 : half_permute_ns(elements));
}
size_t ReduceKernel::workspace() const { return rows.identity() ? 0 : reduction.element_bytes() * rows.count(); }
void ReduceKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  if (reduction.dtype == RK_DTYPE_F32)
    return reduce_rows(reduction.op == Reduce::kMax, as_rows<float>(rows, in[0].data, workspace), f32(out[0]), n, len);
  const uint16_t* data = as_rows<uint16_t>(rows, in[0].data, workspace);
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  with_op(reduction, [&](auto op, auto decode) {
    split_over_threads(n, 16, n * len, [&](size_t begin, size_t end) {
      reduce_half_rows<op(), decltype(decode)>(Half::of(reduction.dtype), data + begin * len, y + begin, end - begin, len);
    });
  });
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
