// The budget solver at real-model scale, one row per program, in one sitting: alike layers in the
// three ways real models are written (unrolled under one checkpoint, a checkpoint per layer, a scan
// over layers with remat inside) and with no checkpoint at all, a GPT-2 block
// (tests/data/real/large/38), the sweep's GPT at 12 layers and a 1,000-layer chain. Per row: the
// candidates, the solve's wall time against its limit, planner calls, the gap it proved, the planned
// peak against the budget, the FLOPs it recomputes, and PyTorch's knapsack (knapsack_budget) at the
// same fraction for comparison.
//
//   build/bin/rematkit_budget_solver_bench [--fraction 0.5] [--time-limit 10] [--backend highway,reference]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rematkit/budget_solver.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace {

struct Row {
  std::string name;
  std::string model;  // a sweep file's model entry, or empty for `file`
  std::string file;
  bool structure = true;  // false: the integer program alone, for comparison
};

std::string mlp(int layers, const char* remat, bool scan) {
  return "mlp: {input: 256, depth: " + std::to_string(layers) + ", width: 256, batch: 256, activation: tanh, remat: " +
         remat + (scan ? ", loop: scan" : "") + "}";
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string gap_of(const rematkit::BudgetSolution& s) {
  if (s.cost == 0) return "0 (nothing recomputed)";
  if (s.proven_optimal && s.optimal_among.empty()) return "0.1% (optimal)";
  char buf[64];
  if (s.bound_known) {
    std::snprintf(buf, sizeof buf, "%.3g%%", 100 * (s.cost - s.lower_bound) / s.cost);
    return buf;
  }
  if (s.proven_optimal) return "0 among " + s.optimal_among;
  return "none";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the budget solver on real-model shapes"};
  double fraction = 0.5, time_limit = 10.0;
  std::string backends = "highway,reference", only;
  app.add_option("--fraction", fraction, "the budget, as a fraction (rematkit solve --budget)");
  app.add_option("--time-limit", time_limit, "seconds per solve");
  app.add_option("--backend", backends, "the backend preference list");
  app.add_option("--only", only, "run the rows whose name contains this");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (int n : {12, 48, 100}) {
    rows.push_back({std::to_string(n) + " layers, one checkpoint", mlp(n, "whole", false), ""});
    rows.push_back({std::to_string(n) + " layers, one checkpoint: the integer program alone, same bytes", mlp(n, "whole", false), "", false});
    rows.push_back({std::to_string(n) + " layers, a checkpoint each", mlp(n, "per_layer", false), ""});
    rows.push_back({std::to_string(n) + " layers, scanned with remat inside", mlp(n, "per_layer", true), ""});
  }
  // The case: no checkpoint at all, the whole program decided as one.
  rows.push_back({"100 layers, no checkpoint", mlp(100, "none", false), ""});
  const std::string large38 = std::string(REMATKIT_TEST_DATA_DIR) + "/real/large/38_levanter_gpt2_block_scan_body_remat.jaxpr";
  rows.push_back({"GPT-2 block (large/38)", "", large38});
  rows.push_back({"GPT-2 block (large/38): the integer program alone, same bytes", "", large38, false});
  rows.push_back({"the sweep's gpt at 12 layers",
                  "gpt: {layers: 12, batch: 2, sequence: 32, model: 64, heads: 4, vocab: 128, dropout: 0.1, remat: per_layer}", ""});
  rows.push_back({"1000 layers, one checkpoint",
                  "mlp: {input: 128, depth: 1000, width: 128, batch: 64, activation: tanh, remat: whole}", ""});

  std::vector<std::string> preference;
  std::stringstream list(backends);
  for (std::string b; std::getline(list, b, ',');) preference.push_back(b);
  const rematkit::PluginRegistry& plugins = rematkit::default_plugins();

  std::printf("fraction %g, time limit %g s, backends %s\n\n", fraction, time_limit, backends.c_str());
  int64_t last_budget = 0;
  std::printf("| program | candidates | method | wall s (limit) | planner calls | gap proven | peak / budget MiB | recompute GFLOP | DP s | knapsack_budget(%g): peak MiB, recompute GFLOP |\n",
              fraction);
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    if (!only.empty() && row.name.find(only) == std::string::npos) continue;
    rematkit::Program program;
    std::vector<size_t> trained;
    if (row.file.empty()) {
      const rematkit::sweep::SweepConfig config =
          rematkit::sweep::parse_sweep("models:\n  - " + row.model + "\npolicies: [everything_saveable]\nbackends: [\"reference\"]\n", "<bench>");
      rematkit::sweep::ModelProgram m = rematkit::sweep::model_program(config.models[0], "everything_saveable");
      program = std::move(m.program);
      trained = m.trained;
    } else {
      std::ifstream in(row.file);
      std::stringstream text;
      text << in.rdbuf();
      program = rematkit::parse_program(text.str(), row.file);
    }
    rematkit::BudgetOptions options;
    // The integer program alone gets the bytes the structured solve's fraction meant.
    options.budget = row.structure ? rematkit::parse_budget(std::to_string(fraction), "--fraction")
                                   : rematkit::parse_budget(std::to_string(last_budget), "--fraction");
    options.backends.preference = preference;
    options.backends.threads = 1;
    options.differentiate = trained;
    options.time_limit_seconds = time_limit;
    options.structure = row.structure;
    const auto start = std::chrono::steady_clock::now();
    rematkit::BudgetSolution s;
    try {
      s = rematkit::solve_budget(program, options);
    } catch (const rematkit::Error& e) {  // no answer (the integer program alone, below what it reaches)
      std::printf("| %s | | no answer: %s | | | | | | | |\n", row.name.c_str(), e.what());
      continue;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (row.structure) last_budget = s.budget_bytes;

    // PyTorch's knapsack at the same fraction, planned on the same backends.
    rematkit::LinearizeOptions lo;
    lo.policies = &plugins.policies();
    lo.differentiate = trained;
    const std::string knapsack = "knapsack_budget(" + std::to_string(fraction) + ")";
    rematkit::Linearization lin;
    if (s.whole_program) {
      lo.policy = knapsack;
      lin = rematkit::linearize(program, lo);
    } else {
      lin = rematkit::linearize(rematkit::retarget_checkpoint_policies(program, knapsack, "bench"), lo);
    }
    rematkit::BackendOptions b{preference, &plugins};
    b.threads = 1;
    const rematkit::StepProgram step = rematkit::build_step_program(lin, b, rematkit::Pass::kBackward,
                                                                    rematkit::InputMode::kLoadedEachRun);
    const int64_t knapsack_peak = step.layout().arena(rematkit::MemorySpace::kDevice);
    const double knapsack_flops = static_cast<double>(rematkit::gradient_flops(lin).recompute);

    std::string method = s.method.substr(0, s.method.find(" ("));
    std::printf("| %s | %zu | %s | %.2f (%g) | %d | %s | %s / %s | %.4f | %.3f | %s%s, %.4f |\n", row.name.c_str(),
                s.equations.size(), method.c_str(), wall, time_limit, s.planner_calls, gap_of(s).c_str(),
                mib(s.peak_bytes).c_str(), mib(s.budget_bytes).c_str(), s.recompute_flops / 1e9, s.structured_seconds,
                mib(knapsack_peak).c_str(), knapsack_peak > s.budget_bytes ? " (over)" : "", knapsack_flops / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
