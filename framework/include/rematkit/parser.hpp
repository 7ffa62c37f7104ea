// Reading programs in jaxpr syntax (docs/program-format.md), including what JAX itself prints
// (out-of-line shared sub-programs, aliases, reprs). Every equation is verified as it is read.
// (Reading one from a file: rematkit/io/program_file.hpp.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/program.hpp"

namespace rematkit {

// Parses and verifies one program. `file` names the source in locations and messages.
// Throws a bad-input Error "FILE:LINE:COL: message" for anything malformed or ill-typed.
REMATKIT_CORE_EXPORT Program parse_program(std::string_view text, const std::string& file);

// Every problem parse_program would stop at, in file order, each "FILE:LINE:COL: message": a bad
// equation is reported and skipped (its outputs keep their declared types, and an unsupported
// dtype stands in as f32 or i32). A problem that recurs (a dtype, an unknown primitive) is
// reported once, at its first place, with the other lines. Empty when the program reads and
// verifies.
REMATKIT_CORE_EXPORT std::vector<std::string> program_problems(std::string_view text, const std::string& file);

// Parses one parameter value on its own, e.g. a policy spec given on the command line.
// `source` names it in error messages.
REMATKIT_CORE_EXPORT ParamValue parse_param_value(std::string_view text, const std::string& source);

}  // namespace rematkit
