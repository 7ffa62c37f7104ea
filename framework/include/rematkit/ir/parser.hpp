// Reading programs in jaxpr syntax (docs/program-format.md), including what JAX itself prints
// (out-of-line shared sub-programs, aliases, reprs). Every equation is verified as it is read.
// (Reading one from a file: rematkit/io/program_file.hpp.)
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

// Types for the main jaxpr's binders written without one, as JAX before 0.2.22 printed them
// (rematkit's --arg-types), by binder name.
using ArgTypes = std::map<std::string, Type>;
// "a:f32[3], b:i32[]" as --arg-types gives it; errors at `source`:1:COL.
REMATKIT_CORE_EXPORT ArgTypes parse_arg_types(std::string_view text, const std::string& source);

// Parses and verifies one program. `file` names the source in locations and messages.
// Throws a bad-input Error "FILE:LINE:COL: message" for anything malformed or ill-typed. Untyped
// binders of the main jaxpr take their types from `arg_types`, which must name only such binders;
// untyped equation outputs, and a call's untyped body, take the types they compute.
REMATKIT_CORE_EXPORT Program parse_program(std::string_view text, const std::string& file,
                                           const ArgTypes& arg_types = {});

// Every problem parse_program would stop at, in file order, each "FILE:LINE:COL: message": a bad
// equation is reported and skipped (its outputs keep their declared types, and an unsupported
// dtype stands in as f32 or i32). A problem that recurs (a dtype, an unknown primitive) is
// reported once, at its first place, with the other lines. Empty when the program reads and
// verifies.
REMATKIT_CORE_EXPORT std::vector<std::string> program_problems(std::string_view text, const std::string& file,
                                                              const ArgTypes& arg_types = {});

// Parses one parameter value on its own, e.g. a policy spec given on the command line.
// `source` names it in error messages.
REMATKIT_CORE_EXPORT ParamValue parse_param_value(std::string_view text, const std::string& source);

}  // namespace rematkit
