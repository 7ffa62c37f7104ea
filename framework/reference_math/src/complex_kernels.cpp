// The reference math on complex operands (c64, c128): an operand's real parts in Input::data and
// its imaginary parts in Input::imag. Primitives that act on each part alone (adding, moving
// elements, summing) run the real kernel once per part; the others are written here on
// std::complex<double>, as lax defines them (jax/_src/lax/lax.py, jax/_src/lax/fft.py).
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "loops.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::reference {
namespace {

using Complex = std::complex<double>;

// Element `i` of an operand as a complex number (a real operand's imaginary part is 0).
Complex element(const Input& x, int64_t i) {
  return {x.data[static_cast<size_t>(i)], x.imag.empty() ? 0.0 : x.imag[static_cast<size_t>(i)]};
}

void store(const Output& out, int64_t i, Complex v) {
  out.data[static_cast<size_t>(i)] = v.real();
  out.imag[static_cast<size_t>(i)] = v.imag();
}

// The primitives whose complex result is the real kernel applied to the real parts and, apart, to
// the imaginary parts: they are linear over the reals, or only move elements.
bool acts_on_each_part(Prim prim) {
  static constexpr Prim kPartwise[] = {
      Prim::kAdd,     Prim::kSub,       Prim::kAddAny,         Prim::kNeg,          Prim::kStopGradient,
      Prim::kName,    Prim::kReshape,   Prim::kSqueeze,        Prim::kBroadcastInDim, Prim::kTranspose,
      Prim::kSlice,   Prim::kPad,       Prim::kConcatenate,    Prim::kRev,          Prim::kCopy,
      Prim::kOptimizationBarrier, Prim::kDynamicSlice, Prim::kDynamicUpdateSlice, Prim::kReduceSum,
      Prim::kCumsum,  Prim::kSplit,     Prim::kGather,         Prim::kScatterAdd,   Prim::kSelectN,
      Prim::kShardingConstraint, Prim::kReshard};
  return std::find(std::begin(kPartwise), std::end(kPartwise), prim) != std::end(kPartwise);
}

// Runs the real kernel on part `part` (0 real, 1 imaginary) of every complex operand; real operands
// (a predicate, indices) are passed as they are.
void compute_part(Prim prim, const KernelParams& p, std::span<const Input> in, const Output& out, int part) {
  std::vector<Input> parts(in.begin(), in.end());
  for (Input& x : parts) {
    if (!is_complex_code(x.dtype)) continue;
    x = Input{part == 0 ? x.data : x.imag, x.shape, complex_part_code(x.dtype), {}};
  }
  const int32_t out_code = is_complex_code(out.dtype) ? complex_part_code(out.dtype) : out.dtype;
  compute(prim, p, parts, Output{part == 0 ? out.data : out.imag, out.shape, out_code, {}});
}

template <typename Fn>
void map_complex_unary(const Input& x, const Output& out, Fn fn) {
  for (int64_t i = 0; i < static_cast<int64_t>(out.data.size()); ++i) store(out, i, fn(element(x, i)));
}

// Two operands with lax's broadcasting of rank-0 and size-1 dims, as map_binary.
template <typename Fn>
void map_complex_binary(const Input& a, const Input& b, const Output& out, Fn fn) {
  const Dims sa = strides_of(a.shape), sb = strides_of(b.shape);
  for (int64_t i = 0; i < static_cast<int64_t>(out.data.size()); ++i)
    fn(i, element(a, broadcast_index(a.shape, sa, out.shape, i)), element(b, broadcast_index(b.shape, sb, out.shape, i)));
}

Complex integer_power(Complex x, int64_t y) {  // lax.integer_pow: repeated multiplication
  Complex r = 1.0;
  for (int64_t i = 0; i < (y < 0 ? -y : y); ++i) r *= x;
  return y < 0 ? 1.0 / r : r;
}

// dot_general of complex operands from four real products of their parts.
void complex_dot_general(const DotDims& dims, const Input& a, const Input& b, const Output& out) {
  const int32_t part = complex_part_code(out.dtype);
  const size_t n = out.data.size();
  std::vector<double> product(n);
  auto dot = [&](std::span<const double> x, std::span<const double> y, double sign, std::span<double> into) {
    dot_general(dims, Input{x, a.shape, part, {}}, Input{y, b.shape, part, {}}, Output{product, out.shape, part, {}});
    for (size_t i = 0; i < n; ++i) into[i] += sign * product[i];
  };
  std::fill(out.data.begin(), out.data.end(), 0.0);
  std::fill(out.imag.begin(), out.imag.end(), 0.0);
  dot(a.data, b.data, 1, out.data);
  dot(a.imag, b.imag, -1, out.data);
  dot(a.data, b.imag, 1, out.imag);
  dot(a.imag, b.data, 1, out.imag);
}

// The discrete Fourier transform of every line of `values` (row-major in `shape`) along `axis`:
// the forward sign e^{-2 pi i jk/n}, or the inverse's e^{+2 pi i jk/n} divided by n (numpy's and
// XLA's convention). O(n^2) a line: the reference wants plain sums, not speed.
void dft_along(std::vector<Complex>& values, const Dims& shape, size_t axis, bool inverse) {
  const int64_t n = shape[axis];
  if (n == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = count(shape) / (n * inner);
  std::vector<Complex> twiddle(static_cast<size_t>(n)), line(static_cast<size_t>(n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n; ++k)
    twiddle[static_cast<size_t>(k)] = std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < inner; ++r) {
      const int64_t base = o * n * inner + r;
      for (int64_t k = 0; k < n; ++k) {
        Complex sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += values[static_cast<size_t>(base + j * inner)] * twiddle[static_cast<size_t>((j * k) % n)];
        line[static_cast<size_t>(k)] = inverse ? sum / static_cast<double>(n) : sum;
      }
      for (int64_t k = 0; k < n; ++k) values[static_cast<size_t>(base + k * inner)] = line[static_cast<size_t>(k)];
    }
}

// fft.py's four transforms over the last fft_lengths.size() dims.
void fft(FftKind kind, const Dims& lengths, const Input& x, const Output& out) {
  const size_t rank = x.shape.size(), first = rank - lengths.size();
  Dims shape(x.shape.begin(), x.shape.end());
  std::vector<Complex> values(static_cast<size_t>(count(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = element(x, static_cast<int64_t>(i));
  if (kind == FftKind::kIrfft) {
    // Inverse transforms along all but the last dim, then the last from its Hermitian half: the
    // n // 2 + 1 bins given (the rest of a line zero if fewer), the others their mirrors' conjugates.
    for (size_t d = first; d + 1 < rank; ++d) dft_along(values, shape, d, true);
    const int64_t given = shape.back(), n = lengths.back(), half = n / 2 + 1;
    Dims full = shape;
    full.back() = n;
    std::vector<Complex> spectrum(static_cast<size_t>(count(full)));
    for (int64_t line = 0; line < count(full) / n; ++line)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t source = k < half ? k : n - k;
        const Complex v = source < given ? values[static_cast<size_t>(line * given + source)] : Complex{};
        spectrum[static_cast<size_t>(line * n + k)] = k < half ? v : std::conj(v);
      }
    dft_along(spectrum, full, rank - 1, true);
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = spectrum[i].real();
    return;
  }
  for (size_t d = first; d < rank; ++d) dft_along(values, shape, d, kind == FftKind::kIfft);
  if (kind != FftKind::kRfft) {
    for (size_t i = 0; i < values.size(); ++i) store(out, static_cast<int64_t>(i), values[i]);
    return;
  }
  const int64_t n = shape.back(), kept = out.shape.back();  // RFFT keeps bins 0 .. n // 2
  for (int64_t line = 0; line < count(shape) / n; ++line)
    for (int64_t k = 0; k < kept; ++k) store(out, line * kept + k, values[static_cast<size_t>(line * n + k)]);
}

}  // namespace

void compute_complex(Prim prim, const KernelParams& p, std::span<const Input> in, const Output& out) {
  if (prim == Prim::kGather && !p.fill) {  // slicing.py's _gather_fill: a dropped window is nan + 0j
    KernelParams zero_fill = p;
    zero_fill.fill = 0.0;
    compute_part(prim, p, in, out, 0);
    return compute_part(prim, zero_fill, in, out, 1);
  }
  if (acts_on_each_part(prim)) {
    compute_part(prim, p, in, out, 0);
    compute_part(prim, p, in, out, 1);
    return;
  }
  const bool complex_out = is_complex_code(out.dtype);
  if (prim == Prim::kConvertElementType) {
    compute_part(prim, p, in, out, 0);  // to a real dtype, the real part alone
    if (!complex_out) return;
    if (is_complex_code(in[0].dtype)) return compute_part(prim, p, in, out, 1);
    std::fill(out.imag.begin(), out.imag.end(), 0.0);
    return;
  }
  auto binary = [&](auto fn) { map_complex_binary(in[0], in[1], out, fn); };
  auto unary = [&](auto fn) { map_complex_unary(in[0], out, fn); };
  if (prim == Prim::kReal) return static_cast<void>(std::copy(in[0].data.begin(), in[0].data.end(), out.data.begin()));
  if (prim == Prim::kImag) return static_cast<void>(std::copy(in[0].imag.begin(), in[0].imag.end(), out.data.begin()));
  if (prim == Prim::kConj) return unary([](Complex x) { return std::conj(x); });
  if (prim == Prim::kComplex) return binary([&](int64_t i, Complex re, Complex im) { store(out, i, {re.real(), im.real()}); });
  if (prim == Prim::kMul) return binary([&](int64_t i, Complex a, Complex b) { store(out, i, a * b); });
  if (prim == Prim::kDiv) return binary([&](int64_t i, Complex a, Complex b) { store(out, i, a / b); });
  if (prim == Prim::kEq) return binary([&](int64_t i, Complex a, Complex b) { out.data[static_cast<size_t>(i)] = a == b; });
  if (prim == Prim::kNe) return binary([&](int64_t i, Complex a, Complex b) { out.data[static_cast<size_t>(i)] = a != b; });
  if (prim == Prim::kAbs) {
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = std::hypot(in[0].data[i], in[0].imag[i]);
    return;
  }
  if (prim == Prim::kExp) return unary([](Complex x) { return std::exp(x); });
  if (prim == Prim::kLog) return unary([](Complex x) { return std::log(x); });
  if (prim == Prim::kSin) return unary([](Complex x) { return std::sin(x); });
  if (prim == Prim::kCos) return unary([](Complex x) { return std::cos(x); });
  if (prim == Prim::kSqrt) return unary([](Complex x) { return std::sqrt(x); });
  if (prim == Prim::kSquare) return unary([](Complex x) { return x * x; });
  if (prim == Prim::kIntegerPow) return unary([y = p.integer](Complex x) { return integer_power(x, y); });
  if (prim == Prim::kDotGeneral) return complex_dot_general(p.dims, in[0], in[1], out);
  if (prim == Prim::kFft) return fft(static_cast<FftKind>(p.integer), p.axes, in[0], out);
  throw std::invalid_argument("no reference kernel for " + std::string(prim_name(prim)) + " on complex numbers");
}

}  // namespace rematkit::reference
