// Writing programs back in jaxpr syntax; parse_program(print_program(p)) == p.
#pragma once

#include <string>

#include "rematkit/core_export.hpp"

namespace rematkit {

struct Program;

// The program as jaxpr text; nested lines are indented by `indent` spaces.
REMATKIT_CORE_EXPORT std::string print_program(const Program& program, int indent = 0);

}  // namespace rematkit
