#include <algorithm>

#include "proposers.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::solver {
namespace {

constexpr const char* kOrigin = "the planner's knapsack order";

// PyTorch's knapsack's order on the planner: everything saved but the k values cheapest to
// recompute per byte. Peaks fall roughly as k grows, and the cheapest values go first.
Answer knapsack_order_answer(const Problem& problem, size_t k) {
  const std::vector<size_t> order = problem.by_cost_per_byte();  // costliest per byte first
  Answer a = problem.uniform_for(true);
  for (size_t i = 0; i < k && i < order.size(); ++i) a.saved[order[order.size() - 1 - i]] = 0;
  return a;
}

size_t knapsack_grid_step(const Problem& problem) { return std::max<size_t>(1, problem.candidates.size() / 16); }

}  // namespace

// The knapsack order at 17 points from everything saved to nothing saved, and PyTorch's
// knapsack_budget(f) at f = 0.05, 0.10, ..., 0.95. (Recomputing only values that cost nothing,
// data movement, often plans below nothing_saveable's peak; on large/38 knapsack_budget(0.25)
// plans below both, and below every tenth's answer.)
void propose_knapsack_grid(const Problem& problem, Judge& judge, const Deadline& deadline) {
  for (size_t k = 0; k <= problem.candidates.size() && judge.time_for_a_judgment(deadline); k += knapsack_grid_step(problem))
    judge.judge_only(knapsack_order_answer(problem, k), kOrigin);
  if (!problem.plugins.policies().contains("knapsack_budget")) return;
  for (int twentieth = 1; twentieth <= 19 && judge.time_for_a_judgment(deadline); ++twentieth) {
    const std::string spec = "knapsack_budget(0." + std::string(twentieth < 2 ? "0" : "") + std::to_string(5 * twentieth) + ")";
    judge.judge_only(judge.answer_of_policy(spec), "PyTorch's " + spec);
  }
}

// Before the integer program, a quarter of the time at most: the least k of the knapsack order
// planned within the budget (a grid of 16, then bisection below it), then keep_more from it
// without the model's gate. So the answer does not rest on the integer program finishing where
// the model over-estimates.
void propose_knapsack_start(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget) {
  const double until = deadline.elapsed() + deadline.left() / 4;
  auto fits = [&](size_t k) {
    return judge.time_for_a_judgment(deadline) && deadline.elapsed() + judge.seconds_per_call() < until &&
           judge[judge.judge_only(knapsack_order_answer(problem, k), kOrigin)].peak <= budget;
  };
  const size_t n = problem.candidates.size(), step = knapsack_grid_step(problem);
  size_t hi = 0;
  while (hi < n && !fits(hi)) hi = std::min(n, hi + step);
  if (hi >= n && !fits(n)) return;
  size_t lo = hi >= step ? hi - step : 0;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  keep_more(problem, judge, deadline, budget, judge.judge_only(knapsack_order_answer(problem, hi), kOrigin), false,
            until - deadline.elapsed());
}

}  // namespace rematkit::solver
