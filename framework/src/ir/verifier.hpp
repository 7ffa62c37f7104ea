// The verifier: every equation's output types must be what its primitive computes from its
// operands and params; call primitives must match their bodies. Internal to the parser.
#pragma once
#include <string>
#include <vector>

#include "rematkit/ir/program.hpp"

namespace rematkit {

// Throws a bad-input error at the first equation whose types do not fit; with `problems`, adds each
// such error's message to it instead and goes on.
void verify_program(const Program& program, std::vector<std::string>* problems = nullptr);

}  // namespace rematkit
