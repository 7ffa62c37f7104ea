// Reading programs in jaxpr syntax (reference/program-format.md), including what JAX itself prints
// (out-of-line shared sub-programs, aliases, reprs). Every equation is verified as it is read.
#pragma once
#include <string>
#include <string_view>

#include "rematkit/program.hpp"

namespace rematkit {

// Parses and verifies one program. `file` names the source in locations and messages.
// Throws a bad-input Error "FILE:LINE:COL: message" for anything malformed or ill-typed.
Program parse_program(std::string_view text, const std::string& file);

// Reads and parses a file; a missing, unreadable or empty file is a bad-input error.
Program load_program(const std::string& path);

}  // namespace rematkit
