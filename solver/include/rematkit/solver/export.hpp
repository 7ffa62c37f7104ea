// REMATKIT_SOLVER_EXPORT marks the solver's public API. The solver is a static library compiled with
// hidden visibility and linked into rematkit::sweep among others: what is marked stays visible in the
// shared library it is linked into, and its internals (rematkit::solver::) do not. (CMake's
// generate_export_header leaves the macro empty for a static library, so it is written here.)
#pragma once

#define REMATKIT_SOLVER_EXPORT __attribute__((visibility("default")))
