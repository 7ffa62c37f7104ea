// rematkit solve: the cheapest save-or-recompute decisions under a memory budget, as a policy
// people can run: solved('FILE') for rematkit, or a Python policy for jax.checkpoint.
#include <iostream>

#include "commands.hpp"
#include "rematkit/budget_solver.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/program_edits.hpp"

namespace rematkit::cli {
namespace {

struct SolveOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  MeshOptions mesh;
  std::string file;
  std::string budget;
  std::string cost = "flops";
  double comm_bandwidth = 0;
  double comm_ns_per_byte = 0;
  BackendChoice backends;
  int threads = 0;
  std::string decisions_out;
  std::string jax_out;
  bool offload = false;
  bool no_structure = false;
  double time_limit = 8.0;
};

void run_solve(const SolveOptions& o) {
  const Program program = edited_program(command_program(o.file, o.edits), o.edits);
  BudgetOptions options;
  options.budget = parse_budget(o.budget, "--budget");
  options.cost = parse_recompute_cost(o.cost, "--cost");
  options.backends = o.backends.backend_options(command_plugins(o.plugins));
  options.backends.threads = o.threads;
  if (!o.edits.wrt.empty()) options.differentiate = argument_indices(program, o.edits.wrt, "--wrt");
  options.jax_signatures = !o.jax_out.empty();
  options.allow_offload = o.offload;
  options.structure = !o.no_structure;
  options.time_limit_seconds = o.time_limit;
  options.mesh = command_mesh(program, o.mesh);
  if (o.comm_bandwidth > 0 && options.cost != RecomputeCost::kFlops)
    fail("--comm-bandwidth is in FLOPs per byte: it goes with --cost flops");
  options.comm_flops_per_byte = o.comm_bandwidth;
  if (o.comm_ns_per_byte > 0 && options.cost != RecomputeCost::kMeasured)
    fail("--comm-ns-per-byte is in nanoseconds: it goes with --cost measured");
  options.comm_ns_per_byte = o.comm_ns_per_byte;
  const BudgetSolution solution = solve_budget(program, options);
  std::cout << format_budget_solution(solution);
  if (!o.decisions_out.empty()) {
    write_text_file(o.decisions_out, decisions_json(solution), "--decisions");
    std::cout << "decisions: " << o.decisions_out << " (run them with "
              << (solution.whole_program ? "--policy" : "--retarget-policy") << " \"solved('" << o.decisions_out << "')\")\n";
  }
  if (!o.jax_out.empty()) {
    write_text_file(o.jax_out, jax_policy_python(solution), "--export-jax");
    std::cout << "JAX policy: " << o.jax_out << " (jax.checkpoint(f, policy=policy))\n";
    // A function policy is never called under jax_remat3 (jax/_src/ad_checkpoint.py, CheckpointName.remat).
    const NamesPolicy names = names_policy_of(solution);
    if (!names.sayable)
      std::cerr << "rematkit: warning: --export-jax wrote a Python function policy, not a names policy: " << names.why_not
                << "; under jax_remat3 a function policy is not called (everything is recomputed)\n";
  }
  std::cout << std::flush;
}

}  // namespace

void add_solve_command(CLI::App& app) {
  auto options = std::make_shared<SolveOptions>();
  CLI::App* cmd = app.add_subcommand("solve", "the cheapest save-or-recompute decisions under a memory budget");
  cmd->footer(
      "Chooses, for every equation inside FILE's checkpoints (the whole program when it has none; a scan\n"
      "body's once for every iteration), whether the forward pass keeps its result or the backward pass\n"
      "recomputes it, so that the training step's planned device peak stays within --budget at the least\n"
      "recomputation. BUDGET is bytes (64MiB, 1.5GiB, 1e9), min (the smallest peak found), or a fraction f\n"
      "between 0 and 1: lo + f (hi - lo), hi everything_saveable's planned peak and lo the smallest of JAX's\n"
      "fixed policies' and the structured answer's (the same bytes at any time limit). Alike layers and\n"
      "segments are solved by dynamic programming, one general segment by an integer program (CBC).\n"
      "Every answer is planned exactly, so the peak printed is the one a run measures. A budget below the\n"
      "smallest feasible peak exits 2 and names that peak. docs/budget-solver.md says how it decides.");
  cmd->add_option("FILE", options->file, "a program in jaxpr syntax; '-' reads standard input");
  cmd->add_option("--budget", options->budget, "the device peak allowed: bytes (64MiB), a fraction (0.3) or min")->required();
  cmd->add_option("--cost", options->cost, "what recomputation costs: flops (each equation's FLOP count) or measured (each kernel timed once "
                  "on the chosen backends, in ns)");
  add_backend_option(cmd, options->backends);
  cmd->add_option("--threads", options->threads, "threads a step may use (0: every core)");
  cmd->add_option("--decisions", options->decisions_out,
                  "write the decisions here, for the policy solved('FILE') (written atomically)");
  cmd->add_option("--export-jax", options->jax_out,
                  "also write a JAX policy for jax.checkpoint here: save_only_these_names(...) (or the "
                  "save_and_offload form) where checkpoint_name's names say the answer, else a Python "
                  "policy(prim, *avals, **params), which jax_remat3 does not call; the solver then gives "
                  "equations a JAX policy cannot tell apart one answer");
  cmd->add_flag("--offload", options->offload, "may keep residuals in pinned host memory instead");
  cmd->add_flag("--no-structure", options->no_structure,
                "no dynamic programming over alike layers and segments: the integer program alone (for comparison)");
  cmd->add_option("--time-limit", options->time_limit,
                  "seconds for the whole solve (default 8); then the best answer found, with the gap it proved");
  add_program_edit_options(cmd, options->edits);
  add_mesh_options(cmd, options->mesh);
  add_plugin_option(cmd, options->plugins);
  cmd->add_option("--comm-bandwidth", options->comm_bandwidth,
                  "on a mesh: what a recomputed collective costs per byte a device sends, in FLOPs (a device's\n"
                  "FLOP/s over its link's bytes/s; 0, the default: collectives cost nothing)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--comm-ns-per-byte", options->comm_ns_per_byte,
                  "on a mesh, with --cost measured: what a recomputed collective costs per byte a device sends, in\n"
                  "nanoseconds (what `mpirun ... rematkit grad --plan` measured its collectives at)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([options]() { run_solve(*options); });
}

}  // namespace rematkit::cli
