#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "rematkit/io/memory_report_json.hpp"
#include "rematkit/io/memory_timeline.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit::cli {
namespace {

struct MemoryOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::vector<std::string> policies;  // none: the program's own checkpoints
  BackendChoice backends;
  bool json = false;
  bool no_fusion = false;
  std::string timeline;
  MeshOptions mesh;
};

void run_memory(const MemoryOptions& o) {
  const Program program = edited_program(command_program(o.file, o.edits), o.edits);
  const PluginRegistry& plugins = command_plugins(o.plugins);
  BackendOptions backends = o.backends.backend_options(plugins);
  if (o.no_fusion) backends.fusion = BackendOptions::Fusion::kOff;
  // Each policy's plan, as `grad` and the API's Plan make it; only its report outlives it.
  const std::vector<std::string> policies = o.policies.empty() ? std::vector<std::string>{""} : o.policies;
  std::vector<MemoryReport> reports;
  std::vector<std::optional<GradientCommunication>> communication;  // on a mesh
  std::string placed;
  const std::optional<Mesh> mesh = command_mesh(program, o.mesh);  // checked once, for every policy
  for (const std::string& policy : policies) {
    Linearization lin = linearize(program, linearize_options(o.plugins, policy, program, o.edits));
    placed = place_for_command(lin, mesh);
    communication.push_back(mesh ? std::optional(gradient_communication(lin, *mesh)) : std::nullopt);
    reports.push_back(
        build_memory_report(build_step_program(lin, backends, Pass::kBackward, InputMode::kLoadedEachRun)));
  }
  if (!o.timeline.empty()) {
    std::vector<TimelinePanel> panels;
    for (size_t i = 0; i < reports.size(); ++i)
      panels.push_back({policies[i].empty() ? "the program's own checkpoints" : policies[i], &reports[i]});
    write_text_file(o.timeline, memory_timeline_svg(panels), "timeline");
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      nlohmann::json report = nlohmann::json::parse(memory_report_json(reports[i]));
      report["policy"] = policies[i];
      if (!placed.empty()) report["devices"] = placed;
      if (const auto& c = communication[i])
        report["communication_bytes"] = {{"forward", c->forward}, {"recompute", c->recompute}, {"backward", c->backward}};
      out.push_back(std::move(report));
    }
    std::cout << out.dump(2) << "\n" << std::flush;
    return;
  }
  if (!placed.empty()) std::cout << placed << "\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i) std::cout << "\n";
    if (!policies[i].empty()) std::cout << "policy " << policies[i] << "\n";
    if (communication[i]) std::cout << communication_line(*communication[i]) << "\n";
    std::cout << format_memory_report(reports[i]);
  }
  std::cout << std::flush;
}

}  // namespace

void add_memory_command(CLI::App& app) {
  auto options = std::make_shared<MemoryOptions>();
  CLI::App* cmd = app.add_subcommand("memory", "explain where the peak memory of FILE's training step comes from");
  cmd->footer(
      "Plans the forward and backward pass of FILE's gradient (as grad does, without running it) and prints\n"
      "the step where the most device bytes are alive: its pass (forward, recompute or backward) and the\n"
      "equation it runs; every buffer alive there with its kind (parameter, data input, gradient, saved or\n"
      "offloaded residual, recomputed, cotangent, forward temporary, kernel workspace), bytes and source;\n"
      "the bytes per kind; and the predicted peak (the arena a run allocates and measures) against the live\n"
      "peak (the bytes alive at the peak step; the gap is fragmentation). With several --policy, one report\n"
      "each. FILE '-' is standard input; with no FILE, a program piped in, else the built-in example.");
  cmd->add_option("FILE", options->file, "a program in jaxpr syntax (docs/program-format.md); '-' reads standard input");
  cmd->add_option("--policy", options->policies,
                  "checkpoint the whole program with this policy (repeatable: one report per policy)")
      ->allow_extra_args(false);
  add_program_edit_options(cmd, options->edits);
  add_plugin_option(cmd, options->plugins);
  add_backend_option(cmd, options->backends);
  add_fusion_option(cmd, options->no_fusion);
  add_mesh_options(cmd, options->mesh);
  cmd->add_flag("--json", options->json,
                "print a JSON list with one report per policy: every buffer and step, the peak and its bytes per kind");
  cmd->add_option("--timeline", options->timeline,
                  "write an SVG of the device bytes alive at each step, stacked by kind, the passes shaded and the "
                  "peak marked; one panel per policy, on one scale");
  cmd->callback([options]() { run_memory(*options); });
}

}  // namespace rematkit::cli
