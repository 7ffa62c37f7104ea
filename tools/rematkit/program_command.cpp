// `rematkit program [SWEEP.yaml] [--model NAME]`: a sweep model's program in jaxpr syntax, so that
// what a sweep builds (gpt:, mlp:, cnn:, transformer:) can be read, edited, and asked about with
// residuals, solve and memory like any pasted program.
#include <iostream>

#include "commands.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/near_names.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace rematkit::cli {
namespace {

struct ProgramOptions {
  PluginOptions plugins;
  std::string file;  // empty: the default sweep
  std::string model;
  std::string policy = "everything_saveable";
  std::string mesh;  // --mesh fsdp=8: the params split over the axis
};

const sweep::ModelSpec& chosen_model(const sweep::SweepConfig& config, const std::string& name) {
  std::vector<std::string> names;
  for (const sweep::ModelSpec& m : config.models) names.push_back(m.name);
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  if (name.empty()) {
    if (config.models.size() == 1) return config.models[0];
    fail(config.source + " has " + std::to_string(config.models.size()) + " models: choose one with --model (" + listed + ")");
  }
  for (const sweep::ModelSpec& m : config.models)
    if (m.name == name) return m;
  fail("--model: '" + name + "' is not a model of " + config.source + did_you_mean(name, names) + " (models: " + listed + ")");
}

void run_program(const ProgramOptions& o) {
  const sweep::SweepConfig config =
      o.file.empty() ? sweep::parse_sweep(sweep::default_sweep_yaml(), "<default sweep>") : sweep::load_sweep(o.file);
  const sweep::ModelSpec& model = chosen_model(config, o.model);
  // The policy goes into the program's checkpoints as text: checked here, not when read back.
  command_plugins(o.plugins).policies().parse(o.policy, SourceLocation{"--policy", 0, 0});
  // The program alone: no value is drawn, so a 7B model prints in seconds.
  sweep::ModelProgram m = sweep::model_program(model, o.policy);
  std::string split;
  if (!o.mesh.empty()) {
    const Mesh mesh = parse_mesh_option(o.mesh, {"--mesh", 0, 0});
    if (mesh.axes.size() != 1)
      fail("--mesh: program splits the params over one axis, as FSDP does (such as fsdp=8), not " + mesh.str());
    m.program = split_arguments_over_axis(m.program, m.trained, mesh.axes[0].name, mesh.axes[0].size);
    split = "# each param split over " + mesh.str() + " (a sharding_constraint, its largest dim the axis divides)\n";
  }
  // A sweep trains its params only (its data gets no gradient): --wrt says the same when the text
  // is read back, so residuals, solve and memory answer as for the sweep's step.
  std::string wrt;
  for (size_t i : m.trained) wrt += (wrt.empty() ? "" : ",") + std::to_string(i);
  std::cout << "# " << model.name << " from " << config.source << ", its checkpoints with " << o.policy << "\n"
            << "# the sweep trains arguments " << (wrt.empty() ? "(none)" : wrt) << "; for its answers, read it back with:\n"
            << "#   --wrt " << (wrt.empty() ? "(none)" : wrt)
            << (m.whole_program_policy.empty() ? "" : " --policy \"" + m.whole_program_policy + "\"") << "\n"
            << split << print_program(m.program) << "\n";
}

}  // namespace

void add_program_command(CLI::App& app) {
  auto o = std::make_shared<ProgramOptions>();
  CLI::App* cmd = app.add_subcommand("program", "print a sweep model's program in jaxpr syntax");
  cmd->footer(
      "Without SWEEP.yaml, the default sweep's models. The program is the one the sweep runs for --policy\n"
      "(in its checkpoints), with a comment saying which arguments the sweep trains: pass them back as --wrt\n"
      "to residuals, solve or memory for the sweep's answers. No value is drawn (the params are their types\n"
      "alone), so a model of any size, a 7B Llama say, prints in seconds. E.g.\n"
      "  rematkit program --model gpt-small > gpt.jaxpr\n"
      "  rematkit residuals gpt.jaxpr --wrt 1,2,... --retarget-policy dots_saveable");
  cmd->add_option("SWEEP", o->file, "the sweep file (default: the default sweep)");
  cmd->add_option("--model", o->model, "the model's name (needed when the sweep has more than one)");
  cmd->add_option("--policy", o->policy, "the policy in the model's checkpoints (default everything_saveable)");
  cmd->add_option("--mesh", o->mesh,
                  "split each param over this mesh axis, as FSDP does (such as fsdp=8): a sharding_constraint along "
                  "its largest dim the axis divides, so that residuals and memory answer per device");
  add_plugin_option(cmd, o->plugins);
  cmd->callback([o] { run_program(*o); });
}

}  // namespace rematkit::cli
