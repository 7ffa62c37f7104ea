// bf16 and f16 bits to f32 and back on Highway vectors, with element_values.hpp's bits
// (bf16_value/f16_value, and bf16_bits/f16_bits: to nearest even, a NaN kept quiet) on every
// target. Shared by the Highway backend's loops (highway/half_precision.cpp) and oneDNN's widened
// copies (onednn/onednn_half_copies.cpp). Included once per target from within a file that
// foreach_target.h compiles for each, hence the include guard that toggles with HWY_TARGET_TOGGLE.
#if defined(RK_HALF_BITS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RK_HALF_BITS_INL_H_
#undef RK_HALF_BITS_INL_H_
#else
#define RK_HALF_BITS_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace rematkit::half_bits {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// F16C (AVX2 and later): Highway converts f16 in one instruction each way, exactly as f16_value
// and f16_bits (to nearest even whatever MXCSR says: it passes the rounding in the instruction; a
// NaN quiet, its payload's top bits kept). Elsewhere Highway's emulation truncates, so the integer
// code below runs.
#undef RK_HALF_F16C  // this header is included once per target
#if HWY_ARCH_X86 && HWY_TARGET < HWY_SSE4 && !defined(HWY_DISABLE_F16C)
#define RK_HALF_F16C 1
#else
#define RK_HALF_F16C 0
#endif

// A NaN made quiet, as the reference's f32 to double conversion of a loaded element makes it.
template <class D>
HWY_INLINE hn::Vec<D> Quiet(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  return hn::IfThenElse(hn::IsNaN(v), hn::BitCast(d, hn::Or(hn::BitCast(du, v), hn::Set(du, 0x00400000u))), v);
}

// bf16 or f16 bits (in u32 lanes) to f32: bf16 is an f32's top half; f16 as f16_value.
// `quiet`: whether a signalling NaN can come in (a loaded element), else it is quiet already.
template <class D, class VU>
HWY_INLINE hn::Vec<D> HalfToF32(D d, bool f16, VU bits, bool quiet = true) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  if (!f16) {
    const auto v = hn::BitCast(d, hn::ShiftLeft<16>(bits));
    return quiet ? Quiet(d, v) : v;
  }
  if constexpr (RK_HALF_F16C) {
    const hn::Rebind<hwy::float16_t, D> dh;
    const hn::Rebind<uint16_t, D> d16;
    const auto v = hn::PromoteTo(d, hn::BitCast(dh, hn::DemoteTo(d16, hn::BitCast(di, bits))));
    return quiet ? Quiet(d, v) : v;
  }
  const VU sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000u)));
  const VU exponent = hn::And(hn::ShiftRight<10>(bits), hn::Set(du, 0x1Fu));
  const VU mantissa = hn::And(bits, hn::Set(du, 0x3FFu));
  const VU normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exponent, hn::Set(du, 112u))), hn::ShiftLeft<13>(mantissa));
  const VU special = hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(mantissa));  // infinity or NaN
  // A subnormal or zero: mantissa * 2^-24, exact in f32.
  const VU small = hn::BitCast(du, hn::Mul(hn::ConvertTo(d, hn::BitCast(di, mantissa)), hn::Set(d, 0x1p-24f)));
  const auto is_small = hn::Eq(exponent, hn::Zero(du)), is_special = hn::Eq(exponent, hn::Set(du, 0x1Fu));
  const auto v = hn::BitCast(d, hn::Or(sign, hn::IfThenElse(is_small, small, hn::IfThenElse(is_special, special, normal))));
  return quiet ? Quiet(d, v) : v;
}

// f32 to bf16 (bf16_bits) or f16 (f16_bits) bits, in u32 lanes. `nan_bits`: whether a NaN lane's
// bf16 bits matter; a caller that sends every NaN lane to the reference math (which rewrites it)
// passes false, and those lanes hold garbage until then.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> HalfBits(D d, bool f16, hn::Vec<D> v, bool nan_bits = true) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  using VU = hn::Vec<decltype(du)>;
  const VU bits = hn::BitCast(du, v);
  if (!f16) {
    const VU lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const VU rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), lsb)));
    if (!nan_bits) return rounded;
    const VU quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
  }
  if constexpr (RK_HALF_F16C) {
    const hn::Rebind<hwy::float16_t, D> dh;
    const hn::Rebind<uint16_t, D> d16;
    return hn::PromoteTo(du, hn::BitCast(d16, hn::DemoteTo(dh, v)));
  }
  const VU sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
  const VU magnitude = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto m = hn::BitCast(di, magnitude);  // below 2^31: signed comparisons order it
  const VU nan = hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(magnitude), hn::Set(du, 0x3FFu)));
  const VU scaled = hn::BitCast(du, hn::ConvertTo(di, hn::Round(hn::Mul(hn::BitCast(d, magnitude), hn::Set(d, 0x1p24f)))));
  const VU rebased = hn::Sub(magnitude, hn::Set(du, 112u << 23));
  const VU lsb = hn::And(hn::ShiftRight<13>(rebased), hn::Set(du, 1u));
  const VU normal = hn::ShiftRight<13>(hn::Add(rebased, hn::Add(hn::Set(du, 0xFFFu), lsb)));
  VU half = hn::IfThenElse(hn::RebindMask(du, hn::Lt(m, hn::Set(di, 0x38800000))), scaled, normal);
  half = hn::IfThenElse(hn::RebindMask(du, hn::Gt(m, hn::Set(di, 0x477FEFFF))), hn::Set(du, 0x7C00u), half);
  half = hn::IfThenElse(hn::RebindMask(du, hn::Gt(m, hn::Set(di, 0x7F800000))), nan, half);
  return hn::Or(sign, half);
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::half_bits
HWY_AFTER_NAMESPACE();

#endif  // RK_HALF_BITS_INL_H_
