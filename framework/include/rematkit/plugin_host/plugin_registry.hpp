// Loading plugin libraries through the C ABI (plugins/include/rematkit/plugin/rk_plugin.h) and
// making their policies available by name.
#pragma once

#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/policy/policy.hpp"

struct rk_backend_api;

namespace rematkit {

// A plugin's policy: its name, and how to call it (empty when the plugin predates ABI 1.1 or
// gives none).
struct PolicyInfo {
  std::string name;
  std::string signature;
};

// A loaded plugin, as `rematkit plugins` lists it.
struct PluginInfo {
  std::string file;       // as loaded
  std::string name;       // the plugin's own name
  std::string version;    // the plugin's own version
  int abi_major = 0, abi_minor = 0;
  std::vector<PolicyInfo> policies;
  std::vector<std::string> backends;
};

// A library in a plugin folder that could not be loaded, and why.
struct PluginProblem {
  std::string file;
  std::string message;  // one line: what is wrong with it
};

// The plugins loaded into this process: their policies (policies()) and backends (backend()).
class REMATKIT_CORE_EXPORT PluginRegistry {
 public:
  // Loads one plugin library. A bad-input Error, naming the file, if it is not a shared library,
  // has no rk_plugin_get_api, was built for another ABI major, fails to initialize, or defines a
  // policy or backend name that is already taken. Loading the same file twice does nothing.
  void load(const std::string& path);
  // Loads every *.so in `directory` (in name order); failures become problems, not errors.
  void load_directory(const std::string& directory);
  // `explicit_paths` (files, errors are fatal), then the directories of default_plugin_directories().
  void discover(const std::vector<std::string>& explicit_paths);

  const std::vector<PluginInfo>& plugins() const { return plugins_; }
  const std::vector<PluginProblem>& problems() const { return problems_; }
  const PolicyRegistry& policies() const { return policies_; }
  // The backend called `name`, or nullptr.
  const rk_backend_api* backend(const std::string& name) const;
  // The ABI minor the plugin holding backend `name` was built against (0 if there is none).
  int backend_abi_minor(const std::string& name) const;
  // The backends' names, in load order.
  std::vector<std::string> backend_names() const;
  // The default preference: the installed ones of onednn, highway and reference, fastest first.
  std::vector<std::string> fastest_backends() const;

 private:
  std::vector<PluginInfo> plugins_;
  std::vector<PluginProblem> problems_;
  std::vector<std::string> loaded_files_;  // canonical paths
  PolicyRegistry policies_;
  std::vector<std::pair<std::string, const rk_backend_api*>> backends_;
};

// Where plugins are looked for, in order: each entry of REMATKIT_PLUGIN_PATH (':'-separated),
// rematkit/plugins beside the rematkit::core library (the installed layout, also the build tree's),
// and lib/rematkit/plugins beside the running program's bin/. Existing directories only, no repeats.
REMATKIT_CORE_EXPORT std::vector<std::string> default_plugin_directories();

// The plugins found by default discovery, loaded once per process, and their policies.
REMATKIT_CORE_EXPORT const PluginRegistry& default_plugins();
REMATKIT_CORE_EXPORT const PolicyRegistry& default_policies();

}  // namespace rematkit
