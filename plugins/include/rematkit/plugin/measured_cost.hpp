// A backend's measured time for a kernel as a function of its element count, for
// rk_backend_api.expected_ns: a few (elements, nanoseconds) points from a benchmark run
// (rematkit_kernels_bench), read between points on a straight line and past the last one at the
// last segment's cost per element. Below the first point the first point's time: a call's fixed
// cost does not shrink.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <utility>

namespace rematkit::plugin {

struct CostPoint {
  double elements;
  double ns;
};

// `table` in increasing elements, at least two points.
inline double measured_ns(std::initializer_list<CostPoint> table, double elements) {
  const CostPoint* p = table.begin();
  const size_t n = table.size();
  if (elements <= p[0].elements) return p[0].ns;
  size_t i = 1;
  while (i + 1 < n && elements > p[i].elements) ++i;
  const CostPoint& a = p[i - 1];
  const CostPoint& b = p[i];
  return a.ns + (b.ns - a.ns) * (elements - a.elements) / (b.elements - a.elements);
}

}  // namespace rematkit::plugin
