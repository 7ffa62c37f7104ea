#include "rematkit/linearize.hpp"

#include "passes.hpp"

namespace rematkit {

Linearization linearize(const Program& program, const LinearizeOptions& options) {
  Linearization lin;
  autodiff::trace_jvp(program, options, lin);
  const std::vector<int> live = autodiff::partial_eval(lin);
  autodiff::transpose_linear(lin, live);
  return lin;
}

}  // namespace rematkit
