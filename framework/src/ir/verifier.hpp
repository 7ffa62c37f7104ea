// The verifier: every equation's output types must be what its primitive computes from its
// operands and params; call primitives must match their bodies. Internal to the parser.
#pragma once


#include "rematkit/program.hpp"

namespace rematkit {

// Throws a bad-input error at the first equation whose types do not fit.
void verify_program(const Program& program);

}  // namespace rematkit
