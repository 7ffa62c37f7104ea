// Everything a sweep file names, checked before its first configuration runs: a typo fails in a
// second, at its line in the sweep file, instead of after minutes of timing.
#pragma once
#include <string>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

// Loads the sweep's `plugins:` files into `registry`; one that does not load is an error at its line.
REMATKIT_SWEEP_EXPORT void load_sweep_plugins(const SweepConfig& config, PluginRegistry& registry);

// The policies (each parsed with its arguments, budget(X) included), the backends of every list and
// the program models (read, and their `wrt` names found): a bad-input Error at the first wrong
// entry's line, suggesting near names.
REMATKIT_SWEEP_EXPORT void check_sweep(const SweepConfig& config, const PluginRegistry& plugins);

// The output files and folders: each must be writable, its folder there; an error at the entry's
// line (or, for a path from the command line, `option`: "--csv").
REMATKIT_SWEEP_EXPORT void check_output_file(const std::string& path, const SourceLocation& where, const std::string& what);
REMATKIT_SWEEP_EXPORT void check_output_folder(const std::string& folder, const SourceLocation& where, const std::string& what);

}  // namespace rematkit::sweep
