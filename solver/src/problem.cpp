#include "problem.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "kernel_timing.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::solver {
namespace {

// Per candidate, its kernel timed on the chosen backends (one level's graph at a time), and what
// recomputing a collective sends again, in every iteration of its level.
std::vector<double> measured_costs(const BudgetOptions& options, const PluginRegistry& plugins,
                                   const std::vector<Candidate>& candidates, const Timeline& timeline) {
  std::vector<double> measured(candidates.size(), 1.0);
  std::map<int, std::vector<size_t>> by_level;
  for (size_t i = 0; i < candidates.size(); ++i) by_level[candidates[i].level].push_back(i);
  for (const auto& [level, members] : by_level) {
    std::vector<int> eqns;
    for (size_t i : members) eqns.push_back(candidates[i].eqn);
    const Level& at_level = timeline.levels[static_cast<size_t>(level)];
    const std::vector<double> ns = time_kernels(at_level.lin->graph, eqns, backend_options(options, plugins));
    const Linearization& at = *at_level.lin;
    for (size_t k = 0; k < members.size(); ++k) {
      double cost = ns[k];
      if (options.comm_ns_per_byte > 0 && at.graph.mesh)  // what recomputing a collective sends again
        cost += options.comm_ns_per_byte *
                static_cast<double>(collective_bytes(at.graph, at.graph.eqns[static_cast<size_t>(eqns[k])], *at.graph.mesh));
      measured[members[k]] = cost * static_cast<double>(at_level.iterations);
    }
  }
  return measured;
}

}  // namespace

BackendOptions backend_options(const BudgetOptions& options, const PluginRegistry& plugins) {
  BackendOptions b = options.backends;
  b.plugins = &plugins;
  return b;
}

Problem make_problem(const BudgetOptions& options, const PluginRegistry& plugins, bool whole_program, Verdict everything) {
  Problem p{options, plugins, whole_program, std::move(everything), {}, {}, {}};
  p.candidates = find_candidates(*p.everything.lin, p.timeline, options.comm_flops_per_byte);
  if (options.cost == RecomputeCost::kMeasured) p.measured_ns = measured_costs(options, plugins, p.candidates, p.timeline);
  return p;
}

Answer Problem::uniform_for(bool saved) const {
  return {std::vector<char>(candidates.size(), saved ? 1 : 0), std::vector<char>(candidates.size(), 0)};
}

DecisionTable Problem::table_of(const Answer& a) const {
  DecisionTable t;
  t.otherwise = Decision::kSaveable;
  for (size_t i = 0; i < candidates.size(); ++i)
    t.by_site[candidates[i].site] =
        a.offloaded[i] ? Decision::kOffloadable : a.saved[i] ? Decision::kSaveable : Decision::kRecompute;
  return t;
}

double Problem::unit_cost(size_t i) const {
  return options.cost == RecomputeCost::kMeasured ? measured_ns[i] : candidates[i].flops;
}

std::vector<double> Problem::unit_costs() const {
  std::vector<double> c;
  for (size_t i = 0; i < candidates.size(); ++i) c.push_back(unit_cost(i));
  return c;
}

double Problem::cost_scale() const {
  double most = 1.0;
  for (size_t i = 0; i < candidates.size(); ++i) most = std::max(most, unit_cost(i));
  return most;
}

double Problem::model_cost(const Answer& a) const {
  const Effects fx = effects_of(candidates, kept_anywhere(a));
  double cost = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (fx.recomputed[i]) cost += unit_cost(i);
    if (fx.needed[i] && a.offloaded[i]) cost += kOffloadCostPerByte * static_cast<double>(candidates[i].bytes);
  }
  return cost;
}

bool Problem::agrees_by_signature(const Answer& a) const {
  std::map<std::string, char> seen;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (seen.try_emplace(candidates[i].signature, a.saved[i]).first->second != a.saved[i]) return false;
  return true;
}

std::vector<size_t> Problem::by_cost_per_byte() const {
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  auto per_byte = [&](size_t i) {
    return unit_cost(i) / static_cast<double>(std::max<int64_t>(candidates[i].bytes + candidates[i].stack_bytes, 1));
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return per_byte(x) > per_byte(y); });
  return order;
}

Answer Problem::saving(const Answer& a, size_t i) const {
  Answer trial = a;
  for (size_t j = 0; j < candidates.size(); ++j)
    if (j == i || (options.jax_signatures && candidates[j].signature == candidates[i].signature)) trial.saved[j] = 1;
  return trial;
}

bool Problem::integer_program_fits(int64_t most) const {
  int64_t columns = 0;
  for (const Candidate& c : candidates) columns += 6 + (c.earliest < 0 ? 0 : 2 * (c.latest - c.earliest + 1));
  return columns <= most;
}

RematFormulation Problem::formulation(const MemoryModel& model, FormulationOptions f) const {
  f.cost = unit_costs();
  f.offload = options.allow_offload;
  f.offload_cost_per_byte = kOffloadCostPerByte;
  f.one_answer_per_signature = options.jax_signatures;
  return RematFormulation(candidates, model, std::move(f));
}

}  // namespace rematkit::solver
