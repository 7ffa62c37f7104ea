// lax's six comparisons into 0 / 1 bytes on Highway vectors, of f32 (elementwise.cpp) and of i32 or
// u32 lanes (integer_lanes.cpp), one loop for all three. Included once per target from within a
// file that foreach_target.h compiles for each, hence the include guard that toggles with
// HWY_TARGET_TOGGLE.
#if defined(RK_HIGHWAY_COMPARE_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RK_HIGHWAY_COMPARE_LOOP_INL_H_
#undef RK_HIGHWAY_COMPARE_LOOP_INL_H_
#else
#define RK_HIGHWAY_COMPARE_LOOP_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {

template <Compare op, class V>
HWY_INLINE auto CompareMask(V a, V b) {
  namespace hn = hwy::HWY_NAMESPACE;
  // Highway 1.0.3 orders integer lanes by Gt and Lt alone: their Ge and Le are the negations,
  // which for floats would be true beside a NaN.
  constexpr bool kFloat = hwy::IsFloat<hn::TFromV<V>>();
  if constexpr (op == Compare::kGt) return hn::Gt(a, b);
  if constexpr (op == Compare::kLt) return hn::Lt(a, b);
  if constexpr (op == Compare::kGe) {
    if constexpr (kFloat) return hn::Ge(a, b);
    else return hn::Not(hn::Lt(a, b));
  }
  if constexpr (op == Compare::kLe) {
    if constexpr (kFloat) return hn::Le(a, b);
    else return hn::Not(hn::Gt(a, b));
  }
  if constexpr (op == Compare::kEq) return hn::Eq(a, b);
  if constexpr (op == Compare::kNe) return hn::Not(hn::Eq(a, b));  // true beside a NaN, as lax.ne (Highway's Ne is ordered on x86)
}

// y[i] = a[i or 0] op b[i or 0] on lanes of T (float, int32_t or uint32_t): masks become 1 / 0
// int32 lanes, then bytes (a saturating demotion); the tail through one padded vector.
template <Compare op, typename T>
void CompareLoop(const T* a, bool a_scalar, const T* b, bool b_scalar, uint8_t* y, size_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  if (n == 0) return;
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> du8;
  const size_t lanes = hn::Lanes(d);
  const auto one = hn::Set(di, 1);
  const auto sa = hn::Set(d, a[0]), sb = hn::Set(d, b[0]);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto mask = CompareMask<op>(a_scalar ? sa : hn::LoadU(d, a + i), b_scalar ? sb : hn::LoadU(d, b + i));
    hn::StoreU(hn::DemoteTo(du8, hn::IfThenElseZero(hn::RebindMask(di, mask), one)), du8, y + i);
  }
  if (i == n) return;
  HWY_ALIGN T va[hn::MaxLanes(d)], vb[hn::MaxLanes(d)];
  HWY_ALIGN int32_t out[hn::MaxLanes(d)];
  const size_t count = n - i;
  for (size_t j = 0; j < lanes; ++j) va[j] = j < count ? a[a_scalar ? 0 : i + j] : T{0}, vb[j] = j < count ? b[b_scalar ? 0 : i + j] : T{0};
  hn::Store(hn::IfThenElseZero(hn::RebindMask(di, CompareMask<op>(hn::Load(d, va), hn::Load(d, vb))), one), di, out);
  for (size_t j = 0; j < count; ++j) y[i + j] = static_cast<uint8_t>(out[j]);
}

// CompareLoop of the comparison `op` (a Compare).
template <typename T>
void CompareAny(int op, const T* a, bool a_scalar, const T* b, bool b_scalar, uint8_t* y, size_t n) {
  switch (static_cast<Compare>(op)) {
    case Compare::kGt: return CompareLoop<Compare::kGt>(a, a_scalar, b, b_scalar, y, n);
    case Compare::kGe: return CompareLoop<Compare::kGe>(a, a_scalar, b, b_scalar, y, n);
    case Compare::kLt: return CompareLoop<Compare::kLt>(a, a_scalar, b, b_scalar, y, n);
    case Compare::kLe: return CompareLoop<Compare::kLe>(a, a_scalar, b, b_scalar, y, n);
    case Compare::kEq: return CompareLoop<Compare::kEq>(a, a_scalar, b, b_scalar, y, n);
    case Compare::kNe: return CompareLoop<Compare::kNe>(a, a_scalar, b, b_scalar, y, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#endif  // RK_HIGHWAY_COMPARE_LOOP_INL_H_
