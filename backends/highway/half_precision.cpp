// bf16 and f16 loops (half_precision.hpp), compiled for every Highway target (foreach_target.h) and
// dispatched once. The roundings are element_values.hpp's bf16_bits and f16_bits written on integer
// lanes, so every target gives their bits; each loop's tail runs one lane at a time through the
// same code on a one-lane vector.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/half_precision.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <array>
#include <type_traits>

#include "half_bits-inl.h"
#include "highway/binary_op-inl.h"
#include "highway/half_precision.hpp"
#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using half_bits::HWY_NAMESPACE::HalfBits;
using half_bits::HWY_NAMESPACE::HalfToF32;

template <class D>
HWY_INLINE hn::Vec<D> Operand(D d, const LaneOperand& x, size_t i) {
  return x.scalar ? hn::Set(d, x.data[0]) : hn::LoadU(d, x.data + i);
}

// The lanes of v (an op's f32 results at i) that `check` (of kind `kKind`) sends to the reference
// math.
template <HalfCheck::Kind kKind, class D>
HWY_INLINE hn::Mask<D> Flagged(D d, bool f16, const HalfCheck& check, const LaneOperand* operands, size_t num_operands,
                               hn::Vec<D> v, size_t i) {
  const hn::RebindToSigned<D> di;
  if constexpr (kKind == HalfCheck::Kind::kMove) return hn::FirstN(d, 0);  // a moved NaN keeps its bits too
  auto flagged = hn::IsNaN(v);
  if constexpr (kKind == HalfCheck::Kind::kExact) return flagged;
  for (size_t k = 0; k < num_operands; ++k) {
    const auto x = Operand(d, operands[k], i);
    flagged = hn::Or(flagged, hn::IsNaN(x));
    if constexpr (kKind != HalfCheck::Kind::kApprox) continue;
    const auto magnitude = hn::Abs(x);
    const auto in_range = hn::And(hn::Ge(magnitude, hn::Set(d, check.min_input)), hn::Le(magnitude, hn::Set(d, check.max_input)));
    flagged = hn::Or(flagged, hn::Not(in_range));
    if (check.negative_input) flagged = hn::Or(flagged, hn::Lt(x, hn::Zero(d)));
  }
  if constexpr (kKind != HalfCheck::Kind::kApprox) return flagged;
  flagged = hn::Or(flagged, hn::Lt(hn::Abs(v), hn::Set(d, check.tiny)));
  // Every f32 within `ulps` of the result rounds to one half value, or the lane is flagged. bf16's
  // rounding turns where the dropped half is 0x8000 (or 0x8001, ties going to even).
  const auto magnitude = hn::BitCast(di, hn::Abs(v));
  const auto ulps = hn::Set(di, check.ulps);
  if (!f16) {
    const auto dropped = hn::And(hn::Sub(magnitude, hn::Set(di, 0x8000 - check.ulps - 1)), hn::Set(di, 0xFFFF));
    return hn::Or(flagged, hn::RebindMask(d, hn::Lt(dropped, hn::Set(di, 2 * check.ulps + 3))));
  }
  const auto below = hn::BitCast(d, hn::Max(hn::Sub(magnitude, ulps), hn::Zero(di)));
  const auto above = hn::BitCast(d, hn::Min(hn::Add(magnitude, ulps), hn::Set(di, 0x7F800000)));
  const auto differ = hn::RebindMask(d, hn::Ne(hn::BitCast(di, HalfBits(d, f16, below)), hn::BitCast(di, HalfBits(d, f16, above))));
  return hn::Or(flagged, differ);
}

void PromoteImpl(bool f16, const uint16_t* x, float* y, size_t n) {
  auto body = [&](auto d, size_t i) {
    const hn::RebindToUnsigned<decltype(d)> du;
    const hn::Rebind<uint16_t, decltype(d)> d16;
    hn::StoreU(HalfToF32(d, f16, hn::PromoteTo(du, hn::LoadU(d16, x + i))), d, y + i);
  };
  const hn::ScalableTag<float> d;
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) body(d, i);
  for (; i < n; ++i) body(hn::CappedTag<float, 1>(), i);
}

// RoundImpl for one dtype and kind of check, so that the loop holds no branch on them; the f32
// results are `result(d, i)`: those stored at y, or a binary part's computed in the same pass. The
// rounded values go to y unless it is null.
template <bool kF16, HalfCheck::Kind kKind, class Result>
size_t RoundLoop(const HalfCheck& check, const LaneOperand* operands, size_t num_operands, float* y, uint16_t* bits,
                 size_t n, uint32_t* flagged, Result result) {
  size_t count = 0;
  auto body = [&](auto d, size_t i) {
    const hn::RebindToSigned<decltype(d)> di;
    auto v = result(d, i);
    auto mask = Flagged<kKind>(d, kF16, check, operands, num_operands, v, i);
    if constexpr (kKind == HalfCheck::Kind::kApprox) {  // results known to be +0 (exp of a masked score)
      const auto zero = hn::Lt(Operand(d, operands[0], i), hn::Set(d, check.zero_below));
      v = hn::IfThenZeroElse(zero, v);
      mask = hn::AndNot(zero, mask);
    }
    // Every kind but kMove flags the NaN results (Flagged), which recompute() rewrites.
    const auto half = HalfBits(d, kF16, v, kKind == HalfCheck::Kind::kMove);
    if (y) hn::StoreU(HalfToF32(d, kF16, half, false), d, y + i);
    if (bits) {
      const hn::Rebind<uint16_t, decltype(d)> d16;
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, half)), d16, bits + i);
    }
    if (hn::AllFalse(d, mask)) return;
    HWY_ALIGN int32_t lane[hn::MaxLanes(di)];
    hn::Store(hn::VecFromMask(di, hn::RebindMask(di, mask)), di, lane);
    for (size_t j = 0; j < hn::Lanes(di); ++j)
      if (lane[j] != 0) flagged[count++] = static_cast<uint32_t>(i + j);
  };
  const hn::ScalableTag<float> d;
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) body(d, i);
  for (; i < n; ++i) body(hn::CappedTag<float, 1>(), i);
  return count;
}

size_t RoundImpl(bool f16, const HalfCheck& check, const LaneOperand* operands, size_t num_operands, float* y,
                 bool keep_f32, uint16_t* bits, size_t n, uint32_t* flagged) {
  using Kind = HalfCheck::Kind;
  float* out = keep_f32 ? y : nullptr;
  auto loop = [&](auto dtype, auto kind) {
    return RoundLoop<decltype(dtype)::value, decltype(kind)::value>(check, operands, num_operands, out, bits, n, flagged,
                                                                    [y](auto d, size_t i) { return hn::LoadU(d, y + i); });
  };
  auto of_kind = [&](auto dtype) {
    switch (check.kind) {
      case Kind::kMove: return loop(dtype, std::integral_constant<Kind, Kind::kMove>());
      case Kind::kExact: return loop(dtype, std::integral_constant<Kind, Kind::kExact>());
      case Kind::kPicks: return loop(dtype, std::integral_constant<Kind, Kind::kPicks>());
      case Kind::kApprox: return loop(dtype, std::integral_constant<Kind, Kind::kApprox>());
    }
    return size_t{0};
  };
  return f16 ? of_kind(std::true_type()) : of_kind(std::false_type());
}

// f called with kernels.hpp's Binary `op` as a compile-time constant.
template <class F>
size_t WithBinary(int op, F f) {
  switch (static_cast<Binary>(op)) {
    case Binary::kAdd: return f(std::integral_constant<Binary, Binary::kAdd>());
    case Binary::kSub: return f(std::integral_constant<Binary, Binary::kSub>());
    case Binary::kMul: return f(std::integral_constant<Binary, Binary::kMul>());
    case Binary::kDiv: return f(std::integral_constant<Binary, Binary::kDiv>());
    case Binary::kMax: return f(std::integral_constant<Binary, Binary::kMax>());
    case Binary::kMin: return f(std::integral_constant<Binary, Binary::kMin>());
  }
  return size_t{0};
}

size_t BinaryRoundImpl(bool f16, int op, const HalfCheck& check, const LaneOperand* operands, float* y, bool keep_f32,
                       uint16_t* bits, size_t n, uint32_t* flagged) {
  using Kind = HalfCheck::Kind;
  float* out = keep_f32 ? y : nullptr;
  const std::array<LaneOperand, 2> x{operands[0], operands[1]};  // locals: the loop's stores cannot alias them
  auto loop = [&](auto dtype, auto kind, auto binary) {
    auto result = [a = x[0], b = x[1]](auto d, size_t i) {
      return ApplyBinary<decltype(binary)::value>(Operand(d, a, i), Operand(d, b, i));
    };
    return RoundLoop<decltype(dtype)::value, decltype(kind)::value>(check, x.data(), 2, out, bits, n, flagged, result);
  };
  auto of_op = [&](auto dtype, auto kind) { return WithBinary(op, [&](auto binary) { return loop(dtype, kind, binary); }); };
  // Only these two kinds come here (FusedElementwise::Part::rounds_in_pass).
  auto of_kind = [&](auto dtype) {
    return check.kind == Kind::kPicks ? of_op(dtype, std::integral_constant<Kind, Kind::kPicks>())
                                      : of_op(dtype, std::integral_constant<Kind, Kind::kExact>());
  };
  return f16 ? of_kind(std::true_type()) : of_kind(std::false_type());
}

// An operand of BinaryRoundBitsImpl's: its bits promoted (kBits; not made quiet, as a NaN operand's
// lane is flagged and recomputed), or its promoted f32 values.
template <bool kF16, bool kBits, class D>
HWY_INLINE hn::Vec<D> HalfOperandAt(D d, const HalfOperand& x, size_t i) {
  if constexpr (!kBits) {
    return x.scalar ? hn::Set(d, x.data[0]) : hn::LoadU(d, x.data + i);
  } else {
    const hn::RebindToUnsigned<D> du;
    const hn::Rebind<uint16_t, D> d16;
    return HalfToF32(d, kF16, x.scalar ? hn::Set(du, x.bits[0]) : hn::PromoteTo(du, hn::LoadU(d16, x.bits + i)), false);
  }
}

size_t BinaryRoundBitsImpl(bool f16, int op, const HalfOperand* operands, float* y, bool keep_f32, uint16_t* bits, size_t n,
                           uint32_t* flagged) {
  HalfCheck exact;
  exact.kind = HalfCheck::Kind::kExact;
  float* out = keep_f32 ? y : nullptr;
  auto loop = [&](auto dtype, auto binary, auto bits_a, auto bits_b) {
    constexpr bool kF16 = decltype(dtype)::value;
    constexpr Binary kOp = decltype(binary)::value;
    auto result = [x = operands[0], z = operands[1]](auto d, size_t i) {  // copies: the stores cannot alias them
      const auto a = HalfOperandAt<kF16, decltype(bits_a)::value>(d, x, i);
      const auto b = HalfOperandAt<kF16, decltype(bits_b)::value>(d, z, i);
      const auto v = ApplyBinary<kOp>(a, b);
      if constexpr (kOp != Binary::kMax && kOp != Binary::kMin) return v;
      // max and min may pick the other operand beside a NaN (kPicks): a NaN there so that it is flagged.
      return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), v);
    };
    return RoundLoop<kF16, HalfCheck::Kind::kExact>(exact, nullptr, 0, out, bits, n, flagged, result);
  };
  // Which operands are read as bits, as compile-time constants.
  auto of_forms = [&](auto dtype, auto binary) {
    using Yes = std::true_type;
    using No = std::false_type;
    if (operands[0].bits && operands[1].bits) return loop(dtype, binary, Yes(), Yes());
    if (operands[0].bits) return loop(dtype, binary, Yes(), No());
    return loop(dtype, binary, No(), Yes());
  };
  auto of_op = [&](auto dtype) { return WithBinary(op, [&](auto binary) { return of_forms(dtype, binary); }); };
  return f16 ? of_op(std::true_type()) : of_op(std::false_type());
}

// Binary2RoundImpl for one dtype, pair of ops and order.
template <bool kF16, Binary kOp1, Binary kOp2, bool kInnerLeft>
bool Binary2RoundLoop(const LaneOperand* operands, float* y, uint16_t* bits, size_t n) {
  const std::array<LaneOperand, 3> x{operands[0], operands[1], operands[2]};  // locals: the stores cannot alias them
  bool clean = true;
  auto body = [&](auto d, size_t i) {
    const hn::RebindToSigned<decltype(d)> di;
    const auto p = ApplyBinary<kOp1>(Operand(d, x[0], i), Operand(d, x[1], i));
    const auto rounded = HalfToF32(d, kF16, HalfBits(d, kF16, p, false), false);  // p's value, as its slot would hold it
    const auto c = Operand(d, x[2], i);
    const auto q = kInnerLeft ? ApplyBinary<kOp2>(rounded, c) : ApplyBinary<kOp2>(c, rounded);
    const auto half = HalfBits(d, kF16, q, false);
    if (y) hn::StoreU(HalfToF32(d, kF16, half, false), d, y + i);
    if (bits) {
      const hn::Rebind<uint16_t, decltype(d)> d16;
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, half)), d16, bits + i);
    }
    if (!hn::AllFalse(d, hn::Or(hn::IsNaN(p), hn::IsNaN(q)))) clean = false;
  };
  const hn::ScalableTag<float> d;
  size_t i = 0;
  for (; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) body(d, i);
  for (; i < n; ++i) body(hn::CappedTag<float, 1>(), i);
  return clean;
}

// f called with add, sub or mul (kernels.hpp's Binary `op`) as a compile-time constant; false for
// another op.
template <class F>
bool WithPairedBinary(int op, F f) {
  if (op == static_cast<int>(Binary::kAdd)) return f(std::integral_constant<Binary, Binary::kAdd>());
  if (op == static_cast<int>(Binary::kSub)) return f(std::integral_constant<Binary, Binary::kSub>());
  if (op == static_cast<int>(Binary::kMul)) return f(std::integral_constant<Binary, Binary::kMul>());
  return false;
}

// Where no lane is a NaN, each part's value is the one its own pass rounds (add, sub and mul are
// correctly rounded, and their check flags only NaN results), so the same bits; with -ffp-contract
// on, the two ops still round apart, as the first's value passes through integer rounding.
bool Binary2RoundImpl(bool f16, int op1, int op2, bool inner_left, const LaneOperand* operands, float* y, bool keep_f32,
                      uint16_t* bits, size_t n) {
  float* out = keep_f32 ? y : nullptr;
  auto of_order = [&](auto dtype, auto first, auto second) {
    constexpr bool kF16 = decltype(dtype)::value;
    constexpr Binary kOp1 = decltype(first)::value, kOp2 = decltype(second)::value;
    return inner_left ? Binary2RoundLoop<kF16, kOp1, kOp2, true>(operands, out, bits, n)
                      : Binary2RoundLoop<kF16, kOp1, kOp2, false>(operands, out, bits, n);
  };
  auto of_ops = [&](auto dtype) {
    return WithPairedBinary(op1, [&](auto first) {
      return WithPairedBinary(op2, [&](auto second) { return of_order(dtype, first, second); });
    });
  };
  return f16 ? of_ops(std::true_type()) : of_ops(std::false_type());
}

void ConvertRoundImpl(bool f16, bool from_bool, const void* x, bool scalar, float* y, uint16_t* bits, size_t n) {
  auto loop = [&](auto dtype, auto is_bool) {
    auto result = [x, scalar](auto d, size_t i) {
      const hn::RebindToSigned<decltype(d)> di;
      if constexpr (decltype(is_bool)::value) {
        const hn::Rebind<uint8_t, decltype(d)> d8;
        const uint8_t* b = static_cast<const uint8_t*>(x);
        const hn::RebindToUnsigned<decltype(d)> du;
        const auto byte = scalar ? hn::Set(di, b[0]) : hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, b + i)));
        return hn::IfThenElseZero(hn::RebindMask(d, hn::Ne(byte, hn::Zero(di))), hn::Set(d, 1.0f));
      } else {
        const int32_t* v = static_cast<const int32_t*>(x);
        return hn::ConvertTo(d, scalar ? hn::Set(di, v[0]) : hn::LoadU(di, v + i));  // to nearest, as static_cast
      }
    };
    return RoundLoop<decltype(dtype)::value, HalfCheck::Kind::kMove>(HalfCheck{}, nullptr, 0, y, bits, n, nullptr, result);
  };
  auto of_source = [&](auto dtype) { return from_bool ? loop(dtype, std::true_type()) : loop(dtype, std::false_type()); };
  f16 ? of_source(std::true_type()) : of_source(std::false_type());
}

void IntegerPowF64Impl(int64_t power, const float* x, float* y, size_t n) {
  const int64_t m = power < 0 ? -power : power;
  auto body = [&](auto dd, size_t i) {
    const hn::Rebind<float, decltype(dd)> df;
    const auto v = hn::PromoteTo(dd, hn::LoadU(df, x + i));
    auto r = hn::Set(dd, 1.0);
    for (int64_t k = 0; k < m; ++k) r = hn::Mul(r, v);
    if (power < 0) r = hn::Div(hn::Set(dd, 1.0), r);
    hn::StoreU(hn::DemoteTo(df, r), df, y + i);
  };
  const hn::ScalableTag<double> dd;
  size_t i = 0;
  for (; i + hn::Lanes(dd) <= n; i += hn::Lanes(dd)) body(dd, i);
  for (; i < n; ++i) body(hn::CappedTag<double, 1>(), i);
}

void Choose() {}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rematkit::hwy_backend {

HWY_EXPORT(PromoteImpl);
HWY_EXPORT(RoundImpl);
HWY_EXPORT(BinaryRoundImpl);
HWY_EXPORT(BinaryRoundBitsImpl);
HWY_EXPORT(IntegerPowF64Impl);
HWY_EXPORT(ConvertRoundImpl);
HWY_EXPORT(Binary2RoundImpl);
HWY_EXPORT(Choose);

const HalfLoops& half_loops() {
  static const HalfLoops chosen = [] {
    HWY_DYNAMIC_DISPATCH(Choose)();  // chooses the target before the tables are read
    return HalfLoops{&HWY_DYNAMIC_DISPATCH(PromoteImpl), &HWY_DYNAMIC_DISPATCH(RoundImpl),
                     &HWY_DYNAMIC_DISPATCH(BinaryRoundImpl),
                     &HWY_DYNAMIC_DISPATCH(BinaryRoundBitsImpl), &HWY_DYNAMIC_DISPATCH(Binary2RoundImpl),
                     &HWY_DYNAMIC_DISPATCH(ConvertRoundImpl),
                     &HWY_DYNAMIC_DISPATCH(IntegerPowF64Impl)};
  }();
  return chosen;
}

}  // namespace rematkit::hwy_backend
#endif
