#include <algorithm>
#include <chrono>

#include "proposers.hpp"

namespace rematkit::solver {
namespace {

constexpr const char* kOrigin = "the structured search";

// The structured answer the model allows within `budget` (the least peak without one).
std::optional<Answer> structured_answer_now(const Problem& problem, const Structure& s, const MemoryModel& model,
                                            std::optional<int64_t> budget) {
  Answer a = problem.uniform_for(true);
  if (s.chain) {
    const std::optional<ChainAnswer> c =
        solve_chain(problem.candidates, model, s.segments[0], *s.chain, s.chain_options, budget);
    if (!c) return std::nullopt;
    for (size_t k = 0; k < s.segments[0].members.size(); ++k) a.saved[static_cast<size_t>(s.segments[0].members[k])] = c->saved[k];
    return a;
  }
  if (s.options_by_segment.empty()) return std::nullopt;
  std::optional<SegmentChoice> choice;
  if (budget) choice = cheapest_within(model, s.segments, s.options_by_segment, *budget);
  else choice = smallest_peak(model, s.segments, s.options_by_segment);
  if (!choice) return std::nullopt;
  for (size_t g = 0; g < s.segments.size(); ++g) {
    const SegmentOption& o = s.options_by_segment[g][static_cast<size_t>(choice->option[g])];
    for (size_t k = 0; k < s.segments[g].members.size(); ++k) a.saved[static_cast<size_t>(s.segments[g].members[k])] = o.saved[k];
  }
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The same, timed.
std::optional<Answer> structured_answer(const Problem& problem, Structure& s, const MemoryModel& model,
                                        std::optional<int64_t> budget) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<Answer> a = structured_answer_now(problem, s, model, budget);
  s.structured_seconds = std::max(s.structured_seconds, seconds_since(start));
  return a;
}

// Model budgets from the structured answer of least modelled peak to everything's: where the
// model over-estimates, an answer the planner finds within the budget may need more of the model.
const std::vector<int64_t>& model_budget_grid(const Problem& problem, Structure& s, const Judge& judge) {
  if (!s.grid.empty()) return s.grid;
  const MemoryModel& model = judge.model();
  int64_t lo = s.least ? model.peak(kept_anywhere(*s.least)) : 0;
  int64_t hi = model.peak(problem.uniform_for(true).saved);
  for (const JudgedAnswer& j : judge.answers()) hi = std::max(hi, model.peak(kept_anywhere(j.answer)));
  lo = std::min(lo, hi);
  constexpr int kPoints = 48;
  for (int k = 0; k < kPoints; ++k) s.grid.push_back(lo + (hi - lo) * k / (kPoints - 1));
  s.grid.erase(std::unique(s.grid.begin(), s.grid.end()), s.grid.end());
  return s.grid;
}

// The structured answer at grid point k, found once.
std::optional<Answer> grid_answer(const Problem& problem, Structure& s, const MemoryModel& model, size_t k) {
  const auto it = s.grid_answers.find(k);
  if (it != s.grid_answers.end()) return it->second;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Answer> a = structured_answer(problem, s, model, s.grid[k]);
  s.dp_seconds = std::max(s.dp_seconds, seconds_since(start));
  return s.grid_answers[k] = a;
}

bool time_for_every_grid_point(const Problem& problem, Structure& s, const Judge& judge, const Deadline& deadline) {
  const size_t points = model_budget_grid(problem, s, judge).size();
  grid_answer(problem, s, judge.model(), points - 1);  // times one
  return (s.dp_seconds + judge.seconds_per_call()) * static_cast<double>(points) < 0.5 * deadline.left();
}

// The cheapest structured answer at the grid's model budgets that the planner finds within
// `budget`: every grid point where there is time for it; else a bisection: for the first model
// budget the dynamic program answers at (the grid may start below what its held-byte grid
// reaches), then for the largest whose answer the planner finds within the budget.
std::optional<size_t> cheapest_on_grid(const Problem& problem, Structure& s, Judge& judge, const Deadline& deadline,
                                       int64_t budget) {
  const std::vector<int64_t> grid = model_budget_grid(problem, s, judge);
  auto within = [&](size_t k) -> std::optional<size_t> {
    const std::optional<Answer> a = grid_answer(problem, s, judge.model(), k);
    if (!a) return std::nullopt;
    const size_t j = judge.judge_only(*a, kOrigin);
    if (judge[j].peak > budget) return std::nullopt;
    return j;
  };
  std::optional<size_t> best;
  auto consider = [&](std::optional<size_t> j) {
    if (j && (!best || std::make_pair(judge.ranked_cost(*j), judge[*j].peak) <
                           std::make_pair(judge.ranked_cost(*best), judge[*best].peak)))
      best = j;
    return j.has_value();
  };
  if (time_for_every_grid_point(problem, s, judge, deadline)) {
    for (size_t k = 0; k < grid.size() && judge.time_for_a_judgment(deadline); ++k) consider(within(k));
    return best;
  }
  // From the last grid point within the budget, up while the planner finds the answers within
  // it, else down, by bisection.
  size_t start = 0;
  while (start + 1 < grid.size() && grid[start + 1] <= budget) ++start;
  size_t lo = 0, hi = grid.size();  // within at lo-side, not at hi
  if (consider(within(start))) lo = start;
  else hi = start;
  if (hi == start) {
    size_t bottom = 0;
    while (bottom < hi && judge.time_for_a_judgment(deadline, s.dp_seconds)) {
      const size_t mid = bottom + (hi - bottom) / 2;
      if (consider(within(mid))) bottom = lo = mid, hi = std::min(hi, grid.size());
      else hi = mid;
      if (best) break;
    }
    if (!best) return std::nullopt;
    hi = start;
  }
  while (lo + 1 < hi && judge.time_for_a_judgment(deadline, s.dp_seconds)) {
    const size_t mid = lo + (hi - lo) / 2;
    if (consider(within(mid))) lo = mid;
    else hi = mid;
  }
  return best;
}

}  // namespace

void propose_least_structured(const Problem& problem, Structure& structure, Judge& judge, const Deadline& /*deadline*/) {
  structure.least = structured_answer(problem, structure, judge.model(), std::nullopt);
  if (structure.least) judge.judge(*structure.least, kOrigin);
}

void propose_structured_grid(const Problem& problem, Structure& structure, Judge& judge, const Deadline& deadline) {
  if (!structure.found() || !time_for_every_grid_point(problem, structure, judge, deadline)) return;
  const std::vector<int64_t> grid = model_budget_grid(problem, structure, judge);
  for (size_t k = 0; k < grid.size() && judge.time_for_a_judgment(deadline); ++k)
    if (const std::optional<Answer> a = grid_answer(problem, structure, judge.model(), k)) judge.judge_only(*a, kOrigin);
}

// The model is not calibrated further here: with it fixed, the dynamic program's answers at the
// grid's model budgets are the same whatever the budget, and the answer is the cheapest of them
// planned within the budget. So a larger budget never costs more, and a smaller one never plans a
// larger peak. An answer the planner finds over the budget leaves the next grid point to try.
std::optional<size_t> propose_structured(const Problem& problem, Structure& structure, Judge& judge,
                                         const Deadline& deadline, int64_t budget, BudgetSolution& solution) {
  if (!structure.found()) return std::nullopt;
  const std::optional<size_t> best = cheapest_on_grid(problem, structure, judge, deadline, budget);
  if (!best) return std::nullopt;
  solution.method = structure.method();
  solution.segments = structure.chain ? static_cast<int>(structure.chain->layers.size())
                                      : static_cast<int>(structure.segments.size());
  solution.proven_optimal = true;
  if (structure.chain) {
    solution.optimal_among = "run answers";
  } else if (structure.exhaustive) {
    solution.optimal_among = "all answers, at the grid's model budgets";
  } else {
    solution.optimal_among = "the segments' options";
  }
  return best;
}

}  // namespace rematkit::solver
