// Bitwise kernels on 32-bit integer lanes (u32, i32), compiled for every Highway target and
// dispatched once per call: a PRNG's bit twiddling (dropout turns random_bits into floats with a
// shift and an or) stays on SIMD instead of going to the reference backend; and filling 32-bit lanes
// with one value (a broadcast scalar, an iota's runs), in whole vectors, or copying them past the
// caches (stream32); a large fill or copy split over threads and streamed (fill32, copy32).
// Out-of-range shift amounts follow lax's shifts (jax/_src/lax/lax.py: shift_left,
// shift_right_logical give 0, shift_right_arithmetic the sign), as the reference backend computes
// them.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/bitwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <Bitwise op, class D, class V>
HWY_INLINE V apply(D d, V a, V b) {
  const V width = hn::Set(d, 32u), last = hn::Set(d, 31u);
  if constexpr (op == Bitwise::kAnd) return hn::And(a, b);
  if constexpr (op == Bitwise::kOr) return hn::Or(a, b);
  if constexpr (op == Bitwise::kXor) return hn::Xor(a, b);
  // Highway's shifts take amounts below the lane width: clamp, then choose.
  if constexpr (op == Bitwise::kShiftLeft) return hn::IfThenElseZero(hn::Lt(b, width), hn::Shl(a, hn::Min(b, last)));
  if constexpr (op == Bitwise::kShiftRightLogical) return hn::IfThenElseZero(hn::Lt(b, width), hn::Shr(a, hn::Min(b, last)));
  // Signed lanes shift in the sign; an amount of 32 or more, or a negative one (a huge unsigned
  // one), shifts in nothing but the sign, as a shift by 31 does.
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::Shr(hn::BitCast(di, a), hn::BitCast(di, hn::Min(b, last))));
}

template <Bitwise op>
void bitwise_loop(const uint32_t* a, bool a_scalar, const uint32_t* b, bool b_scalar, uint32_t* y, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  const auto sa = hn::Set(d, a_scalar ? a[0] : 0u), sb = hn::Set(d, b_scalar ? b[0] : 0u);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto va = a_scalar ? sa : hn::LoadU(d, a + i), vb = b_scalar ? sb : hn::LoadU(d, b + i);
    hn::StoreU(apply<op>(d, va, vb), d, y + i);
  }
  if (i < n) {  // the tail through padded buffers (Highway 1.0 has no LoadN/StoreN)
    HWY_ALIGN uint32_t ba[hn::MaxLanes(d)] = {}, bb[hn::MaxLanes(d)] = {};
    if (!a_scalar) std::memcpy(ba, a + i, (n - i) * sizeof(uint32_t));
    if (!b_scalar) std::memcpy(bb, b + i, (n - i) * sizeof(uint32_t));
    const auto va = a_scalar ? sa : hn::Load(d, ba), vb = b_scalar ? sb : hn::Load(d, bb);
    hn::Store(apply<op>(d, va, vb), d, ba);
    std::memcpy(y + i, ba, (n - i) * sizeof(uint32_t));
  }
}

void BitwiseImpl(int op, const uint32_t* a, bool a_scalar, const uint32_t* b, bool b_scalar, uint32_t* y, size_t n) {
  switch (static_cast<Bitwise>(op)) {
    case Bitwise::kAnd: return bitwise_loop<Bitwise::kAnd>(a, a_scalar, b, b_scalar, y, n);
    case Bitwise::kOr: return bitwise_loop<Bitwise::kOr>(a, a_scalar, b, b_scalar, y, n);
    case Bitwise::kXor: return bitwise_loop<Bitwise::kXor>(a, a_scalar, b, b_scalar, y, n);
    case Bitwise::kShiftLeft: return bitwise_loop<Bitwise::kShiftLeft>(a, a_scalar, b, b_scalar, y, n);
    case Bitwise::kShiftRightLogical: return bitwise_loop<Bitwise::kShiftRightLogical>(a, a_scalar, b, b_scalar, y, n);
    case Bitwise::kShiftRightArithmetic:
      return bitwise_loop<Bitwise::kShiftRightArithmetic>(a, a_scalar, b, b_scalar, y, n);
  }
}

void Fill32Impl(uint32_t bits, uint32_t* y, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  const auto v = hn::Set(d, bits);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(v, d, y + i);
  for (; i < n; ++i) y[i] = bits;
}

// Fill32Impl with non-temporal stores from the first vector-aligned element of `y` on.
void StreamFill32Impl(uint32_t bits, uint32_t* y, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  const auto v = hn::Set(d, bits);
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(y + i) % (lanes * sizeof(uint32_t)) != 0; ++i) y[i] = bits;
  for (; i + lanes <= n; i += lanes) hn::Stream(v, d, y + i);
  for (; i < n; ++i) y[i] = bits;
}

// Non-temporal stores from the first vector-aligned element of `to` on.
void Stream32Impl(const uint32_t* from, uint32_t* to, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(to + i) % (lanes * sizeof(uint32_t)) != 0; ++i) to[i] = from[i];
  for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(d, from + i), d, to + i);
  for (; i < n; ++i) to[i] = from[i];
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

HWY_EXPORT(BitwiseImpl);
HWY_EXPORT(Fill32Impl);
HWY_EXPORT(StreamFill32Impl);
HWY_EXPORT(Stream32Impl);

namespace {

// An output past kStreamFromBytes is written in pieces on oneTBB (layout.hpp's over_items), each
// streamed and fenced by the thread that wrote it: a zeroed gradient table or a copied one is one
// pass at memory speed.
template <typename Body>
void in_bulk(size_t n, Body body) {
  over_items(n, sizeof(uint32_t), [&](size_t begin, size_t end) {
    body(begin, end);
    hwy::FlushStream();
  });
}

}  // namespace

void bitwise(Bitwise op, const uint32_t* a, bool a_scalar, const uint32_t* b, bool b_scalar, uint32_t* y, size_t n) {
  (void)chosen_target();  // chooses the target before the table is read below
  HWY_DYNAMIC_DISPATCH(BitwiseImpl)(static_cast<int>(op), a, a_scalar, b, b_scalar, y, n);
}

void fill32(uint32_t bits, uint32_t* y, size_t n) {
  (void)chosen_target();
  if (n * sizeof(uint32_t) < kStreamFromBytes) return HWY_DYNAMIC_DISPATCH(Fill32Impl)(bits, y, n);
  auto* fn = &HWY_DYNAMIC_DISPATCH(StreamFill32Impl);
  in_bulk(n, [&](size_t begin, size_t end) { fn(bits, y + begin, end - begin); });
}

void copy32(const uint32_t* from, uint32_t* to, size_t n) {
  (void)chosen_target();
  if (n * sizeof(uint32_t) < kStreamFromBytes) return void(std::memcpy(to, from, n * sizeof(uint32_t)));
  auto* fn = &HWY_DYNAMIC_DISPATCH(Stream32Impl);
  in_bulk(n, [&](size_t begin, size_t end) { fn(from + begin, to + begin, end - begin); });
}

void stream32(const uint32_t* from, uint32_t* to, size_t n) {
  (void)chosen_target();
  HWY_DYNAMIC_DISPATCH(Stream32Impl)(from, to, n);
}

void stream_fence() { hwy::FlushStream(); }

}  // namespace rematkit::hwy_backend
#endif
