#include "rematkit/sweep/sweep_checks.hpp"

#include <algorithm>

#include "budget_rows.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/near_names.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace rematkit::sweep {
namespace {

// Where entry `i` of a list is, or the file alone for a config built in C++.
SourceLocation place(const std::vector<SourceLocation>& where, size_t i, const std::string& source) {
  return i < where.size() ? where[i] : SourceLocation{source, 0, 0};
}

// A bad-input Error's message moved to `where` (its own location, if any, kept inside it).
[[noreturn]] void relocate(const Error& e, const SourceLocation& where) {
  if (e.kind() != ErrorKind::kBadInput) throw e;
  const std::string message = e.what();
  if (!where.file.empty() && message.rfind(where.str() + ":", 0) == 0) throw e;
  fail_at(where, message);
}

}  // namespace

void load_sweep_plugins(const SweepConfig& config, PluginRegistry& registry) {
  for (size_t i = 0; i < config.plugins.size(); ++i) {
    try {
      registry.load(config.plugins[i]);
    } catch (const Error& e) {
      relocate(e, place(config.plugin_where, i, config.source));
    }
  }
}

void check_sweep(const SweepConfig& config, const PluginRegistry& plugins) {
  for (size_t i = 0; i < config.policies.size(); ++i) {
    const std::string& policy = config.policies[i];
    const SourceLocation where = place(config.policy_where, i, config.source);
    try {
      if (budget_policy(policy)) continue;
      ParamValue spec;
      try {
        spec = parse_param_value(policy, "policy");
      } catch (const Error& e) {
        // The message names the place in the spec; a long spec is shown by its start.
        const std::string shown = policy.size() <= 60 ? policy : policy.substr(0, 57) + "...";
        fail("cannot read the policy '" + shown + "': " + e.what());
      }
      plugins.policies().make(spec, where);
    } catch (const Error& e) {
      relocate(e, where);
    }
  }
  const std::vector<std::string> known = plugins.backend_names();
  std::string available;
  for (const std::string& b : known) available += (available.empty() ? "" : ", ") + b;
  for (size_t i = 0; i < config.backends.size(); ++i)
    for (const std::string& name : config.backends[i])
      if (!plugins.backend(name))
        fail_at(place(config.backend_where, i, config.source),
                "unknown backend '" + name + "'" + did_you_mean(name, known) +
                    " (available: " + (available.empty() ? "none found" : available) + ")");
  // Each backend option names a backend of some list, which takes it.
  for (size_t i = 0; i < config.backend_options.size(); ++i) {
    const BackendOptions::BackendOption& option = config.backend_options[i];
    const SourceLocation where = place(config.backend_option_where, i, config.source);
    const bool listed = std::any_of(config.backends.begin(), config.backends.end(), [&](const std::vector<std::string>& l) {
      return std::find(l.begin(), l.end(), option.backend) != l.end();
    });
    if (!listed)
      fail_at(where, "backend option " + option.backend + "." + option.name + " is for a backend in none of the lists");
    BackendOptions alone{{option.backend}, &plugins};
    alone.backend_options = {option};
    try {
      BackendSet{alone};
    } catch (const Error& e) {
      relocate(e, where);
    }
  }
  for (const ModelSpec& model : config.models)
    if (model.kind == ModelSpec::Kind::kProgram) {
      try {
        model_program(model, "everything_saveable");  // its file, retarget and wrt; nothing drawn
      } catch (const Error& e) {
        relocate(e, model.program.file_where.file.empty() ? SourceLocation{config.source, 0, 0} : model.program.file_where);
      }
    }
}

void check_output_file(const std::string& path, const SourceLocation& where, const std::string& what) {
  if (const std::string why = unwritable_file_reason(path, what); !why.empty()) fail_at(where, why);
}

void check_output_folder(const std::string& folder, const SourceLocation& where, const std::string& what) {
  if (const std::string why = unwritable_folder_reason(folder, what); !why.empty()) fail_at(where, why);
}

}  // namespace rematkit::sweep
