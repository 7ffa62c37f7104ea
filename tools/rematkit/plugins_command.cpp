#include <iostream>

#include "commands.hpp"

namespace rematkit::cli {
namespace {

struct PluginsOptions {
  PluginOptions plugins;
  std::vector<std::string> directories;
};

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

void run_plugins(const PluginsOptions& o) {
  // Problems are listed, not fatal: this command is how one finds out what is wrong. A --plugin
  // file that does not load is still bad input, as in every other command: exit 2 after the list.
  PluginRegistry registry;
  std::vector<PluginProblem> problems;
  std::string named_file_problem;
  for (const std::string& file : o.plugins.files) {
    try {
      registry.load(file);
    } catch (const Error& e) {
      problems.push_back({file, e.what()});
      if (named_file_problem.empty()) named_file_problem = e.what();
    }
  }
  for (const std::string& dir : o.directories) registry.load_directory(dir);
  for (const std::string& dir : default_plugin_directories()) registry.load_directory(dir);
  problems.insert(problems.end(), registry.problems().begin(), registry.problems().end());
  for (const PluginInfo& p : registry.plugins()) {
    std::cout << p.name << " " << p.version << " (ABI " << p.abi_major << "." << p.abi_minor << ") " << p.file << "\n";
    // Each policy as it is called (its signature), or its name where the plugin gives none.
    std::cout << "  policies:" << (p.policies.empty() ? " -" : "") << "\n";
    for (const PolicyInfo& policy : p.policies)
      std::cout << "    " << (policy.signature.empty() ? policy.name + "  (no signature)" : policy.signature) << "\n";
    std::cout << "  backends: " << joined(p.backends) << "\n";
  }
  for (const PluginProblem& problem : problems) {
    std::string message = problem.message;
    if (message.rfind(problem.file + ": ", 0) == 0) message = message.substr(problem.file.size() + 2);
    std::cout << "problem: " << problem.file << ": " << message << "\n";
  }
  std::cout << std::flush;
  if (!named_file_problem.empty()) fail("--plugin: " + named_file_problem);
}

}  // namespace

void add_plugins_command(CLI::App& app) {
  auto o = std::make_shared<PluginsOptions>();
  CLI::App* cmd = app.add_subcommand("plugins", "list the plugins found, their policies and backends, and problems");
  cmd->footer(
      "Searches the --plugin files, the --plugin-path folders, then each folder of REMATKIT_PLUGIN_PATH, the\n"
      "plugin folder beside this program (lib/rematkit/plugins), the installed one and the build tree's.\n"
      "Prints every plugin with its version, ABI version and file, each of its policies as it is called (its\n"
      "signature), and its backends; a plugin that cannot be loaded is listed as a problem with the reason.");
  add_plugin_option(cmd, o->plugins);
  cmd->add_option("--plugin-path", o->directories, "a folder to search first (repeatable)");
  cmd->callback([o]() { run_plugins(*o); });
}

}  // namespace rematkit::cli
