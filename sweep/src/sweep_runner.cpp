#include "rematkit/sweep/sweep_runner.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "rematkit/budget_solver.hpp"
#include "rematkit/concurrent_gradients.hpp"
#include "rematkit/error.hpp"
#include "rematkit/flops.hpp"
#include "rematkit/gradient_difference.hpp"
#include "rematkit/step_runner.hpp"
#include "rematkit/linearize.hpp"
#include "rematkit/residual_report.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "rematkit/training_step.hpp"

namespace rematkit::sweep {
namespace {

constexpr double kLearningRate = 1e-3;  // SGD on the params; small enough that timing runs stay finite

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

struct PolicyModel {
  ModelInstance instance;
  Linearization lin;
};

PolicyModel linearized(const ModelSpec& model, const std::string& policy, uint64_t seed, const PluginRegistry& plugins) {
  PolicyModel pm{instantiate(model, policy, seed), {}};
  LinearizeOptions options;
  options.policies = &plugins.policies();
  options.policy = pm.instance.whole_program_policy;
  options.policy_source = "policies";
  options.differentiate = pm.instance.trained;  // what is not trained needs no gradient
  pm.lin = linearize(pm.instance.program, options);
  return pm;
}

// budget(X) in a sweep's policies: the budget solver's cheapest decisions under X (bytes such as
// 64MiB, or a fraction), solved for each model on each backend list and thread count, since kernel
// workspaces, and so the peak, depend on them. None for any other policy.
std::optional<Budget> budget_of(const std::string& policy) {
  if (policy.rfind("budget(", 0) != 0 || policy.back() != ')') return std::nullopt;
  std::string inner = policy.substr(7, policy.size() - 8);
  if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') && inner.back() == inner.front())
    inner = inner.substr(1, inner.size() - 2);
  return parse_budget(inner, "policies: " + policy);
}

PolicyModel solved(const ModelSpec& model, const Budget& budget, uint64_t seed, const BackendOptions& backends) {
  PolicyModel pm{instantiate(model, "everything_saveable", seed), {}};
  BudgetOptions options;
  options.budget = budget;
  options.backends = backends.preference;
  options.threads = backends.threads;
  options.plugins = backends.plugins;
  options.differentiate = pm.instance.trained;
  const BudgetSolution solution = solve_budget(pm.instance.program, options);
  pm.lin = linearize_solution(pm.instance.program, solution, options);
  return pm;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Fills `row`'s measurements: the training step planned once, warmed up, then timed. `planned` is
// the policy's gradient from the group's concurrent run, `expected` everything_saveable's.
SweepRow measure(SweepRow row, const PolicyModel& pm, const BackendOptions& options, int repetitions,
                 const GradientResult& expected, const GradientResult& planned) {
  TrainingStep step(pm.lin, options, pm.instance.trained, kLearningRate);
  step.set_constants(pm.instance.constants);
  step.set_arguments(pm.instance.arguments);
  step.run();  // warm-up; its gradients are those of the initial params, as the baseline's
  GradientResult first;
  for (size_t a = 0; a < pm.lin.arguments.size(); ++a) first.gradients.push_back(step.gradient(a));
  std::vector<double> ms;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    step.run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  row.median_ms = median(ms);
  row.min_ms = *std::min_element(ms.begin(), ms.end());
  row.max_ms = *std::max_element(ms.begin(), ms.end());
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
    row.predicted_peak[static_cast<size_t>(space)] = step.predicted_peak(space);
    row.measured_peak[static_cast<size_t>(space)] = step.measured_peak(space);
  }
  row.residual_bytes = residual_bytes(pm.lin);
  const MemoryReport memory = build_memory_report(step.runner().program());
  row.peak_pass = memory.peak_step >= 0 ? step_phase_name(memory.steps[static_cast<size_t>(memory.peak_step)].phase) : "";
  row.peak_bytes = memory.peak_bytes;
  const GradientFlops flops = gradient_flops(pm.lin);
  row.forward_flops = flops.forward;
  row.recompute_flops = flops.recompute;
  row.backward_flops = flops.backward;
  std::vector<ArgumentDifference> differences = gradient_differences(planned, expected);
  for (const ArgumentDifference& d : gradient_differences(first, expected)) differences.push_back(d);
  row.max_grad_diff = max_abs_difference(differences);
  return row;
}

// Runs the configurations of `model` in `shard`; `position` counts the grid's configurations.
void run_model(const ModelSpec& model, const SweepConfig& config, const PluginRegistry& plugins,
               const SweepProgress& progress, Shard shard, size_t total, size_t& position, std::vector<SweepRow>& rows) {
  const size_t per_model = config.backends.size() * config.threads.size() * config.policies.size();
  bool any = false;
  for (size_t p = position; p < position + per_model; ++p) any = any || p % shard.count == shard.index - 1;
  if (!any) {
    position += per_model;
    return;
  }
  // Every policy's model, and everything_saveable's as the baseline of the gradients.
  const PolicyModel baseline = linearized(model, "everything_saveable", config.seed, plugins);
  std::vector<PolicyModel> per_policy;
  for (const std::string& policy : config.policies)
    per_policy.push_back(budget_of(policy) ? PolicyModel{} : linearized(model, policy, config.seed, plugins));
  for (const std::vector<std::string>& backend : config.backends) {
    for (int threads : config.threads) {
      BackendOptions options{backend, &plugins};
      options.threads = threads;
      // Before anything is timed, the baseline and this shard's policies of the group run at once,
      // one oneTBB task and thread each (concurrent_gradients.hpp): the gradients they agree on.
      std::vector<const Linearization*> lins{&baseline.lin};
      std::vector<size_t> slot(config.policies.size(), 0);  // where each policy's gradient is in `planned`
      std::vector<PolicyModel> solved_here(config.policies.size());
      std::vector<const PolicyModel*> model_of(config.policies.size());
      for (size_t p = 0; p < config.policies.size(); ++p) {
        model_of[p] = &per_policy[p];
        if ((position + p) % shard.count != shard.index - 1) continue;
        if (const std::optional<Budget> budget = budget_of(config.policies[p])) {
          solved_here[p] = solved(model, *budget, config.seed, options);
          model_of[p] = &solved_here[p];
        }
        slot[p] = lins.size();
        lins.push_back(&model_of[p]->lin);
      }
      const std::vector<GradientResult> planned =
          lins.size() == 1 ? std::vector<GradientResult>{}
                           : run_gradients(lins, baseline.instance.constants, baseline.instance.arguments, options,
                                           Concurrency::kAllAtOnce);
      for (size_t p = 0; p < config.policies.size(); ++p) {
        const size_t config_index = position++;
        if (config_index % shard.count != shard.index - 1) continue;
        SweepRow next;
        next.config = config_index;
        next.model = model.name;
        next.policy = config.policies[p];
        next.backend = joined(backend);
        next.threads = threads;
        if (progress) progress(rows.size(), total, next);
        rows.push_back(measure(next, *model_of[p], options, config.repetitions, planned[0], planned[slot[p]]));
      }
    }
  }
}

}  // namespace

Shard parse_shard(const std::string& text) {
  Shard shard;
  size_t used = 0;
  const size_t slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    shard.index = std::stoul(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    shard.count = std::stoul(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("count");
  } catch (const std::logic_error&) {
    fail("--shard: '" + text + "' is not I/N (for example 2/8)");
  }
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    fail("--shard: '" + text + "' needs 1 <= I <= N");
  return shard;
}

std::vector<SweepRow> run_sweep(const SweepConfig& config, const PluginRegistry& plugins, const SweepProgress& progress,
                                Shard shard) {
  const size_t grid = config.models.size() * config.backends.size() * config.threads.size() * config.policies.size();
  const size_t total = grid / shard.count + (shard.index - 1 < grid % shard.count ? 1 : 0);
  std::vector<SweepRow> rows;
  size_t position = 0;
  for (const ModelSpec& model : config.models) {
    try {
      run_model(model, config, plugins, progress, shard, total, position, rows);
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.rfind(config.source + ":", 0) == 0) throw;  // already placed in the sweep file
      throw Error(e.kind(), config.source + ": model '" + model.name + "': " + message);
    }
  }
  return rows;
}

}  // namespace rematkit::sweep
