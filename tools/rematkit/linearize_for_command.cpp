#include <optional>

#include "commands.hpp"

namespace rematkit::cli {

void add_plugin_option(CLI::App* cmd, PluginOptions& options) {
  cmd->add_option("--plugin", options.files,
                  "a plugin library to load first (repeatable); REMATKIT_PLUGIN_PATH adds folders to search");
}

const PluginRegistry& command_plugins(const PluginOptions& options) {
  static std::optional<PluginRegistry> registry;
  if (!registry) {
    PluginRegistry loaded;
    loaded.discover(options.files);
    registry = std::move(loaded);
  }
  return *registry;
}

void add_backend_option(CLI::App* cmd, std::vector<std::string>& backends) {
  cmd->add_option("--backend", backends,
                  "backends to run on, in order of preference: an equation runs on the first that supports it "
                  "(default: reference; rematkit plugins lists them)")
      ->delimiter(',');
}

Linearization linearize_for_command(const Program& program, const std::string& whole_program_policy,
                                    const PolicyRegistry& policies) {
  LinearizeOptions options;
  options.policies = &policies;
  if (!whole_program_policy.empty())
    options.whole_program_policy = policies.parse(whole_program_policy, {"--policy", 0, 0});
  return linearize(program, options);
}

}  // namespace rematkit::cli
