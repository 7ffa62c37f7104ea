// Reading programs in jaxpr syntax (docs/program-format.md), including what JAX itself prints
// (out-of-line shared sub-programs, aliases, reprs). Every equation is verified as it is read.
// (Reading one from a file: rematkit/io/program_file.hpp.)
#pragma once

#include <string>
#include <string_view>

#include "rematkit/core_export.hpp"
#include "rematkit/program.hpp"

namespace rematkit {

// Parses and verifies one program. `file` names the source in locations and messages.
// Throws a bad-input Error "FILE:LINE:COL: message" for anything malformed or ill-typed.
REMATKIT_CORE_EXPORT Program parse_program(std::string_view text, const std::string& file);

// Parses one parameter value on its own, e.g. a policy spec given on the command line.
// `source` names it in error messages.
REMATKIT_CORE_EXPORT ParamValue parse_param_value(std::string_view text, const std::string& source);

}  // namespace rematkit
