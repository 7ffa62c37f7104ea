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

LinearizeOptions linearize_options(const PluginOptions& plugins, const std::string& policy) {
  LinearizeOptions options;
  options.policies = &command_plugins(plugins).policies();
  options.policy = policy;
  return options;
}

}  // namespace rematkit::cli
