// Loops on integer and bool lanes that fused chains run on every segment, compiled for every Highway
// target and dispatched once per call: compares of i32 or u32 into 0 / 1 bytes, bool and i32 into
// floats, and counting (iota along its last dim). A loss's one-hot (iota, eq against the labels,
// convert, mul) runs them over every logit. The compares share f32's loop (compare_loop-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/integer_lanes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <bit>
#include <cstdint>
#include <limits>

#include "highway/compare_loop-inl.h"
#include "highway/elementwise_kernels.hpp"
#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void CompareIntsImpl(int op, bool is_unsigned, const void* a, bool a_scalar, const void* b, bool b_scalar, uint8_t* y,
                     size_t n) {
  if (is_unsigned)
    CompareAny(op, static_cast<const uint32_t*>(a), a_scalar, static_cast<const uint32_t*>(b), b_scalar, y, n);
  else
    CompareAny(op, static_cast<const int32_t*>(a), a_scalar, static_cast<const int32_t*>(b), b_scalar, y, n);
}

// A bool is 1.0f where its byte is nonzero; an i32 is the nearest float, as static_cast gives it.
float AsF32(bool from_bool, const void* x, size_t i) {
  return from_bool ? (static_cast<const uint8_t*>(x)[i] ? 1.0f : 0.0f) : static_cast<float>(static_cast<const int32_t*>(x)[i]);
}

void ConvertToF32Impl(bool from_bool, const void* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  if (from_bool)
    for (const uint8_t* bytes = static_cast<const uint8_t*>(x); i + lanes <= n; i += lanes) {
      const auto byte = hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, bytes + i)));
      hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Ne(byte, hn::Zero(di))), hn::Set(d, 1.0f)), d, y + i);
    }
  else
    for (const int32_t* ints = static_cast<const int32_t*>(x); i + lanes <= n; i += lanes)
      hn::StoreU(hn::ConvertTo(d, hn::LoadU(di, ints + i)), d, y + i);
  for (; i < n; ++i) y[i] = AsF32(from_bool, x, i);
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
  if (scalar) return fill32(std::bit_cast<uint32_t>(HWY_NAMESPACE::AsF32(from_bool, x, 0)), reinterpret_cast<uint32_t*>(y), n);
  HWY_DYNAMIC_DISPATCH(ConvertToF32Impl)(from_bool, x, y, n);
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
