// Everything a sweep file names, checked before its first configuration runs: a typo fails in a
// second, at its line in the sweep file, instead of after minutes of timing.
#pragma once
#include <optional>
#include <string>

#include "rematkit/budget_solver.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"

namespace rematkit::sweep {

// budget(X) in a sweep's policies: the budget solver's cheapest decisions under X (bytes such as
// 64MiB, or a fraction, quoted or not). None for any other policy; a bad-input Error for a bad X.
std::optional<Budget> budget_policy(const std::string& policy);

// Loads the sweep's `plugins:` files into `registry`; one that does not load is an error at its line.
void load_sweep_plugins(const SweepConfig& config, PluginRegistry& registry);

// The policies (each parsed with its arguments, budget(X) included), the backends of every list and
// the program models (read, and their `wrt` names found): a bad-input Error at the first wrong
// entry's line, suggesting near names.
void check_sweep(const SweepConfig& config, const PluginRegistry& plugins);

// The output files and folders: each must be writable, its folder there; an error at the entry's
// line (or, for a path from the command line, `option`: "--csv").
void check_output_file(const std::string& path, const SourceLocation& where, const std::string& what);
void check_output_folder(const std::string& folder, const SourceLocation& where, const std::string& what);

}  // namespace rematkit::sweep
