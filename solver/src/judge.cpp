#include "judge.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::solver {
namespace {

// The decision each site got in `lin`: its checkpoints' answers, a scan body's inside it, and, for a
// scan inside a checkpoint, recompute for what its backward pass computes again.
void decisions_by_site(const Linearization& lin, std::map<std::string, Decision>& out) {
  const FlatGraph& g = lin.graph;
  const std::vector<std::string> sites = equation_sites(g);
  for (size_t e = 0; e < g.eqns.size(); ++e)
    if (!sites[e].empty() && g.eqns[e].region > 0) out[sites[e]] = lin.decisions[e].decision;
  for (const FlatEquation& eqn : g.eqns) {
    if (!eqn.scan || eqn.part != ControlFlowPart::kForward) continue;
    const ScanLinearization& s = *eqn.scan;
    decisions_by_site(s.body, out);
    if (eqn.region == 0) continue;
    const std::vector<std::string> body_sites = equation_sites(s.body.graph);
    for (int e : s.body.forward)
      if (!body_sites[static_cast<size_t>(e)].empty() && s.body.graph.eqns[static_cast<size_t>(e)].region == 0)
        out.try_emplace(body_sites[static_cast<size_t>(e)], Decision::kSaveable);
    for (int e : s.recompute_eqns)
      if (!body_sites[static_cast<size_t>(e)].empty()) out[body_sites[static_cast<size_t>(e)]] = Decision::kRecompute;
  }
}

}  // namespace

Judge::Judge(const Program& program, const BudgetOptions& options, const PluginRegistry& plugins, bool whole_program)
    : planner_(program, whole_program, plugins.policies(), backend_options(options, plugins), options.differentiate,
               options.mesh, options.comm_flops_per_byte) {}

Verdict Judge::plan(const DecisionTable& table) {
  const auto start = std::chrono::steady_clock::now();
  Verdict v = planner_.judge(table);
  judge_seconds_ =
      std::max(judge_seconds_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return v;
}

void Judge::begin(const Problem& problem) {
  problem_ = &problem;
  model_.emplace(problem.candidates, problem.timeline);
}

size_t Judge::remember(const Answer& a, const Verdict& v, const std::string& origin) {
  judged_.push_back({a, v.arena_peak, v.recompute_flops, v.residual_bytes, problem_->model_cost(a), origin});
  smallest_ = std::min(smallest_, v.arena_peak);
  return judged_.size() - 1;
}

size_t Judge::record(const Answer& a, const Verdict& v, const std::string& origin) {
  model_->calibrate(v, kept_anywhere(a));
  return remember(a, v, origin);
}

std::optional<size_t> Judge::find(const Answer& a) const {
  for (size_t j = 0; j < judged_.size(); ++j)
    if (judged_[j].answer.saved == a.saved && judged_[j].answer.offloaded == a.offloaded) return j;
  return std::nullopt;
}

size_t Judge::judge(const Answer& a, const std::string& origin) {
  if (const std::optional<size_t> seen = find(a)) return *seen;
  return record(a, plan(problem_->table_of(a)), origin);
}

size_t Judge::judge_only(const Answer& a, const std::string& origin) {
  if (const std::optional<size_t> seen = find(a)) return *seen;
  return remember(a, plan(problem_->table_of(a)), origin);
}

double Judge::ranked_cost(size_t j) const {
  return problem_->options.cost == RecomputeCost::kMeasured ? judged_[j].cost : judged_[j].recompute_flops;
}

bool Judge::fits(size_t j, int64_t budget) const {
  return judged_[j].peak <= budget && (!problem_->options.jax_signatures || problem_->agrees_by_signature(judged_[j].answer));
}

size_t Judge::cheapest_within(int64_t budget, size_t found, BudgetSolution& solution) const {
  const size_t method_found = found;
  for (size_t j = 0; j < judged_.size(); ++j) {
    const double cost_a = ranked_cost(j), cost_b = ranked_cost(found);
    if (fits(j, budget) && (cost_a < cost_b || (cost_a == cost_b && judged_[j].peak < judged_[found].peak))) found = j;
  }
  if (found != method_found && judged_[found].origin != judged_[method_found].origin)
    solution.method += "; the answer is from " + judged_[found].origin + ", planned within the budget at less cost";
  return found;
}

Answer Judge::answer_of_policy(const std::string& spec) const {
  std::map<std::string, Decision> by_site;
  decisions_by_site(planner_.linearize_as(spec), by_site);
  Answer a = problem_->uniform_for(true);
  for (size_t i = 0; i < problem_->candidates.size(); ++i)
    if (const auto it = by_site.find(problem_->candidates[i].site); it != by_site.end())
      a.saved[i] = it->second != Decision::kRecompute;
  return a;
}

}  // namespace rematkit::solver
