// The rematkit subcommands. Each registers its options on the CLI11 app and runs when chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "rematkit/linearize.hpp"

namespace rematkit::cli {

// The program `rematkit residuals` reports on when given no FILE (examples/two_layer.jaxpr).
const char* builtin_example_program();
constexpr const char* kBuiltinExampleName = "<builtin example>";

// Linearizes `program` with the built-in policies; a non-empty `whole_program_policy` (--policy)
// checkpoints the whole program with that policy.
rematkit::Linearization linearize_for_command(const rematkit::Program& program, const std::string& whole_program_policy);

void add_residuals_command(CLI::App& app);
void add_grad_command(CLI::App& app);
void add_mlp_command(CLI::App& app);

}  // namespace rematkit::cli
