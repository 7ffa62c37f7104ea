// The JVP of cumprod, cummax, cummin and cumlogsumexp as JAX takes it (loops.py,
// _cumulative_jvp_rule): the JVP of lax.associative_scan with the reduction's combine function,
// so the equations and the residuals are those of the parallel prefix scan's tree.
#pragma once
#include "emitter.hpp"

namespace rematkit::autodiff {

// The tangent of `prim` (kCumprod, kCummax, kCummin or kCumlogsumexp) along `axis` of x, given
// x's tangent g; `reverse` scans from the far end.
ValueId cumulative_jvp(Emitter& em, Prim prim, ValueId x, ValueId g, int64_t axis, bool reverse);

}  // namespace rematkit::autodiff
