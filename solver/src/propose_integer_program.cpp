#include <algorithm>

#include "proposers.hpp"

namespace rematkit::solver {
namespace {

constexpr const char* kOrigin = "the integer program";

// Changes `a`, one decision at a time, the one that lowers its modelled peak most, until the model
// finds it within `budget` (true) or no change lowers it (false): an answer the integer program
// can start from where the model finds every judged one over budget.
bool descend_to(const Problem& problem, const MemoryModel& model, const Deadline& deadline, int64_t budget, Answer& a) {
  const std::vector<Candidate>& candidates = problem.candidates;
  int64_t over = model.excess(kept_anywhere(a), budget);
  while (over > 0 && !deadline.passed()) {
    const Effects fx = effects_of(candidates, kept_anywhere(a));
    int64_t best_over = over;
    Answer best;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!fx.needed[i] || a.offloaded[i]) continue;
      Answer trial = a;
      for (size_t j = 0; j < candidates.size(); ++j)
        if (j == i || (problem.options.jax_signatures && candidates[j].signature == candidates[i].signature))
          trial.saved[j] = !a.saved[i];
      const int64_t o = model.excess(kept_anywhere(trial), budget);
      if (o < best_over) best_over = o, best = std::move(trial);
    }
    if (best_over == over) return false;
    a = std::move(best);
    over = best_over;
  }
  return over == 0;
}

// A start for the integer program: from the judged answer of least modelled peak, save greedily
// while the modelled peak stays within the budget. None when even that one does not fit.
std::optional<Answer> start_for(const Problem& problem, const Judge& judge, const Deadline& deadline, int64_t budget) {
  const MemoryModel& model = judge.model();
  const Answer* least = nullptr;
  int64_t least_peak = INT64_MAX;
  double least_cost = 0;
  for (const JudgedAnswer& j : judge.answers()) {
    if (problem.options.jax_signatures && !problem.agrees_by_signature(j.answer)) continue;
    const int64_t p = model.peak(kept_anywhere(j.answer));
    // The cheapest that fits, else the smallest.
    const bool fits = p <= budget, least_fits = least_peak <= budget;
    if (!least || (fits && (!least_fits || j.cost < least_cost)) || (!fits && !least_fits && p < least_peak))
      least = &j.answer, least_peak = p, least_cost = j.cost;
  }
  if (!least) return std::nullopt;
  Answer a = *least;
  if (least_peak > budget && !descend_to(problem, model, deadline, budget, a)) return std::nullopt;
  for (size_t i : problem.by_cost_per_byte()) {
    if (deadline.passed()) break;
    if (a.saved[i] || a.offloaded[i] || !effects_of(problem.candidates, kept_anywhere(a)).recomputed[i]) continue;
    Answer trial = problem.saving(a, i);
    if (model.peak(kept_anywhere(trial)) <= budget) a = std::move(trial);
  }
  return a;
}

// The method line and the bound of an answer the integer program found within the budget.
void say_found(const IntegerProgram::Result& r, double cost_scale, BudgetSolution& solution) {
  solution.method = r.optimal ? "integer program (COIN-OR CBC), optimal within 0.1% for the memory model"
                              : "integer program (COIN-OR CBC), stopped at the time limit";
  solution.proven_optimal = r.optimal;
  solution.optimal_among.clear();
  if (r.bound_known) {
    solution.lower_bound = (r.optimal ? r.objective : r.bound) * cost_scale;
    solution.bound_known = true;
  }
}

}  // namespace

void propose_least_peak_program(const Problem& problem, const Structure& structure, Judge& judge, const Deadline& deadline) {
  if (!IntegerProgram::available() || structure.found() || !problem.integer_program_fits()) return;
  RematFormulation f = problem.formulation(judge.model());
  // (Called for --budget min or a budget below every peak found: the smallest peak is the question.)
  const double seconds = std::min(deadline.left() - 1.2 * judge.seconds_per_call(), deadline.left() / 2);
  if (seconds <= 0) return;
  const IntegerProgram::Result r = f.build(std::nullopt, judge.cuts()).minimize(seconds);
  if (r.solved && judge.time_for_a_judgment(deadline)) judge.judge(f.answer_of(r), kOrigin);
}

// Each answer the planner finds over the budget is cut from the next program (recalibration: the
// judge's model learns from it too); the first answer within it is stretched (propose_stretched).
std::optional<size_t> propose_integer_program(const Problem& problem, Judge& judge, const Deadline& deadline,
                                              int64_t budget, BudgetSolution& solution, std::string& gave_up) {
  bool first = true;
  const double until = deadline.elapsed() + deadline.left();
  auto seconds_left = [&] { return std::min(until - deadline.elapsed(), deadline.left() - 1.2 * judge.seconds_per_call()); };
  while (judge.time_for_a_judgment(deadline, 0.05) && deadline.elapsed() < until) {
    RematFormulation f = problem.formulation(judge.model());
    IntegerProgram ip = f.build(budget, judge.cuts());
    if (const std::optional<Answer> start = start_for(problem, judge, deadline, budget)) ip.set_start(f.start_of(*start));
    const IntegerProgram::Result r = ip.minimize(seconds_left());
    // (A model that finds no answer within the budget bounds nothing: the planner may still.)
    if (first && r.bound_known && !r.infeasible) {
      solution.lower_bound = r.bound * problem.cost_scale();
      solution.bound_known = true;
      first = false;
    }
    if (!r.solved) {
      if (r.infeasible)
        gave_up = judge.cuts().empty() ? "the integer program found no answer the memory model fits within the budget"
                                       : "the integer program's answers planned over the budget";
      break;
    }
    const Answer a = f.answer_of(r);
    const size_t j = judge.judge(a, kOrigin);
    if (judge[j].peak > budget) {
      judge.cuts().push_back(cut_of(problem.candidates, a));
      continue;
    }
    say_found(r, problem.cost_scale(), solution);
    const size_t stretched = propose_stretched(judge, deadline, budget, j, kOrigin, [&](int64_t ask) -> std::optional<Answer> {
      RematFormulation g = problem.formulation(judge.model());
      IntegerProgram more = g.build(ask, judge.cuts());
      more.set_start(g.start_of(judge[j].answer));
      const double seconds = seconds_left() / 3;
      if (seconds <= 0.01) return std::nullopt;
      const IntegerProgram::Result m = more.minimize(seconds);
      if (!m.solved) return std::nullopt;
      return g.answer_of(m);
    });
    if (stretched != j)
      solution.method += ", asked for more than the budget where the model over-estimates (each answer planned)";
    return stretched;
  }
  return std::nullopt;
}

}  // namespace rematkit::solver
