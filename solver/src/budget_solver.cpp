// The budget solver's search: an integer program over the memory model (integer_program.hpp,
// remat_model.hpp), every answer judged by the planner. An answer the planner finds over budget
// recalibrates the model on what it measured and is cut off; the first answer within budget is the
// cheapest the model allows. Without CBC, or when time runs out, a greedy search stands in and the
// output says how far from the model's bound it is.
#include "rematkit/budget_solver.hpp"

#include "rematkit/byte_size.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "integer_program.hpp"
#include "kernel_timing.hpp"
#include "planner_judge.hpp"
#include "rematkit/byte_size.hpp"
#include "rematkit/memory_report.hpp"
#include "rematkit/plugin_registry.hpp"
#include "remat_formulation.hpp"

namespace rematkit {
namespace {

using solver::Candidate;
using solver::DecisionTable;
using solver::IntegerProgram;
using solver::MemoryModel;
using solver::PlannerJudge;
using solver::Verdict;
using Clock = std::chrono::steady_clock;

bool has_checkpoint(const Program& program) {
  for (const Equation& eqn : program.eqns) {
    if (eqn.prim == Prim::kCheckpoint) return true;
    for (const auto& [key, value] : eqn.params.entries)
      if (value.kind == ParamValue::Kind::kProgram && value.program && has_checkpoint(*value.program)) return true;
  }
  return false;
}

using solver::Answer;
using solver::kept_anywhere;

DecisionTable table_of(const std::vector<Candidate>& candidates, const Answer& a) {
  DecisionTable t;
  t.otherwise = Decision::kSaveable;
  for (size_t i = 0; i < candidates.size(); ++i)
    t.by_site[candidates[i].site] =
        a.offloaded[i] ? Decision::kOffloadable : a.saved[i] ? Decision::kSaveable : Decision::kRecompute;
  return t;
}

class Search {
 public:
  Search(const Program& program, const BudgetOptions& options)
      : options_(options),
        plugins_(options.plugins ? *options.plugins : default_plugins()),
        whole_program_(!has_checkpoint(program)),
        judge_(program, whole_program_, plugins_.policies(), backend_options(), options.differentiate),
        start_(Clock::now()) {}

  BudgetSolution run() {
    // Everything saved: the top of the range, and the equations to decide.
    everything_ = judge_.judge(solver::DecisionTable{});
    candidates_ = solver::find_candidates(*everything_.lin, timeline_);
    if (options_.cost == RecomputeCost::kMeasured) {
      std::vector<int> eqns;
      for (const Candidate& c : candidates_) eqns.push_back(c.eqn);
      measured_ns_ = solver::time_kernels(everything_.lin->graph, eqns, backend_options());
    }
    const Answer everything = uniform_for(true);
    const Answer nothing = uniform_for(false);
    std::optional<Verdict> none = judge_.judge(table_of(candidates_, nothing));
    model_.emplace(candidates_, timeline_);
    model_->calibrate(everything_, everything.saved);
    model_->calibrate(*none, nothing.saved);
    remember(everything, everything_);
    remember(nothing, *none);

    seed_with_jax_policies();
    if (IntegerProgram::available()) smallest_by_model();
    const int64_t budget = budget_bytes();
    if (budget < smallest_)
      fail("the budget " + options_.budget.text + " (" + std::to_string(budget) + " bytes) is below the smallest feasible peak, " +
           std::to_string(smallest_) + " bytes (" + human_bytes(smallest_) + ")");
    BudgetSolution solution;
    solution.budget_bytes = budget;
    std::optional<size_t> found;
    if (budget >= everything_.arena_peak) {
      found = 0;  // everything saved fits: nothing to recompute
      solution.method = "everything_saveable fits the budget";
      solution.proven_optimal = true;
    } else if (IntegerProgram::available()) {
      found = exact(budget, solution);
    }
    if (!found) found = greedy(budget, solution);
    // Every answer judged within budget is a candidate; the planner's count of recomputed FLOPs
    // settles it (JAX's fixed policies among them, so none of those is both smaller and cheaper).
    // Ties go to the smaller peak (equations of no FLOPs, data movement, are free to recompute).
    for (size_t j = 0; j < judged_.size(); ++j) {
      const Judged& a = judged_[j];
      const Judged& b = judged_[*found];
      const double cost_a = ranked_cost(a), cost_b = ranked_cost(b);
      if (a.peak <= budget && (cost_a < cost_b || (cost_a == cost_b && a.peak < b.peak))) found = j;
    }
    return finish(*found, solution);
  }

 private:
  BackendOptions backend_options() const {
    BackendOptions b;
    b.plugins = &plugins_;
    b.preference = options_.backends.empty() ? plugins_.fastest_backends() : options_.backends;
    b.threads = options_.threads;
    return b;
  }

  Answer uniform_for(bool saved) const {
    return {std::vector<char>(candidates_.size(), saved ? 1 : 0), std::vector<char>(candidates_.size(), 0)};
  }

  double seconds_left() const {
    return options_.time_limit_seconds - std::chrono::duration<double>(Clock::now() - start_).count();
  }

  int64_t budget_bytes() const {
    if (!options_.budget.is_fraction) return static_cast<int64_t>(std::floor(options_.budget.value));
    const double range = static_cast<double>(everything_.arena_peak - smallest_);
    return smallest_ + static_cast<int64_t>(std::floor(options_.budget.value * std::max(0.0, range)));
  }

  // The model's recomputation cost of an answer.
  double model_cost(const Answer& a) const {
    const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(a));
    double cost = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (fx.recomputed[i]) cost += unit_cost(i);
      if (fx.needed[i] && a.offloaded[i]) cost += options_.offload_cost_per_byte * static_cast<double>(candidates_[i].bytes);
    }
    return cost;
  }
  double unit_cost(size_t i) const {
    return options_.cost == RecomputeCost::kMeasured ? measured_ns_[i] : candidates_[i].flops;
  }

  void remember(const Answer& a, const Verdict& v) {
    judged_.push_back({a, v.arena_peak, v.recompute_flops, v.residual_bytes, model_cost(a)});
    smallest_ = std::min(smallest_, v.arena_peak);
  }

  solver::RematFormulation formulation() const {
    solver::FormulationOptions f;
    for (size_t i = 0; i < candidates_.size(); ++i) f.cost.push_back(unit_cost(i));
    f.offload = options_.allow_offload;
    f.offload_cost_per_byte = options_.offload_cost_per_byte;
    f.one_answer_per_signature = options_.jax_signatures;
    return solver::RematFormulation(candidates_, *model_, std::move(f));
  }
  double cost_scale() const {
    double most = 1.0;
    for (size_t i = 0; i < candidates_.size(); ++i) most = std::max(most, unit_cost(i));
    return most;
  }

  // JAX's fixed policies, as per-equation answers: real points the search starts from.
  void seed_with_jax_policies() {
    for (const char* spec : {"dots_saveable", "dots_with_no_batch_dims_saveable"}) {
      if (!plugins_.policies().contains(spec)) continue;
      const Linearization lin = judge_.linearize_as(spec);
      Answer a = uniform_for(true);
      for (size_t i = 0; i < candidates_.size(); ++i)
        a.saved[i] = lin.decisions[static_cast<size_t>(candidates_[i].eqn)].decision != Decision::kRecompute;
      if (options_.jax_signatures && !agrees_by_signature(a)) continue;
      const Verdict v = judge_.judge(table_of(candidates_, a));
      model_->calibrate(v, kept_anywhere(a));
      remember(a, v);
    }
  }

  bool agrees_by_signature(const Answer& a) const {
    std::map<std::string, char> seen;
    for (size_t i = 0; i < candidates_.size(); ++i)
      if (seen.try_emplace(candidates_[i].signature, a.saved[i]).first->second != a.saved[i]) return false;
    return true;
  }

  // The decisions whose modelled peak is smallest, judged: usually below both uniform answers. The
  // probe gets an eighth of the time limit, and at least a second (all of the default 8 s limit's
  // share), so a longer limit buys a better smallest peak as it buys a better answer.
  void smallest_by_model() {
    solver::RematFormulation f = formulation();
    const double probe_seconds = std::min(seconds_left(), std::max(1.0, seconds_left() / 8));
    const IntegerProgram::Result r = f.build(std::nullopt, cuts_).minimize(probe_seconds);
    if (!r.solved) return;
    const Answer a = f.answer_of(r);
    const Verdict v = judge_.judge(table_of(candidates_, a));
    model_->calibrate(v, kept_anywhere(a));
    remember(a, v);
  }

  // The exact search; the index into judged_ of its answer, or none when time ran out first.
  std::optional<size_t> exact(int64_t budget, BudgetSolution& solution) {
    bool first = true;
    while (seconds_left() > 0) {
      solver::RematFormulation f = formulation();
      IntegerProgram ip = f.build(budget, cuts_);
      if (const std::optional<Answer> start = start_for(budget)) ip.set_start(f.start_of(*start));
      const IntegerProgram::Result r = ip.minimize(seconds_left());
      if (first) solution.lower_bound = r.bound * cost_scale(), first = false;
      if (!r.solved) break;
      const Answer a = f.answer_of(r);
      const Verdict v = judge_.judge(table_of(candidates_, a));
      remember(a, v);
      if (v.arena_peak <= budget) {
        solution.method = r.optimal ? "integer program (COIN-OR CBC), optimal within 0.1% for the memory model"
                                    : "integer program (COIN-OR CBC), stopped at the time limit";
        solution.proven_optimal = r.optimal;
        solution.lower_bound = (r.optimal ? r.objective : r.bound) * cost_scale();
        return judged_.size() - 1;
      }
      model_->calibrate(v, kept_anywhere(a));
      cuts_.push_back(solver::cut_of(candidates_, a));
    }
    return std::nullopt;
  }

  // Candidates by what recomputing them costs per byte, most first: what a greedy search saves first.
  std::vector<size_t> by_cost_per_byte() const {
    std::vector<size_t> order(candidates_.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return unit_cost(x) / std::max<int64_t>(candidates_[x].bytes, 1) > unit_cost(y) / std::max<int64_t>(candidates_[y].bytes, 1);
    });
    return order;
  }

  // `a` with candidate i saved, and with it every candidate of its signature when they must agree.
  Answer saving(const Answer& a, size_t i) const {
    Answer trial = a;
    for (size_t j = 0; j < candidates_.size(); ++j)
      if (j == i || (options_.jax_signatures && candidates_[j].signature == candidates_[i].signature)) trial.saved[j] = 1;
    return trial;
  }

  // A start for the integer program: from the judged answer of least modelled peak, save greedily
  // while the modelled peak stays within the budget. None when even that one does not fit.
  std::optional<Answer> start_for(int64_t budget) const {
    const Answer* least = nullptr;
    int64_t least_peak = INT64_MAX;
    for (const Judged& j : judged_)
      if (const int64_t p = model_->peak(kept_anywhere(j.answer)); p < least_peak) least = &j.answer, least_peak = p;
    if (!least || least_peak > budget) return std::nullopt;
    Answer a = *least;
    for (size_t i : by_cost_per_byte()) {
      if (a.saved[i] || a.offloaded[i] || !solver::effects_of(candidates_, kept_anywhere(a)).recomputed[i]) continue;
      Answer trial = saving(a, i);
      if (model_->peak(kept_anywhere(trial)) <= budget) a = std::move(trial);
    }
    return a;
  }

  // The cheapest judged answer within budget, improved greedily: save the needed equation whose
  // recomputation costs most per byte, keep the change if the planner still finds it within budget.
  size_t greedy(int64_t budget, BudgetSolution& solution) {
    size_t best = judged_.size();
    for (size_t j = 0; j < judged_.size(); ++j)
      if (judged_[j].peak <= budget && (best == judged_.size() || judged_[j].cost < judged_[best].cost)) best = j;
    if (best == judged_.size()) fail("no decisions found within the budget " + options_.budget.text);
    Answer a = judged_[best].answer;
    for (size_t i : by_cost_per_byte()) {
      if (seconds_left() <= 0) break;
      const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(a));
      if (a.saved[i] || !fx.recomputed[i]) continue;
      const Answer trial = saving(a, i);
      if (model_->peak(kept_anywhere(trial)) > budget && IntegerProgram::available()) continue;
      const Verdict v = judge_.judge(table_of(candidates_, trial));
      remember(trial, v);
      if (v.arena_peak <= budget) a = trial, best = judged_.size() - 1;
    }
    solution.method = IntegerProgram::available() ? "greedy, after the integer program ran out of time"
                                                  : "greedy (this rematkit was built without COIN-OR CBC)";
    solution.proven_optimal = false;
    return best;
  }

  BudgetSolution finish(size_t index, BudgetSolution& solution) {
    const Judged& j = judged_[index];  // judged already: its peak and counts are the planner's
    const solver::Effects fx = solver::effects_of(candidates_, kept_anywhere(j.answer));
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      SolvedEquation e;
      e.site = c.site;
      e.primitive = c.primitive;
      e.signature = c.signature;
      e.type = c.type;
      e.where = c.where;
      e.decision = j.answer.offloaded[i] ? Decision::kOffloadable : j.answer.saved[i] ? Decision::kSaveable : Decision::kRecompute;
      e.read_by_backward = fx.needed[i] != 0;
      e.bytes = c.bytes;
      e.cost = unit_cost(i);
      solution.equations.push_back(std::move(e));
    }
    solution.whole_program = whole_program_;
    solution.cost_kind = options_.cost;
    solution.peak_bytes = j.peak;
    solution.smallest_peak = smallest_;
    solution.everything_peak = everything_.arena_peak;
    solution.residual_bytes = j.residual_bytes;
    solution.recompute_flops = j.recompute_flops;
    solution.cost = j.cost;
    if (solution.lower_bound > solution.cost) solution.lower_bound = solution.cost;
    solution.planner_calls = judge_.calls();
    solution.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return solution;
  }

  struct Judged {
    Answer answer;
    int64_t peak;
    double recompute_flops;
    int64_t residual_bytes;
    double cost;
  };
  // FLOPs as the planner counts them; measured nanoseconds as the model sums them.
  double ranked_cost(const Judged& j) const {
    return options_.cost == RecomputeCost::kMeasured ? j.cost : j.recompute_flops;
  }

  const BudgetOptions& options_;
  const PluginRegistry& plugins_;
  bool whole_program_;
  PlannerJudge judge_;
  Clock::time_point start_;
  Verdict everything_;
  std::vector<Candidate> candidates_;
  solver::Timeline timeline_;
  std::vector<double> measured_ns_;  // per candidate, with --cost measured
  std::optional<MemoryModel> model_;
  std::vector<Judged> judged_;
  std::vector<solver::Cut> cuts_;
  int64_t smallest_ = INT64_MAX;
};

}  // namespace

Budget parse_budget(const std::string& text, const std::string& what) {
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size)
    fail(what + ": '" + text + "' is not a budget (bytes such as 64MiB or 1e9, or a fraction between 0 and 1)");
  Budget b;
  b.text = text;
  // A bare number up to 1 is a fraction; anything with a unit, or above 1, is bytes.
  if (size->unit.empty() && size->number <= 1.0 && text.find_first_of("eE") == std::string::npos) {
    b.is_fraction = true;
    b.value = size->number;
  } else {
    b.value = size->bytes;
  }
  return b;
}

bool budget_solver_is_exact() { return IntegerProgram::available(); }

BudgetSolution solve_budget(const Program& program, const BudgetOptions& options) {
  return Search(program, options).run();
}

Linearization linearize_solution(const Program& program, const BudgetSolution& solution, const BudgetOptions& options) {
  const PluginRegistry& plugins = options.plugins ? *options.plugins : default_plugins();
  DecisionTable table;
  for (const SolvedEquation& e : solution.equations) table.by_site[e.site] = e.decision;
  const PlannerJudge judge(program, solution.whole_program, plugins.policies(), BackendOptions{}, options.differentiate);
  return judge.linearize_with(table);
}

}  // namespace rematkit
