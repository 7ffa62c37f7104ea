// The window reductions as XLA defines ReduceWindow and SelectAndScatter: the operand read as if
// dilated by base_dilation and padded, windows of window_dimensions (their elements
// window_dilation apart) stepping by window_strides. Holes and padding read as the reduction's
// identity. Each window is walked in row-major order of its elements.
#include <algorithm>
#include <cmath>
#include <limits>

#include "loops.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::reference {
namespace {

// Calls fn(i) for each element of the window at output coordinates `oc`: i is the operand's flat
// index, or -1 where the window reads padding or a hole of the base dilation.
template <typename Fn>
void for_each_in_window(const WindowParams& w, std::span<const int64_t> shape, const Dims& strides, const Dims& oc,
                        Fn fn) {
  const int64_t n = count(w.window_dimensions);
  Dims kc;
  for (int64_t k = 0; k < n; ++k) {
    coords_of(k, w.window_dimensions, kc);
    int64_t i = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size() && inside; ++d) {
      const int64_t at = oc[d] * w.window_strides[d] + kc[d] * w.window_dilation[d] - w.padding[d].low;
      inside = at >= 0 && at % w.base_dilation[d] == 0 && at / w.base_dilation[d] < shape[d];
      i += (at / w.base_dilation[d]) * strides[d];
    }
    fn(inside ? i : -1);
  }
}

// The select's identity: what padding reads as (lax._get_max_identity, _get_min_identity).
double identity_for(bool selects_max, int32_t dtype) {
  const IntegerFormat f = integer_format(dtype);
  if (f.bits) return selects_max ? integer_lowest(f) : integer_highest(f);
  return selects_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

// lax.ge / lax.le as the select: whether the element kept so far stays (a NaN never does).
bool keeps(bool selects_max, double kept, double candidate) { return selects_max ? kept >= candidate : kept <= candidate; }

}  // namespace

// Sums in double; max and min propagate NaN, as lax.max and lax.min do.
void reduce_window(WindowReduction kind, const WindowParams& w, const Input& x, const Output& out) {
  const double init = kind == WindowReduction::kSum ? 0.0 : identity_for(kind == WindowReduction::kMax, x.dtype);
  const Dims strides = strides_of(x.shape);
  Dims oc;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, oc);
    double acc = init;
    for_each_in_window(w, x.shape, strides, oc, [&](int64_t i) {
      const double v = i < 0 ? init : x.data[i];
      if (kind == WindowReduction::kSum) acc += v;
      else if (!std::isnan(acc) && (std::isnan(v) || (kind == WindowReduction::kMax ? v > acc : v < acc))) acc = v;
    });
    out.data[o] = acc;
  }
}

// XLA's ReduceWindow over (operand, tangent) pairs, as JAX lowers select_and_gather_add: the pair
// kept so far, starting from (identity, 0), gives way to the next unless select(kept, next) holds;
// padding and holes are (identity, 0).
void select_and_gather_add(bool selects_max, const WindowParams& w, const Input& tangents, const Input& operand,
                           const Output& out) {
  const double identity = identity_for(selects_max, operand.dtype);
  const Dims strides = strides_of(operand.shape);
  Dims oc;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, oc);
    double kept = identity, tangent = 0.0;
    for_each_in_window(w, operand.shape, strides, oc, [&](int64_t i) {
      const double v = i < 0 ? identity : operand.data[i];
      if (keeps(selects_max, kept, v)) return;
      kept = v;
      tangent = i < 0 ? 0.0 : tangents.data[i];
    });
    out.data[o] = tangent;
  }
}

// XLA's SelectAndScatter with an add, over the operand padded with the select's identity (JAX's
// CPU lowering pads explicitly): each window's first element stays selected unless
// select(selected, next) fails; the source value is added where the selection ends, or dropped
// when that is padding.
void select_and_scatter_add(bool selects_max, const WindowParams& w, const Input& source, const Input& operand,
                            const Output& out) {
  const double identity = identity_for(selects_max, operand.dtype);
  const Dims strides = strides_of(operand.shape);
  std::fill(out.data.begin(), out.data.end(), 0.0);
  Dims oc;
  for (int64_t s = 0; s < static_cast<int64_t>(source.data.size()); ++s) {
    coords_of(s, source.shape, oc);
    bool first = true;
    double kept = identity;
    int64_t at = -1;
    for_each_in_window(w, operand.shape, strides, oc, [&](int64_t i) {
      const double v = i < 0 ? identity : operand.data[i];
      if (!first && keeps(selects_max, kept, v)) return;
      first = false;
      kept = v;
      at = i;
    });
    if (at >= 0) out.data[at] += source.data[s];
  }
}

}  // namespace rematkit::reference
