// bf16 and f16 row reductions (half_row_reductions.hpp), compiled for every Highway target
// (foreach_target.h) and dispatched once. A sum promotes each element to double exactly and adds in
// four accumulators; beside it, the elements' exponents tell whether any order of those additions
// could round, and the sum of their magnitudes how far such roundings could take it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/half_row_reductions.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <bit>
#include <limits>

#include "highway/half_row_reductions.hpp"
#include "rematkit/reference_math/element_values.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Where a half dtype keeps its exponent: bits >> shift & mask; mask itself for an infinity or NaN.
struct RowExponent {
  uint32_t shift, mask;
  int fraction_bits;
  static RowExponent of(bool f16) { return f16 ? RowExponent{10, 0x1F, 10} : RowExponent{7, 0xFF, 7}; }
};

// The exponent fields a row holds: the largest of all, the smallest of its nonzero elements (a
// subnormal's counted as 1, whose ulp it shares).
struct RowFields {
  uint32_t largest = 0, smallest_nonzero = 0xFFFF;
};

// The f32 values of 16-bit elements held in u32 lanes (exact: an f32 holds every bf16 and f16).
template <class DF, class VU>
HWY_INLINE hn::Vec<DF> ValuesOf(DF df, bool f16, VU bits, const uint16_t* x) {
  if (!f16) return hn::BitCast(df, hn::ShiftLeft<16>(bits));
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(x)));
}

// The fields of 16-bit elements, one per lane.
template <class D16>
HWY_INLINE void Track(D16 d16, const RowExponent& e, hn::Vec<D16> bits, hn::Vec<D16>& largest, hn::Vec<D16>& smallest) {
  const auto field = hn::And(hn::ShiftRightSame(bits, static_cast<int>(e.shift)), hn::Set(d16, static_cast<uint16_t>(e.mask)));
  const auto nonzero = hn::Ne(hn::And(bits, hn::Set(d16, uint16_t{0x7FFF})), hn::Zero(d16));
  largest = hn::Max(largest, field);
  smallest = hn::Min(smallest, hn::IfThenElse(nonzero, hn::Max(field, hn::Set(d16, uint16_t{1})), hn::Set(d16, uint16_t{0xFFFF})));
}

HWY_INLINE void TrackScalar(const RowExponent& e, uint16_t bits, RowFields& f) {
  const uint32_t field = (bits >> e.shift) & e.mask;
  f.largest = field > f.largest ? field : f.largest;
  if ((bits & 0x7FFF) != 0) {
    const uint32_t counted = field < 1 ? 1 : field;
    f.smallest_nonzero = counted < f.smallest_nonzero ? counted : f.smallest_nonzero;
  }
}

// Whether every partial sum of len finite elements with these fields is exact in double: each
// element is a multiple of the smallest nonzero one's ulp, 2^(smallest - bias - fraction_bits), and
// below 2^(largest - bias + 1), so a partial sum is under
// len * 2^(largest - smallest + fraction_bits + 1) such ulps; 2^53 of them are exact.
HWY_INLINE bool Exact(const RowExponent& e, const RowFields& f, size_t len) {
  if (f.smallest_nonzero == 0xFFFF) return true;  // zeros alone
  const int largest = f.largest < 1 ? 1 : static_cast<int>(f.largest);
  const int spread = largest - static_cast<int>(f.smallest_nonzero);
  return spread + static_cast<int>(std::bit_width(len - 1)) + e.fraction_bits + 1 <= 53;
}

HWY_INLINE double ScalarValue(bool f16, uint16_t bits) {
  return f16 ? reference::f16_value(bits) : reference::bf16_value(bits);
}

// A double stored as the reference stores an element: rounded to f32, then to the half dtype.
HWY_INLINE uint16_t Stored(bool f16, double v) {
  const float f = static_cast<float>(v);
  return f16 ? reference::f16_bits(f) : reference::bf16_bits(f);
}

// The stored bits of a sum computed in some order with `magnitude` the sum of the elements'
// magnitudes, when every order gives them (half_row_reductions.hpp): both ends of the interval
// around it that holds every order's sum store the same bits. The bound is doubled (the reference's
// order and this one each stray from the exact sum) and doubled again for slack that covers the
// roundings of `magnitude` and of the ends themselves.
HWY_INLINE bool StoredInAnyOrder(bool f16, double sum, double magnitude, size_t len, uint16_t* bits) {
  const double reach = magnitude * static_cast<double>(len) * 0x1p-51;
  const uint16_t low = Stored(f16, sum - reach), high = Stored(f16, sum + reach);
  if (low != high) return false;
  *bits = low;
  return true;
}

// The row's sum in double (its magnitudes' sum when kMagnitude), with the fields it holds into
// *fields unless null; four accumulators take turns over pieces of a double vector's lanes.
template <bool kMagnitude>
double RowTotal(bool f16, const uint16_t* x, size_t len, RowFields* fields, const RowExponent& e) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<uint32_t, decltype(dd)> du;
  const hn::Rebind<uint16_t, decltype(dd)> dpiece;
  const size_t block = hn::Lanes(d16), piece = hn::Lanes(dd);
  hn::Vec<decltype(dd)> acc[4] = {hn::Zero(dd), hn::Zero(dd), hn::Zero(dd), hn::Zero(dd)};
  auto largest = hn::Zero(d16), smallest = hn::Set(d16, uint16_t{0xFFFF});
  size_t i = 0;
  for (; i + block <= len; i += block) {
    if (fields) Track(d16, e, hn::LoadU(d16, x + i), largest, smallest);
    for (size_t j = 0; j < block; j += piece) {
      const uint16_t* at = x + i + j;
      const auto v = hn::PromoteTo(dd, ValuesOf(df, f16, hn::PromoteTo(du, hn::LoadU(dpiece, at)), at));
      auto& a = acc[(j / piece) % 4];
      a = hn::Add(a, kMagnitude ? hn::Abs(v) : v);
    }
  }
  if (fields) *fields = RowFields{hn::GetLane(hn::MaxOfLanes(d16, largest)), hn::GetLane(hn::MinOfLanes(d16, smallest))};
  double total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3]))));
  for (; i < len; ++i) {
    if (fields) TrackScalar(e, x[i], *fields);
    const double v = ScalarValue(f16, x[i]);
    total += kMagnitude && v < 0 ? -v : v;
  }
  return total;
}

bool RowSumImpl(bool f16, const uint16_t* x, size_t len, uint16_t* bits) {
  const RowExponent e = RowExponent::of(f16);
  RowFields f;
  const double sum = RowTotal<false>(f16, x, len, &f, e);
  if (f.largest == e.mask) return false;  // an infinity or a NaN
  if (Exact(e, f, len)) {
    *bits = Stored(f16, sum);
    return true;
  }
  return StoredInAnyOrder(f16, sum, RowTotal<true>(f16, x, len, nullptr, e), len, bits);
}

bool RowExtremeImpl(bool f16, bool max, const uint16_t* x, size_t len, uint16_t* bits) {
  const RowExponent e = RowExponent::of(f16);
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint16_t, decltype(df)> d16;
  const size_t lanes = hn::Lanes(df);
  const float none = max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto best = hn::Set(df, none);
  auto largest = hn::Zero(d16), smallest = hn::Set(d16, uint16_t{0xFFFF});
  size_t i = 0;
  for (; i + lanes <= len; i += lanes) {
    const auto half = hn::LoadU(d16, x + i);
    Track(d16, e, half, largest, smallest);
    const auto v = ValuesOf(df, f16, hn::PromoteTo(du, half), x + i);
    best = max ? hn::Max(best, v) : hn::Min(best, v);
  }
  RowFields f{hn::GetLane(hn::MaxOfLanes(d16, largest)), 0};
  float result = hn::GetLane(max ? hn::MaxOfLanes(df, best) : hn::MinOfLanes(df, best));
  for (; i < len; ++i) {
    TrackScalar(e, x[i], f);
    const auto v = static_cast<float>(ScalarValue(f16, x[i]));
    result = max ? (v > result ? v : result) : (v < result ? v : result);
  }
  if (f.largest == e.mask || result == 0.0f) return false;
  *bits = Stored(f16, result);
  return true;
}

void AddRowsImpl(bool f16, const uint16_t* x, size_t rows, size_t stride, size_t n, double* acc) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<uint32_t, decltype(dd)> du;
  const hn::Rebind<uint16_t, decltype(dd)> d16;
  const size_t lanes = hn::Lanes(dd);
  for (size_t r = 0; r < rows; ++r) {
    const uint16_t* row = x + r * stride;
    size_t j = 0;
    for (; j + lanes <= n; j += lanes) {
      const auto v = hn::PromoteTo(dd, ValuesOf(df, f16, hn::PromoteTo(du, hn::LoadU(d16, row + j)), row + j));
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j), v), dd, acc + j);
    }
    for (; j < n; ++j) acc[j] += ScalarValue(f16, row[j]);
  }
}

void ChooseRowTarget() {}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rematkit::hwy_backend {

HWY_EXPORT(RowSumImpl);
HWY_EXPORT(RowExtremeImpl);
HWY_EXPORT(AddRowsImpl);
HWY_EXPORT(ChooseRowTarget);

const HalfRowLoops& half_row_loops() {
  static const HalfRowLoops chosen = [] {
    HWY_DYNAMIC_DISPATCH(ChooseRowTarget)();  // chooses the target before the tables are read
    return HalfRowLoops{&HWY_DYNAMIC_DISPATCH(RowSumImpl), &HWY_DYNAMIC_DISPATCH(RowExtremeImpl),
                        &HWY_DYNAMIC_DISPATCH(AddRowsImpl)};
  }();
  return chosen;
}

}  // namespace rematkit::hwy_backend
#endif
