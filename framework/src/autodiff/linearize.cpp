#include "rematkit/autodiff/linearize.hpp"

#include "passes.hpp"

namespace rematkit {

Linearization linearize(const Program& program, const LinearizeOptions& options) {
  Linearization lin;
  autodiff::trace_jvp(program, options, lin);
  autodiff::transpose_linear(lin, autodiff::partial_eval(lin));
  return lin;
}

}  // namespace rematkit
