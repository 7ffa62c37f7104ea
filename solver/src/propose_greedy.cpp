#include <algorithm>

#include "proposers.hpp"

namespace rematkit::solver {
namespace {

// Whether there is time to plan keep_more's every change from judged answer `from`.
bool time_to_plan_each_change(const Problem& problem, const Judge& judge, const Deadline& deadline, size_t from) {
  const Effects fx = effects_of(problem.candidates, kept_anywhere(judge[from].answer));
  const auto changes = std::count(fx.recomputed.begin(), fx.recomputed.end(), 1);
  return changes > 0 && 1.2 * judge.seconds_per_call() * static_cast<double>(changes) < deadline.left();
}

}  // namespace

std::pair<size_t, int> keep_more(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                                 size_t from, bool model_gate, double seconds) {
  const double until = deadline.elapsed() + seconds;
  size_t best = from;
  int kept = 0;
  Answer a = judge[from].answer;
  const std::string origin = "a search on the planner starting at " + judge[from].origin;
  for (size_t i : problem.by_cost_per_byte()) {
    if (!judge.time_for_a_judgment(deadline) || deadline.elapsed() + judge.seconds_per_call() > until) break;
    const Effects fx = effects_of(problem.candidates, kept_anywhere(a));
    if (a.saved[i] || a.offloaded[i] || !fx.recomputed[i]) continue;
    const Answer trial = problem.saving(a, i);
    if (model_gate && judge.model().peak(kept_anywhere(trial)) > budget) continue;
    const size_t j = judge.judge_only(trial, origin);
    if (judge[j].peak <= budget) a = trial, best = j, ++kept;
  }
  return {best, kept};
}

std::optional<size_t> propose_free(const Judge& judge, int64_t budget, BudgetSolution& solution) {
  for (size_t j = 0; j < judge.answers().size(); ++j)
    if (judge.fits(j, budget) && judge[j].cost == 0) {
      solution.method = judge[j].origin + ", recomputing only what costs nothing";
      solution.proven_optimal = solution.bound_known = true;
      solution.lower_bound = 0;
      return j;
    }
  return std::nullopt;
}

// The memory model over-estimates some answers (a stage's base holds the most any judged answer
// measured beyond its modelled bytes), so an answer it finds at the budget may plan well within
// it.
void propose_kept_on_planner(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                             size_t& found, BudgetSolution& solution) {
  if (!time_to_plan_each_change(problem, judge, deadline, found)) return;
  const auto [best, kept] = keep_more(problem, judge, deadline, budget, found, false);
  if (judge[best].cost >= judge[found].cost) return;
  found = best;
  solution.method += "; then " + std::to_string(kept) +
                     " more kept, each planned within the budget where the model over-estimated it";
}

size_t propose_greedy(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                      const Budget& wanted, const std::string& gave_up, BudgetSolution& solution) {
  const size_t none = judge.answers().size();
  size_t best = none;
  for (size_t j = 0; j < none; ++j)
    if (judge.fits(j, budget) && (best == none || judge[j].cost < judge[best].cost)) best = j;
  if (best == none) fail("no decisions found within the budget " + wanted.text);
  // The model's gate only where it stands between the search and more planner calls than fit.
  const std::string start = judge[best].origin;
  const bool exact = IntegerProgram::available();
  best = keep_more(problem, judge, deadline, budget, best, exact && !time_to_plan_each_change(problem, judge, deadline, best)).first;
  solution.method = "greedy from " + start + "'s answer" +
                    (exact ? ", after " + gave_up : " (this rematkit was built without COIN-OR CBC)");
  solution.proven_optimal = false;
  solution.optimal_among.clear();
  return best;
}

}  // namespace rematkit::solver
