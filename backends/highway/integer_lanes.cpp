// Loops on integer and bool lanes that fused chains run on every segment, compiled for every Highway
// target and dispatched once per call: compares of i32 or u32 into 0 / 1 bytes, bool and i32 into
// floats, and counting (iota along its last dim). A loss's one-hot (iota, eq against the labels,
// convert, mul) runs them over every logit; built for the x86-64 baseline they cost about as much
// as the chain's float parts together.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/integer_lanes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>
#include <limits>

#include "highway/elementwise_kernels.hpp"
#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway 1.0.3 orders integer lanes by Gt and Lt alone: Ge and Le are their negations.
template <Compare op, class V>
HWY_INLINE auto compared(V a, V b) {
  if constexpr (op == Compare::kGt) return hn::Gt(a, b);
  if constexpr (op == Compare::kGe) return hn::Not(hn::Lt(a, b));
  if constexpr (op == Compare::kLt) return hn::Lt(a, b);
  if constexpr (op == Compare::kLe) return hn::Not(hn::Gt(a, b));
  if constexpr (op == Compare::kEq) return hn::Eq(a, b);
  if constexpr (op == Compare::kNe) return hn::Ne(a, b);
}

// y[i] = a[i or 0] op b[i or 0] as a 0 / 1 byte, on lanes of T (int32_t or uint32_t).
template <Compare op, typename T>
void compare_loop(const T* a, bool a_scalar, const T* b, bool b_scalar, uint8_t* y, size_t n) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  const auto one = hn::Set(di, 1);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto va = a_scalar ? hn::Set(d, a[0]) : hn::LoadU(d, a + i);
    const auto vb = b_scalar ? hn::Set(d, b[0]) : hn::LoadU(d, b + i);
    hn::StoreU(hn::DemoteTo(d8, hn::IfThenElseZero(hn::RebindMask(di, compared<op>(va, vb)), one)), d8, y + i);
  }
  for (; i < n; ++i) {
    const T x = a[a_scalar ? 0 : i], z = b[b_scalar ? 0 : i];
    const bool r = op == Compare::kGt ? x > z : op == Compare::kGe ? x >= z : op == Compare::kLt ? x < z
                 : op == Compare::kLe ? x <= z : op == Compare::kEq ? x == z : x != z;
    y[i] = r ? 1 : 0;
  }
}

template <typename T>
void compare_as(int op, const void* a, bool a_scalar, const void* b, bool b_scalar, uint8_t* y, size_t n) {
  const T* x = static_cast<const T*>(a);
  const T* z = static_cast<const T*>(b);
  switch (static_cast<Compare>(op)) {
    case Compare::kGt: return compare_loop<Compare::kGt>(x, a_scalar, z, b_scalar, y, n);
    case Compare::kGe: return compare_loop<Compare::kGe>(x, a_scalar, z, b_scalar, y, n);
    case Compare::kLt: return compare_loop<Compare::kLt>(x, a_scalar, z, b_scalar, y, n);
    case Compare::kLe: return compare_loop<Compare::kLe>(x, a_scalar, z, b_scalar, y, n);
    case Compare::kEq: return compare_loop<Compare::kEq>(x, a_scalar, z, b_scalar, y, n);
    case Compare::kNe: return compare_loop<Compare::kNe>(x, a_scalar, z, b_scalar, y, n);
  }
}

void CompareIntsImpl(int op, bool is_unsigned, const void* a, bool a_scalar, const void* b, bool b_scalar, uint8_t* y,
                     size_t n) {
  if (is_unsigned) compare_as<uint32_t>(op, a, a_scalar, b, b_scalar, y, n);
  else compare_as<int32_t>(op, a, a_scalar, b, b_scalar, y, n);
}

// A bool is 1.0f where its byte is nonzero; an i32 is the nearest float, as static_cast gives it.
void ConvertToF32Impl(bool from_bool, const void* x, bool scalar, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  const uint8_t* bytes = static_cast<const uint8_t*>(x);
  const int32_t* ints = static_cast<const int32_t*>(x);
  auto scalar_value = [&](size_t i) {
    return from_bool ? (bytes[i] ? 1.0f : 0.0f) : static_cast<float>(ints[i]);
  };
  if (scalar) {
    const auto v = hn::Set(d, scalar_value(0));
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) hn::StoreU(v, d, y + i);
    for (; i < n; ++i) y[i] = scalar_value(0);
    return;
  }
  size_t i = 0;
  if (from_bool)
    for (; i + lanes <= n; i += lanes) {
      const auto byte = hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, bytes + i)));
      hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Ne(byte, hn::Zero(di))), hn::Set(d, 1.0f)), d, y + i);
    }
  else
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::ConvertTo(d, hn::LoadU(di, ints + i)), d, y + i);
  for (; i < n; ++i) y[i] = scalar_value(i);
}

// y[k] = start + k for k < n, as i32 or as f32 (exact: start + n is at most 2^31 - 1).
void CountImpl(bool as_f32, int32_t start, void* y, size_t n) {
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> d;
  const size_t lanes = hn::Lanes(di);
  const auto step = hn::Set(di, static_cast<int32_t>(lanes));
  auto v = hn::Iota(di, start);
  int32_t* ints = static_cast<int32_t*>(y);
  float* floats = static_cast<float*>(y);
  size_t k = 0;
  for (; k + lanes <= n; k += lanes, v = hn::Add(v, step)) {
    if (as_f32) hn::StoreU(hn::ConvertTo(d, v), d, floats + k);
    else hn::StoreU(v, di, ints + k);
  }
  for (; k < n; ++k) {
    const int32_t value = start + static_cast<int32_t>(k);
    if (as_f32) floats[k] = static_cast<float>(value);
    else ints[k] = value;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rematkit::hwy_backend {

HWY_EXPORT(CompareIntsImpl);
HWY_EXPORT(ConvertToF32Impl);
HWY_EXPORT(CountImpl);

void compare_ints(Compare op, bool is_unsigned, const void* a, bool a_scalar, const void* b, bool b_scalar, uint8_t* y,
                  size_t n) {
  (void)chosen_target();  // chooses the target before the table is read below
  HWY_DYNAMIC_DISPATCH(CompareIntsImpl)(static_cast<int>(op), is_unsigned, a, a_scalar, b, b_scalar, y, n);
}

void convert_to_f32(bool from_bool, const void* x, bool scalar, float* y, size_t n) {
  (void)chosen_target();
  HWY_DYNAMIC_DISPATCH(ConvertToF32Impl)(from_bool, x, scalar, y, n);
}

void count_up(bool as_f32, size_t start, void* y, size_t n) {
  (void)chosen_target();
  if (start + n <= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return HWY_DYNAMIC_DISPATCH(CountImpl)(as_f32, static_cast<int32_t>(start), y, n);
  for (size_t k = 0; k < n; ++k) {  // past i32: as the caller's counts wrap, each value on its own
    if (as_f32) static_cast<float*>(y)[k] = static_cast<float>(start + k);
    else static_cast<int32_t*>(y)[k] = static_cast<int32_t>(start + k);
  }
}

}  // namespace rematkit::hwy_backend
#endif
