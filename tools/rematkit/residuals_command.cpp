#include <iostream>

#include "commands.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/autodiff/residual_report.hpp"

namespace rematkit::cli {
namespace {

struct ResidualsOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::string policy;
  bool explain = false;
  MeshOptions mesh;
};

void run_residuals(const ResidualsOptions& o) {
  const Program program = edited_program(command_program(o.file, o.edits), o.edits);
  Linearization lin = linearize(program, linearize_options(o.plugins, o.policy, program, o.edits));
  const std::string placed = place_for_command(lin, command_mesh(program, o.mesh));
  for (const std::string& note : program_notes(program, !placed.empty())) std::cerr << note << "\n";
  if (!placed.empty()) std::cerr << "note: " << placed << "\n";
  std::cout << format_residual_report(lin, o.explain) << std::flush;
}

}  // namespace

void add_residuals_command(CLI::App& app) {
  auto options = std::make_shared<ResidualsOptions>();
  CLI::App* cmd = app.add_subcommand("residuals", "print what the backward pass of FILE's gradient keeps");
  cmd->footer(
      "Prints the residuals that the gradient of FILE with respect to every floating or complex argument\n"
      "keeps for the backward pass, in jax.ad_checkpoint.print_saved_residuals format, one line each:\n"
      "literals, constants, arguments in binder order, then equation outputs in program order, e.g.\n"
      "  f32[5,4] from the argument W1\n"
      "  f32[5] output of dot_general from FILE:LINE\n"
      "  f32<host>[16] named 'a' from FILE:LINE      (an offloaded residual)\n"
      "A program whose gradient needs no residual prints nothing. FILE '-' is standard input; with no FILE,\n"
      "a program piped in, else the built-in example (examples/two_layer.jaxpr).");
  cmd->add_option("FILE", options->file, "a program in jaxpr syntax (docs/program-format.md); '-' reads standard input");
  cmd->add_option("--policy", options->policy,
                  "checkpoint the whole program with this policy, e.g. dots_saveable or "
                  "\"save_only_these_names('a')\"");
  add_program_edit_options(cmd, options->edits);
  add_mesh_options(cmd, options->mesh);
  add_plugin_option(cmd, options->plugins);
  cmd->add_flag("--explain", options->explain,
                "after each residual, print its bytes, the backward equation that reads it and the policy "
                "decision that kept it; end with the total bytes and the recomputed equations");
  cmd->callback([options]() { run_residuals(*options); });
}

}  // namespace rematkit::cli
