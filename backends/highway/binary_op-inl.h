// kernels.hpp's f32 binary ops on Highway vectors, shared by every file that computes them
// (elementwise.cpp's loops, half_precision.cpp's passes that compute and round at once), so that
// both give the same bits. Included once per target from within a file that foreach_target.h
// compiles for each, hence the include guard that toggles with HWY_TARGET_TOGGLE.
#if defined(RK_HIGHWAY_BINARY_OP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RK_HIGHWAY_BINARY_OP_INL_H_
#undef RK_HIGHWAY_BINARY_OP_INL_H_
#else
#define RK_HIGHWAY_BINARY_OP_INL_H_
#endif

#include <hwy/highway.h>

#include "highway/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {

template <Binary op, class V>
HWY_INLINE V ApplyBinary(V a, V b) {
  namespace hn = hwy::HWY_NAMESPACE;
  if constexpr (op == Binary::kAdd) return hn::Add(a, b);
  if constexpr (op == Binary::kSub) return hn::Sub(a, b);
  if constexpr (op == Binary::kMul) return hn::Mul(a, b);
  if constexpr (op == Binary::kDiv) return hn::Div(a, b);
  if constexpr (op == Binary::kMax) return hn::Max(a, b);
  return hn::Min(a, b);
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#endif  // RK_HIGHWAY_BINARY_OP_INL_H_
