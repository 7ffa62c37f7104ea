#include "rematkit/plugin_host/plugin_registry.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "rematkit/plugin_host/backend_options.hpp"
#include "../policy/default_registry.hpp"
#include "host_api.hpp"
#include "plugin_policy.hpp"
#include "rematkit/plugin/rk_backend.h"
#include "rematkit/plugin/rk_policy.h"

namespace rematkit {
namespace fs = std::filesystem;

namespace {

std::string abi_str(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// A plugin whose kernels run on OpenMP (oneDNN's runtime, libgomp) shares the cores with oneTBB's
// workers, which run the core's parallel passes and the Highway backend. libgomp's threads spin
// after each parallel region by default and hold the core the next TBB task needs; told to sleep
// instead they cost a wake-up per region, which measured cheaper (docs/performance.md, "OpenMP
// beside oneTBB"). libgomp reads the setting once, when it is loaded, so it is set before the first
// plugin is; a user's own OMP_WAIT_POLICY stands.
void prefer_sleeping_openmp_threads() { setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0); }

}  // namespace

void PluginRegistry::load(const std::string& path) {
  const std::string key = canonical(path);
  if (std::find(loaded_files_.begin(), loaded_files_.end(), key) != loaded_files_.end()) return;
  prefer_sleeping_openmp_threads();
  // RTLD_LOCAL keeps plugins' symbols apart; the library stays loaded for the life of the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    fail(path + ": not a loadable plugin library (" + (why ? why : "dlopen failed") + ")");
  }
  auto get_api = reinterpret_cast<rk_plugin_get_api_fn>(dlsym(handle, RK_PLUGIN_ENTRY_SYMBOL));
  if (!get_api) fail(path + ": no " RK_PLUGIN_ENTRY_SYMBOL " symbol, so it is not a rematkit plugin");
  const rk_plugin_api* api = get_api();
  if (!api) fail(path + ": " RK_PLUGIN_ENTRY_SYMBOL " returned no plugin table");
  if (api->struct_size < RK_STRUCT_SIZE(rk_plugin_api, abi))
    fail(path + ": its plugin table is too small to hold an ABI version");
  if (api->abi.major != RK_ABI_MAJOR)
    fail(path + ": plugin ABI " + abi_str(api->abi.major, api->abi.minor) + " is incompatible with this rematkit's ABI " +
         abi_str(RK_ABI_MAJOR, RK_ABI_MINOR) + " (the major versions differ; rebuild the plugin against these headers)");
  if (api->struct_size < RK_STRUCT_SIZE(rk_plugin_api, backends) || !api->name || !api->version)
    fail(path + ": its plugin table is incomplete for ABI " + abi_str(api->abi.major, api->abi.minor));

  PluginInfo info{path, api->name, api->version, api->abi.major, api->abi.minor, {}, {}};
  for (const PluginInfo& other : plugins_)
    if (other.name == info.name) fail(path + ": plugin '" + info.name + "' is already loaded from " + other.file);
  // Check every table and name before anything is registered, so a rejected plugin leaves no trace.
  std::set<std::string> names;
  for (size_t i = 0; i < api->num_policies; ++i) {
    const rk_policy_api* p = api->policies[i];
    if (!p || p->struct_size < RK_STRUCT_SIZE(rk_policy_api, decide) || !p->name || !p->create || !p->decide)
      fail(path + ": policy table " + std::to_string(i) + " of plugin '" + info.name + "' is incomplete");
    if (policies_.contains(p->name) || !names.insert(p->name).second) {
      std::string owner = "itself";
      for (const PluginInfo& other : plugins_)
        for (const PolicyInfo& policy : other.policies)
          if (policy.name == p->name) owner = "plugin '" + other.name + "' (" + other.file + ")";
      fail(path + ": policy '" + std::string(p->name) + "' of plugin '" + info.name + "' is already defined by " + owner);
    }
    const bool has_signature = RK_HAS_FIELD(p, rk_policy_api, signature) && p->signature;
    info.policies.push_back(PolicyInfo{p->name, has_signature ? p->signature : ""});
  }
  for (size_t i = 0; i < api->num_backends; ++i) {
    const rk_backend_api* b = api->backends[i];
    if (!b || b->struct_size < RK_STRUCT_SIZE(rk_backend_api, kernel_destroy) || !b->name)
      fail(path + ": backend table " + std::to_string(i) + " of plugin '" + info.name + "' is incomplete");
    if (backend(b->name) || !names.insert(std::string("backend:") + b->name).second)
      fail(path + ": backend '" + std::string(b->name) + "' of plugin '" + info.name + "' is already defined");
    info.backends.push_back(b->name);
  }
  if (api->initialize) {
    if (rk_error* error = api->initialize(plugin_host::host_api()))
      fail(path + ": plugin '" + info.name + "' failed to initialize: " + plugin_host::take_error(error));
  }
  for (size_t i = 0; i < api->num_policies; ++i)
    policies_.add(api->policies[i]->name, plugin_host::plugin_policy_factory(api->policies[i]));
  for (size_t i = 0; i < api->num_backends; ++i) backends_.emplace_back(api->backends[i]->name, api->backends[i]);
  loaded_files_.push_back(key);
  plugins_.push_back(std::move(info));
}

void PluginRegistry::load_directory(const std::string& directory) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec))
    if (entry.path().extension() == ".so") files.push_back(entry.path().string());
  if (ec) problems_.push_back({directory, "cannot read the plugin directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    try {
      load(file);
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.rfind(file + ": ", 0) == 0) message = message.substr(file.size() + 2);
      problems_.push_back({file, message});
    }
  }
}

void PluginRegistry::discover(const std::vector<std::string>& explicit_paths) {
  for (const std::string& path : explicit_paths) load(path);
  for (const std::string& dir : default_plugin_directories()) load_directory(dir);
}

std::vector<std::string> default_plugin_directories() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("REMATKIT_PLUGIN_PATH")) {
    std::stringstream entries(env);
    for (std::string entry; std::getline(entries, entry, ':');)
      if (!entry.empty()) candidates.push_back(entry);
  }
  // rematkit/plugins beside this library, wherever it was installed (or built): relocatable, and
  // what an application linking rematkit::core finds without any environment variable.
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&default_plugin_directories), &self) && self.dli_fname)
    candidates.push_back((fs::path(self.dli_fname).parent_path() / "rematkit" / "plugins").string());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path().parent_path() / "lib" / "rematkit" / "plugins").string());
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  for (const std::string& c : candidates) {
    if (!fs::is_directory(c, ec)) continue;
    if (const std::string dir = canonical(c); seen.insert(dir).second) dirs.push_back(dir);
  }
  return dirs;
}

const rk_backend_api* PluginRegistry::backend(const std::string& name) const {
  for (const auto& [n, api] : backends_)
    if (n == name) return api;
  return nullptr;
}

int PluginRegistry::backend_abi_minor(const std::string& name) const {
  for (const PluginInfo& p : plugins_)
    for (const std::string& b : p.backends)
      if (b == name) return p.abi_minor;
  return 0;
}

std::vector<std::string> PluginRegistry::backend_names() const {
  std::vector<std::string> names;
  for (const auto& [n, api] : backends_) names.push_back(n);
  return names;
}

std::vector<std::string> PluginRegistry::fastest_backends() const {
  std::vector<std::string> preference;
  for (const char* fastest_first : {"onednn", "highway", "reference"})
    if (backend(fastest_first)) preference.push_back(fastest_first);
  return preference;
}

BackendOptions::BackendOption parse_backend_option(const std::string& text) {
  const size_t dot = text.find('.'), equals = text.find('=');
  if (dot == 0 || dot == std::string::npos || equals == std::string::npos || equals < dot + 2)
    fail("backend option '" + text + "': write it as BACKEND.NAME=VALUE, e.g. onednn.weights_layout=as_it_lies");
  BackendOptions::BackendOption option{text.substr(0, dot), text.substr(dot + 1, equals - dot - 1), text.substr(equals + 1)};
  const std::string& value = std::get<std::string>(option.value);
  int64_t number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (!value.empty() && error == std::errc() && end == value.data() + value.size()) option.value = number;
  return option;
}

std::vector<std::string> preference_or_fastest(const BackendOptions& options) {
  if (!options.preference.empty()) return options.preference;
  return (options.plugins ? *options.plugins : default_plugins()).fastest_backends();
}

const PluginRegistry& default_plugins() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    r.discover({});
    return r;
  }();
  return registry;
}

const PolicyRegistry& default_policies() { return default_plugins().policies(); }

// linearize() falls back on default_policies() through the policy layer (policy/default_registry.hpp).
[[maybe_unused]] static const bool default_policies_installed = (install_default_policies(&default_policies), true);

}  // namespace rematkit
