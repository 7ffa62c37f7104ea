// The budget solver's proposers, in the order solve_budget runs them (budget_solver.cpp). Each
// offers answers to the Judge, which plans them once and keeps them with the name of the proposer
// that found them; a proposer that answers a budget returns the index of its answer among the
// judged and says in `solution` how it was found and what it proved.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deadline.hpp"
#include "judge.hpp"
#include "problem.hpp"
#include "structure.hpp"

namespace rematkit::solver {

// --- For every budget -------------------------------------------------------------------------

// JAX's fixed policies: everything saved (already planned, problem.everything), nothing saved,
// dots_saveable and dots_with_no_batch_dims_saveable: the ends of a fraction's range, and real
// answers the other proposers start from. The model is calibrated on each. Returns the dots
// policies' answers, the seeds (propose_jax_seeds.cpp).
std::vector<Answer> propose_jax_seeds(const Problem& problem, Judge& judge, const Deadline& deadline);

// The structured answer of least modelled peak, found before any time limit applies: a fraction's
// 0 rests on it (propose_structured.cpp).
void propose_least_structured(const Problem& problem, Structure& structure, Judge& judge, const Deadline& deadline);

// PyTorch's knapsack order at 17 points and knapsack_budget(f) at every twentieth, planned: the
// same answers whatever the budget (propose_knapsack.cpp).
void propose_knapsack_grid(const Problem& problem, Judge& judge, const Deadline& deadline);

// --- For one budget ---------------------------------------------------------------------------

// Toward the smallest peak (--budget min, or a budget below every peak found): the structured
// answers at every grid point, planned (propose_structured.cpp), and for one general segment the
// integer program's answer of least modelled peak (propose_integer_program.cpp).
void propose_structured_grid(const Problem& problem, Structure& structure, Judge& judge, const Deadline& deadline);
void propose_least_peak_program(const Problem& problem, const Structure& structure, Judge& judge, const Deadline& deadline);

// The dynamic programs' cheapest answer planned within `budget` (propose_structured.cpp).
std::optional<size_t> propose_structured(const Problem& problem, Structure& structure, Judge& judge,
                                         const Deadline& deadline, int64_t budget, BudgetSolution& solution);

// The least k of the knapsack order planned within `budget`, improved on the planner: a start that
// does not rest on the integer program finishing (propose_knapsack.cpp).
void propose_knapsack_start(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget);

// A judged answer within the budget that recomputes nothing costly: none is cheaper (propose_greedy.cpp).
std::optional<size_t> propose_free(const Judge& judge, int64_t budget, BudgetSolution& solution);

// The integer program (COIN-OR CBC) on the whole program, recalibrated while the planner finds its
// answers over the budget; `gave_up` says why when it answers nothing (propose_integer_program.cpp).
std::optional<size_t> propose_integer_program(const Problem& problem, Judge& judge, const Deadline& deadline,
                                              int64_t budget, BudgetSolution& solution, std::string& gave_up);

// The model over-estimates some answers: a method asked for more than the budget, by bisection,
// while the planner still finds its answers within it. The cheapest of those (propose_stretched.cpp).
size_t propose_stretched(Judge& judge, const Deadline& deadline, int64_t budget, size_t best, const std::string& origin,
                         const std::function<std::optional<Answer>(int64_t)>& solve);

// Where a planner call is cheap beside the time left, the method's answer improved on the planner
// without the model's gate (propose_greedy.cpp).
void propose_kept_on_planner(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                             size_t& found, BudgetSolution& solution);

// The cheapest judged answer within budget, improved greedily: the answer when the exact methods
// gave none, `gave_up` saying why (propose_greedy.cpp).
size_t propose_greedy(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                      const Budget& wanted, const std::string& gave_up, BudgetSolution& solution);

// From judged answer `from`, save each recomputed candidate in turn, the costliest per byte
// first, and keep the change where the planner still finds the peak within the budget. With
// `model_gate`, a change the model finds over budget is not planned. The answer reached and the
// number of changes kept (propose_greedy.cpp).
std::pair<size_t, int> keep_more(const Problem& problem, Judge& judge, const Deadline& deadline, int64_t budget,
                                 size_t from, bool model_gate, double seconds = 1e9);

}  // namespace rematkit::solver
