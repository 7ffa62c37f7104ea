#include <iostream>
#include <optional>

#include "commands.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/io/tensor_json.hpp"

namespace rematkit::cli {
namespace {

struct GradOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::string inputs;
  std::string policy;
  std::vector<std::string> backends;  // empty: the fastest installed
  bool plan = false;
  bool no_fusion = false;
  bool debug_prints = false;
  int threads = 0;
  std::string max_memory;
};

// One line per kernel step: pass, primitive, what it is for, where it comes from, the backend it runs on.
void print_steps(const StepProgram& program) {
  const Linearization& lin = program.linearization();
  for (const Step& step : program.steps()) {
    if (!step.runs_equation()) continue;
    const FlatEquation& eqn = lin.graph.eqns[static_cast<size_t>(step.equation)];
    const bool backward = step.pass == Pass::kBackward;
    const char* role = eqn.role == EqnRole::kBackward ? "transposed" : backward ? "recomputed" : "forward";
    std::cout << (backward ? "backward " : "forward ");
    if (!step.fused.empty()) {  // one kernel for several equations: each, with where it comes from
      std::cout << "fused";
      for (size_t i = 0; i < step.fused.size(); ++i) {
        const FlatEquation& part = lin.graph.eqns[static_cast<size_t>(step.fused[i])];
        std::cout << (i ? " + " : " ") << prim_name(part.prim) << " (" << part.where.line << ":" << part.where.column << ")";
      }
      std::cout << " (" << role << ") at " << eqn.where.str() << " on " << step.kernel->backend() << "\n";
      continue;
    }
    std::cout << prim_name(eqn.prim) << " (" << role << ") at " << eqn.where.str();
    if (step.kind == StepKind::kKernel) {
      std::cout << " on " << step.kernel->backend() << "\n";
      continue;
    }
    if (step.kind == StepKind::kEffect) {
      std::cout << (step.prints ? ": prints its operands\n" : ": a no-op (--debug-prints prints)\n");
      continue;
    }
    if (step.kind == StepKind::kHostCall || step.kind == StepKind::kCollective) {
      std::cout << (step.kind == StepKind::kHostCall ? ": a host call\n" : ": between devices\n");
      continue;
    }
    // A loop's body runs its own steps, planned once: say how many, in the workspace of how many bytes.
    std::cout << ": its body's steps, " << (eqn.scan ? std::to_string(eqn.scan->length) + " times" : std::string("once"))
              << ", in a workspace of "
              << (step.workspace >= 0 ? program.layout().buffers[static_cast<size_t>(step.workspace)].bytes : 0) << " bytes\n";
  }
}

void print_memory_peak(const StepProgram& program);

// The arena layout of the whole step: arena bytes per memory space, predicted and measured; then
// the peak step.
void print_memory(const OneShotRunner& runner) {
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
    if (runner.layout().arena(space) == 0) continue;
    std::cout << "memory " << memory_space_name(space) << ": predicted peak " << runner.layout().arena(space)
              << " bytes, measured " << runner.measured_peak(space) << ", most bytes live at once "
              << runner.layout().live_peak(space) << "\n";
  }
  print_memory_peak(runner.program());
}

// The mesh's arenas: one device's predicted peak, and each device's measured one.
void print_mesh_memory(const MeshRun& run, const Mesh& mesh) {
  std::cout << "memory device: predicted peak " << run.predicted_peak << " bytes per device of the mesh " << mesh.str()
            << ", measured on each of its " << run.measured_peaks.size() << " devices";
  for (size_t d = 0; d < run.measured_peaks.size(); ++d) std::cout << (d ? ", " : " ") << run.measured_peaks[d];
  std::cout << "\n";
}

// The peak step and what is alive there, per kind (`rematkit memory` lists the buffers).
void print_memory_peak(const StepProgram& program) {
  const MemoryReport report = build_memory_report(program);
  if (report.peak_step < 0) return;
  const StepMemory& peak = report.steps[static_cast<size_t>(report.peak_step)];
  std::cout << "memory peak: step " << report.peak_step << " (" << pass_name(peak.pass) << "), " << peak.what;
  for (size_t k = 0; k < kNumBufferKinds; ++k)
    if (report.peak_bytes[k] > 0)
      std::cout << "; " << buffer_kind_name(static_cast<BufferKind>(k)) << " " << report.peak_bytes[k];
  std::cout << "\n";
}

// What run_on_simulated_devices gives each device's runner.
BackendOptions per_device(BackendOptions backends) {
  if (backends.threads == 0) backends.threads = 1;
  return backends;
}

void run_grad(const GradOptions& o) {
  const Program program = edited_program(command_program(o.file, o.edits), o.edits);
  const ProgramInputs inputs = load_program_inputs(o.inputs, program);
  const PluginRegistry& plugins = command_plugins(o.plugins);
  const Linearization lin = linearize(program, linearize_options(o.plugins, o.policy, program, o.edits));
  BackendOptions backends{o.backends.empty() ? plugins.fastest_backends() : o.backends, &plugins};
  backends.threads = o.threads;
  backends.max_memory = memory_limit(o.max_memory);
  if (o.no_fusion) backends.fusion = BackendOptions::Fusion::kOff;
  backends.debug_prints = o.debug_prints;
  // A program with shard_maps or pmaps runs a step program per device of its mesh, each in its own
  // arena, their collectives meeting on a simulated mesh in this process.
  std::optional<Linearization> placed;
  std::optional<OneShotRunner> runner;
  std::optional<MeshRun> mesh_run;
  if (lin.graph.mesh) {
    placed.emplace(lin);
    place_on_mesh(*placed, *lin.graph.mesh);
    mesh_run = run_on_simulated_devices(*placed, *lin.graph.mesh, backends, inputs.constants, inputs.arguments);
  } else {
    runner.emplace(lin, backends);
  }
  const GradientResult result = mesh_run ? mesh_run->result : runner->run(inputs.constants, inputs.arguments);

  std::string out = "{\"value\": ";
  if (result.outputs.size() == 1) {
    out += tensor_to_json(result.outputs[0]);
  } else {
    out += "[";
    for (size_t i = 0; i < result.outputs.size(); ++i) out += (i ? ", " : "") + tensor_to_json(result.outputs[i]);
    out += "]";
  }
  out += ", \"grads\": {";
  bool first = true;
  for (size_t i = 0; i < program.invars.size(); ++i) {
    if (!result.gradients[i]) continue;
    out += (first ? "\"" : ", \"") + program.vars[program.invars[i]].name + "\": " + tensor_to_json(*result.gradients[i]);
    first = false;
  }
  // The plan comes before the JSON line, which can be megabytes: its memory summary first, then the
  // FLOPs and each step; the JSON line is always the last.
  if (o.plan) {
    std::optional<MeshStepRunner> device;  // one device's program, for its plan
    if (mesh_run) {
      device.emplace(*placed, *lin.graph.mesh, per_device(backends));
      print_mesh_memory(*mesh_run, *lin.graph.mesh);
      print_memory_peak(device->program());
    } else {
      print_memory(*runner);
    }
    const GradientFlops flops = gradient_flops(placed ? *placed : lin);
    std::cout << "flops" << (placed ? " per device" : "") << ": forward " << flops.forward << ", recomputed "
              << flops.recompute << ", backward " << flops.backward << "\n";
    print_steps(device ? device->program() : runner->program());
  }
  std::cout << out << "}}\n" << std::flush;
}

}  // namespace

void add_grad_command(CLI::App& app) {
  auto options = std::make_shared<GradOptions>();
  CLI::App* cmd = app.add_subcommand("grad", "evaluate FILE and its gradient on inputs from a JSON file");
  cmd->footer(
      "Evaluates FILE and its gradient with respect to every floating or complex argument, with a cotangent\n"
      "of ones of each output's shape (the gradient of the sum of the outputs; of a complex output, of its\n"
      "real parts, as jax.vjp with ones). A complex argument's gradient is JAX's, df/dx - i df/dy. Prints\n"
      "one JSON line\n"
      "  {\"value\": ..., \"grads\": {\"NAME\": ...}}\n"
      "with nested lists and 9 significant digits (the last line, after what --plan prints), a complex\n"
      "element as [re, im] (as --inputs gives one); value is a list of values when the program has several\n"
      "outputs. Integer and bool arguments get no gradient, nor do those --wrt leaves out. The gradient is\n"
      "the same, bit for bit, under every policy.");
  cmd->add_option("FILE", options->file, "a program in jaxpr syntax; '-' reads standard input")->required();
  cmd->add_option("--inputs", options->inputs,
                  "a JSON object mapping every argument and constant name to a number or nested list")
      ->required();
  cmd->add_option("--policy", options->policy, "checkpoint the whole program with this policy");
  add_program_edit_options(cmd, options->edits);
  add_plugin_option(cmd, options->plugins);
  add_backend_option(cmd, options->backends);
  cmd->add_option("--threads", options->threads, "threads a step may use (0: every core)")->check(CLI::Range(0, 1024));
  add_memory_limit_option(cmd, options->max_memory);
  add_fusion_option(cmd, options->no_fusion);
  cmd->add_flag("--debug-prints", options->debug_prints,
                "print the program's debug prints (jax.debug.print, debug_callback) to stderr as they run, again\n"
                "where a checkpoint recomputes them (otherwise they run as no-ops)");
  cmd->add_flag("--plan", options->plan,
                "before the JSON line, print the memory plan (predicted and measured peak bytes, the peak step and\n"
                "its bytes per kind), the FLOPs of each pass, and each step with the backend it runs on");
  cmd->callback([options]() { run_grad(*options); });
}

}  // namespace rematkit::cli
