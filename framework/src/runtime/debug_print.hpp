// What a debug print (debug_callback, debug_print) says when --debug-prints runs it.
#pragma once

#include <string>
#include <vector>

#include "rematkit/autodiff/graph.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

// jax.debug.print's line: its format string (fmt=, JAX 0.7.2 on) with each {} or {name} replaced by
// the next operand, as str.format takes positional and keyword fields in order here; without one
// (debug_callback prints a Python closure), the place and every operand.
std::string format_debug_print(const FlatEquation& eqn, const std::vector<Tensor>& operands);

}  // namespace rematkit
