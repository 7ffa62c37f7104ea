#include "associative_scan_jvp.hpp"

#include <cmath>
#include <limits>

#include "jvp_rules.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace rematkit::autodiff {
namespace {

// A value of the scan and its tangent.
struct Dual {
  ValueId primal, tangent;
};

class Scanner {
 public:
  Scanner(Emitter& em, Prim prim, int64_t axis) : em_(em), prim_(prim), axis_(axis) {}

  // slicing.slice_in_dim(v, start, limit, stride) along the axis (limit < 0 counts from the end).
  ValueId slice(ValueId v, bool tangent, int64_t start, int64_t limit, int64_t stride = 1) {
    const Shape shape = em_.shape(v);
    const int64_t n = shape[static_cast<size_t>(axis_)];
    if (limit < 0) limit += n;
    Shape starts(shape.size(), 0), limits = shape, strides(shape.size(), 1);
    starts[static_cast<size_t>(axis_)] = start;
    limits[static_cast<size_t>(axis_)] = std::max(start, limit);
    strides[static_cast<size_t>(axis_)] = stride;
    return op(tangent, Prim::kSlice, {v}, slice_params(starts, limits, strides));
  }
  Dual slice(Dual d, int64_t start, int64_t limit, int64_t stride = 1) {
    return {slice(d.primal, false, start, limit, stride), slice(d.tangent, true, start, limit, stride)};
  }

  // The combine function and its JVP (lax.py: mul's, max's and min's rules; logaddexp's).
  Dual combine(Dual a, Dual b) {
    if (prim_ == Prim::kCumprod) {  // ta b + a tb
      const ValueId p = em_.known(Prim::kMul, {a.primal, b.primal});
      return {p, em_.linear(Prim::kAdd, {em_.linear(Prim::kMul, {a.tangent, b.primal}),
                                         em_.linear(Prim::kMul, {a.primal, b.tangent})})};
    }
    if (prim_ == Prim::kCummax || prim_ == Prim::kCummin) {  // each tangent weighted by _balanced_eq
      const ValueId p = em_.known(prim_ == Prim::kCummax ? Prim::kMax : Prim::kMin, {a.primal, b.primal});
      return {p, em_.linear(Prim::kAdd, {em_.linear(Prim::kMul, {a.tangent, balanced_eq(em_, a.primal, p, b.primal)}),
                                         em_.linear(Prim::kMul, {b.tangent, balanced_eq(em_, b.primal, p, a.primal)})})};
    }
    // cumlogsumexp's logaddexp: max + log1p(exp(-|a - b|)), a + b where the difference is NaN;
    // its tangent ta exp(a - p) + tb exp(b - p).
    const ValueId amax = em_.known(Prim::kMax, {a.primal, b.primal});
    const ValueId delta = em_.known(Prim::kSub, {a.primal, b.primal});
    const ValueId is_nan = em_.known(Prim::kNe, {delta, delta});
    const ValueId spread =
        em_.known(Prim::kLog1p, {em_.known(Prim::kExp, {em_.known(Prim::kNeg, {em_.known(Prim::kAbs, {delta})})})});
    const ValueId p = em_.known(Prim::kSelectN, {is_nan, em_.known(Prim::kAdd, {amax, spread}),
                                                 em_.known(Prim::kAdd, {a.primal, b.primal})});
    const ValueId wa = em_.known(Prim::kExp, {em_.known(Prim::kSub, {a.primal, p})});
    const ValueId wb = em_.known(Prim::kExp, {em_.known(Prim::kSub, {b.primal, p})});
    return {p, em_.linear(Prim::kAdd, {em_.linear(Prim::kMul, {a.tangent, wa}), em_.linear(Prim::kMul, {b.tangent, wb})})};
  }

  // loops.py associative_scan's _scan: combine adjacent pairs, scan those, then fill in the evens.
  Dual scan(Dual elems) {
    const int64_t n = em_.shape(elems.primal)[static_cast<size_t>(axis_)];
    if (n < 2) return elems;
    const Dual reduced = combine(slice(elems, 0, -1, 2), slice(elems, 1, n, 2));
    const Dual odd = scan(reduced);
    const int64_t m = em_.shape(odd.primal)[static_cast<size_t>(axis_)];
    const Dual even = n % 2 == 0 ? combine(slice(odd, 0, m - 1), slice(elems, 2, n, 2)) : combine(odd, slice(elems, 2, n, 2));
    const Dual first = slice(elems, 0, 1);
    const Dual evens{op(false, Prim::kConcatenate, {first.primal, even.primal}, concatenate_params(axis_)),
                     op(true, Prim::kConcatenate, {first.tangent, even.tangent}, concatenate_params(axis_))};
    return {interleave(evens.primal, odd.primal, false), interleave(evens.tangent, odd.tangent, true)};
  }

  // loops.py _interleave: a at the even positions, b at the odd ones, by padding each with zeros
  // between its elements and adding.
  ValueId interleave(ValueId a, ValueId b, bool tangent) {
    const Shape as = em_.shape(a), bs = em_.shape(b);
    const bool same = as[static_cast<size_t>(axis_)] == bs[static_cast<size_t>(axis_)];
    std::vector<PaddingDim> a_pad(as.size(), PaddingDim{0, 0, 0}), b_pad(bs.size(), PaddingDim{0, 0, 0});
    a_pad[static_cast<size_t>(axis_)] = PaddingDim{0, same ? 1 : 0, 1};
    b_pad[static_cast<size_t>(axis_)] = PaddingDim{1, same ? 0 : 1, 1};
    const ValueId zero = em_.literal(0.0, em_.type(a).dtype);
    return op(tangent, Prim::kAdd, {op(tangent, Prim::kPad, {a, zero}, pad_params(a_pad)), op(tangent, Prim::kPad, {b, zero}, pad_params(b_pad))});
  }

  ValueId rev(ValueId v, bool tangent) { return op(tangent, Prim::kRev, {v}, rev_params({axis_})); }

 private:
  ValueId op(bool tangent, Prim prim, std::vector<ValueId> inputs, Params p = {}) {
    return tangent ? em_.linear(prim, std::move(inputs), std::move(p)) : em_.known(prim, std::move(inputs), std::move(p));
  }

  Emitter& em_;
  Prim prim_;
  int64_t axis_;
};

}  // namespace

ValueId cumulative_jvp(Emitter& em, Prim prim, ValueId x, ValueId g, int64_t axis, bool reverse) {
  Scanner s(em, prim, axis);
  Dual elems{x, g};
  if (reverse) elems = {s.rev(x, false), s.rev(g, true)};
  Dual out = s.scan(elems);
  return reverse ? s.rev(out.tangent, true) : out.tangent;
}

}  // namespace rematkit::autodiff
