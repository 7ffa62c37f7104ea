#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/io/tensor_json.hpp"
#ifdef REMATKIT_HAVE_MPI
#include "rematkit/mpi/mpi_transport.hpp"
#endif

namespace rematkit::cli {
namespace {

struct GradOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::string inputs;
  std::string policy;
  BackendChoice backends;
  bool plan = false;
  bool no_fusion = false;
  bool debug_prints = false;
  int threads = 0;
  std::string max_memory;
  double rank_timeout = 60;
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

// The mesh's arenas: one device's predicted peak, and each device's (or rank's) measured one.
#ifdef REMATKIT_HAVE_MPI
// What the ranks' collectives sent and took: their wall time over their bytes, the cost per byte
// `solve --cost measured --comm-ns-per-byte` takes.
void print_traffic(const std::vector<mpi::MpiTransport::Traffic>& ranks) {
  int64_t bytes = 0;
  double seconds = 0;
  for (const mpi::MpiTransport::Traffic& t : ranks) {
    bytes += t.bytes_sent;
    seconds += t.seconds;
  }
  if (bytes == 0) return;
  char line[200];
  std::snprintf(line, sizeof line, "collectives: the %zu ranks sent %lld B in %.3f ms of exchanges: %.3g ns per byte",
                ranks.size(), static_cast<long long>(bytes), seconds * 1e3, seconds * 1e9 / static_cast<double>(bytes));
  std::cout << line << " (solve --cost measured --comm-ns-per-byte)\n";
}
#endif

void print_mesh_memory(int64_t predicted, const std::vector<int64_t>& measured, const Mesh& mesh, const char* devices) {
  std::cout << "memory device: predicted peak " << predicted << " bytes per device of the mesh " << mesh.str()
            << ", measured on each of its " << measured.size() << " " << devices;
  for (size_t d = 0; d < measured.size(); ++d) std::cout << (d ? ", " : " ") << measured[d];
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

// What a run needs, read and linearized.
struct GradStep {
  Program program;
  ProgramInputs inputs;
  Linearization lin;
  BackendOptions backends;
};

GradStep read_grad_step(const GradOptions& o) {
  Program program = edited_program(command_program(o.file, o.edits), o.edits);
  ProgramInputs inputs = load_program_inputs(o.inputs, program);
  const PluginRegistry& plugins = command_plugins(o.plugins);
  Linearization lin = linearize(program, linearize_options(o.plugins, o.policy, program, o.edits));
  BackendOptions backends = o.backends.backend_options(plugins);
  backends.threads = o.threads;
  backends.max_memory = memory_limit(o.max_memory);
  if (o.no_fusion) backends.fusion = BackendOptions::Fusion::kOff;
  backends.debug_prints = o.debug_prints;
  return GradStep{std::move(program), std::move(inputs), std::move(lin), backends};
}

// The JSON line: the outputs, then the gradient of every argument that has one.
std::string result_json(const Program& program, const GradientResult& result) {
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
  return out + "}}";
}

// After the memory lines of --plan: the FLOPs of each pass and each step.
void print_flops_and_steps(const Linearization& lin, const StepProgram& program) {
  const GradientFlops flops = gradient_flops(lin);
  std::cout << "flops" << (lin.graph.mesh ? " per device" : "") << ": forward " << flops.forward << ", recomputed "
            << flops.recompute << ", backward " << flops.backward << "\n";
  if (lin.graph.mesh) std::cout << communication_line(gradient_communication(lin, *lin.graph.mesh)) << "\n";
  print_steps(program);
}

// The plan comes before the JSON line, which can be megabytes: its memory summary first, then the
// FLOPs and each step; the JSON line is always the last.
void run_grad(const GradOptions& o) {
  const GradStep step = read_grad_step(o);
  const Linearization& lin = step.lin;
  if (!lin.graph.mesh) {
    OneShotRunner runner(lin, step.backends);
    const GradientResult result = runner.run(step.inputs.constants, step.inputs.arguments);
    if (o.plan) {
      print_memory(runner);
      print_flops_and_steps(lin, runner.program());
    }
    std::cout << result_json(step.program, result) << "\n" << std::flush;
    return;
  }
  // A program with shard_maps or pmaps runs a step program per device of its mesh, each in its own
  // arena, their collectives meeting on a simulated mesh in this process.
  Linearization placed = lin;
  place_on_mesh(placed, *lin.graph.mesh);
  SimulatedDevices devices(placed, *lin.graph.mesh, step.backends);
  const GradientResult result = devices.run(step.inputs.constants, step.inputs.arguments);
  if (o.plan) {
    std::vector<int64_t> measured;
    for (int64_t d = 0; d < devices.devices(); ++d) measured.push_back(devices.device(d).measured_peak(MemorySpace::kDevice));
    const StepProgram& program = devices.device(0).program();
    print_mesh_memory(program.layout().arena(MemorySpace::kDevice), measured, *lin.graph.mesh, "devices");
    print_memory_peak(program);
    print_flops_and_steps(placed, program);
  }
  std::cout << result_json(step.program, result) << "\n" << std::flush;
}

#ifdef REMATKIT_HAVE_MPI
// Under mpirun: this rank is one device of the program's mesh. A rank that fails says so where the
// others next compare notes (MpiSession::stopped), so every rank stops with the same error; rank 0
// alone prints it, and every rank exits 2.
void run_grad_on_ranks(const GradOptions& o) {
  const mpi::MpiSession session;
  try {
    std::optional<GradStep> step;
    std::optional<Linearization> placed;
    std::optional<mpi::MpiTransport> transport;
    std::optional<MeshStepRunner> runner;
    GradientResult result;
    std::vector<int64_t> peaks;
    std::vector<mpi::MpiTransport::Traffic> traffic;
    try {
      step.emplace(read_grad_step(o));
      if (!step->lin.graph.mesh)
        fail("under mpirun, grad runs a program on a mesh, a rank per device: " + o.file + " has no shard_map or pmap");
      const Mesh& mesh = *step->lin.graph.mesh;
      placed.emplace(step->lin);
      place_on_mesh(*placed, mesh);
      transport.emplace(session, mesh, o.rank_timeout);
      runner.emplace(*placed, mesh, step->backends);
      result = runner->run(*transport, step->inputs.constants, step->inputs.arguments);
      const int64_t mine = runner->measured_peak(MemorySpace::kDevice);
      std::vector<int64_t> everyone(static_cast<size_t>(mesh.num_devices()));
      for (size_t d = 0; d < everyone.size(); ++d) everyone[d] = static_cast<int64_t>(d);
      peaks.resize(everyone.size());
      transport->all_gather("the measured peaks", everyone, &mine, sizeof mine, peaks.data());
      const mpi::MpiTransport::Traffic sent = transport->traffic();  // before the exchange below counts
      traffic.resize(everyone.size());
      transport->all_gather("what the ranks sent", everyone, &sent, sizeof sent, traffic.data());
    } catch (const Error& e) {
      session.stopped(e, o.rank_timeout);
    }
    if (session.rank() != 0) return;
    if (o.plan) {
      print_mesh_memory(runner->layout().arena(MemorySpace::kDevice), peaks, *step->lin.graph.mesh, "ranks");
      print_traffic(traffic);
      print_memory_peak(runner->program());
      print_flops_and_steps(*placed, runner->program());
    }
    std::cout << result_json(step->program, result) << "\n" << std::flush;
  } catch (const Error& e) {
    if (session.rank() == 0) std::cerr << "rematkit: " << e.what() << std::endl;
    session.barrier(o.rank_timeout);
    throw ExitCode{e.kind() == ErrorKind::kBadInput ? 2 : 1};
  }
}
#endif

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
      "the same, bit for bit, under every policy.\n"
      "\n"
      "A program on a mesh (shard_map, pmap) runs a step program per device, each in its own arena: in this\n"
      "process, a thread per device; under mpirun, a rank per device (mpirun -n 4 rematkit grad step.jaxpr\n"
      "--inputs in.json, where Open MPI was found at build time), rank 0 printing. Both give the same bits.");
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
  add_rank_timeout_option(cmd, options->rank_timeout);
  cmd->callback([options]() {
    if (!launched_rank()) return run_grad(*options);
#ifdef REMATKIT_HAVE_MPI
    run_grad_on_ranks(*options);
#else
    if (*launched_rank() == 0)
      fail("this rematkit was built without MPI, so its ranks would each run the whole step: install libopenmpi-dev and rebuild");
    throw ExitCode{2};
#endif
  });
}

}  // namespace rematkit::cli
