// An amount summed per part of a training step: the forward pass, what the backward pass
// recomputes (the price of remat), and the transposed equations. FLOPs (flops.hpp) and bytes
// communicated (communication.hpp) are counted this way.
#pragma once

#include <cstdint>

namespace rematkit {

struct PassTotals {
  int64_t forward = 0;
  int64_t recompute = 0;
  int64_t backward = 0;

  int64_t total() const { return forward + recompute + backward; }
  PassTotals& operator+=(const PassTotals& b) {
    forward += b.forward;
    recompute += b.recompute;
    backward += b.backward;
    return *this;
  }
  // A loop body's totals, once per iteration.
  friend PassTotals operator*(PassTotals a, int64_t n) {
    a.forward *= n;
    a.recompute *= n;
    a.backward *= n;
    return a;
  }
};

}  // namespace rematkit
