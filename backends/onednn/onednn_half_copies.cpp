// onednn_half_copies.hpp's loops, compiled for every Highway target (foreach_target.h) and
// dispatched on first use, on half_bits-inl.h's conversions. Without Highway in the build, the
// reference math's own conversions one element at a time.
#include "onednn/onednn_half_copies.hpp"

#if RK_ONEDNN_HIGHWAY
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "onednn/onednn_half_copies.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "half_bits-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rematkit_onednn {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using rematkit::half_bits::HWY_NAMESPACE::HalfBits;
using rematkit::half_bits::HWY_NAMESPACE::HalfToF32;

// Each loop's tail runs one lane at a time through the same code on a one-lane vector.
template <bool kF16>
void WidenLoop(const uint16_t* from, float* to, size_t n) {
  auto body = [&](auto d, size_t i) {
    const hn::RebindToUnsigned<decltype(d)> du;
    const hn::Rebind<uint16_t, decltype(d)> d16;
    hn::StoreU(HalfToF32(d, kF16, hn::PromoteTo(du, hn::LoadU(d16, from + i)), false), d, to + i);
  };
  const hn::ScalableTag<float> d;
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) body(d, i);
  for (; i < n; ++i) body(hn::CappedTag<float, 1>(), i);
}

template <bool kF16>
void NarrowLoop(const float* from, uint16_t* to, size_t n) {
  auto body = [&](auto d, size_t i) {
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<uint16_t, decltype(d)> d16;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, HalfBits(d, kF16, hn::LoadU(d, from + i)))), d16, to + i);
  };
  const hn::ScalableTag<float> d;
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) body(d, i);
  for (; i < n; ++i) body(hn::CappedTag<float, 1>(), i);
}

void WidenImpl(bool f16, const uint16_t* from, float* to, size_t n) {
  f16 ? WidenLoop<true>(from, to, n) : WidenLoop<false>(from, to, n);
}
void NarrowImpl(bool f16, const float* from, uint16_t* to, size_t n) {
  f16 ? NarrowLoop<true>(from, to, n) : NarrowLoop<false>(from, to, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit_onednn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rematkit_onednn {

HWY_EXPORT(WidenImpl);
HWY_EXPORT(NarrowImpl);

void widen_lanes(bool f16, const uint16_t* from, float* to, size_t n) { HWY_DYNAMIC_DISPATCH(WidenImpl)(f16, from, to, n); }
void narrow_lanes(bool f16, const float* from, uint16_t* to, size_t n) {
  HWY_DYNAMIC_DISPATCH(NarrowImpl)(f16, from, to, n);
}

}  // namespace rematkit_onednn
#endif  // HWY_ONCE

#else  // no Highway
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit_onednn {

void widen_lanes(bool f16, const uint16_t* from, float* to, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = f16 ? rematkit::reference::f16_value(from[i]) : rematkit::reference::bf16_value(from[i]);
}
void narrow_lanes(bool f16, const float* from, uint16_t* to, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = f16 ? rematkit::reference::f16_bits(from[i]) : rematkit::reference::bf16_bits(from[i]);
}

}  // namespace rematkit_onednn
#endif  // RK_ONEDNN_HIGHWAY
