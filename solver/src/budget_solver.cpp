// The budget solver: the proposers in order, every answer judged by the planner, all within one
// deadline (proposers.hpp).
//  1. JAX's fixed policies are planned: the ends of a fraction's range, and real answers.
//  2. The candidates split into segments (segments.hpp). Alike layers under one checkpoint are
//     solved by dynamic programming over runs of layers (chain_dp.hpp); a sequence of segments
//     (per-layer checkpoints, scan bodies) by dynamic programming over segments (segment_dp.hpp),
//     each segment's options from exhaustive search or from the integer program on that segment
//     alone (structure.hpp).
//  3. One general segment is solved by the integer program (integer_program.hpp,
//     remat_formulation.hpp), started from the best structured or fixed answer; a larger program is
//     improved by it where it is small enough and time is left.
// An answer the planner finds over budget recalibrates the model and the search goes on. Without
// CBC, or when time runs out first, a greedy search improves the best answer found, and the output
// says what was proven.
#include "rematkit/budget_solver.hpp"

#include <cmath>
#include <optional>

#include "proposers.hpp"
#include "rematkit/ir/byte_size.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::solver {
namespace {

bool has_checkpoint(const Program& program) {
  for (const Equation& eqn : program.eqns) {
    if (eqn.prim == Prim::kCheckpoint) return true;
    for (const Program* sub : sub_programs(eqn.params))
      if (has_checkpoint(*sub)) return true;
  }
  return false;
}

// One solve: what its budgets share (the judged answers, the structure, the deadline), and the
// proposers run for each budget, in order.
class BudgetSearch {
 public:
  BudgetSearch(const Program& program, const BudgetOptions& options)
      : plugins_(options.backends.plugins ? *options.backends.plugins : default_plugins()),
        whole_program_(!has_checkpoint(program)),
        judge_(program, options, plugins_, whole_program_),
        // A little of the limit is kept for what follows the search (the answer's linearization).
        deadline_(options.time_limit_seconds * 0.97),
        problem_(make_problem(options, plugins_, whole_program_, judge_.plan(DecisionTable{}))) {
    judge_.begin(problem_);  // which holds on to problem_: a search is neither copied nor moved
  }
  BudgetSearch(const BudgetSearch&) = delete;
  BudgetSearch& operator=(const BudgetSearch&) = delete;

  // What every budget shares: the fixed policies planned, the model, the structure and its options.
  // A fraction's 0 is the smallest planned peak before the integer program's segment options: of
  // the fixed policies and the structured answer found without a time limit in play (or, for one
  // general segment, of the knapsack grid), so that a fraction means the same bytes at any limit.
  void prepare() {
    const std::vector<Answer> seeds = propose_jax_seeds(problem_, judge_, deadline_);
    structure_ = find_structure(problem_, judge_.model(), seeds, deadline_);
    propose_least_structured(problem_, structure_, judge_, deadline_);
    if (general_segment(problem_, structure_)) propose_knapsack_grid(problem_, judge_, deadline_);
    fraction_zero_ = judge_.smallest();
    if (problem_.everything.arena_peak > fraction_zero_) add_program_options(problem_, judge_.model(), structure_, deadline_);
  }

  // One budget's search: the index of the answer its method found, and how.
  std::pair<size_t, BudgetSolution> search(const Budget& wanted) {
    BudgetSolution solution;
    int64_t budget = wanted.smallest ? judge_.smallest() : budget_bytes(wanted);
    if (!wanted.smallest && budget >= problem_.everything.arena_peak) {
      solution.method = "everything_saveable fits the budget";  // nothing to recompute
      solution.proven_optimal = solution.bound_known = true;
      solution.budget_bytes = budget;
      return {0, std::move(solution)};
    }
    if (wanted.smallest || budget < judge_.smallest()) {
      propose_structured_grid(problem_, structure_, judge_, deadline_);
      propose_least_peak_program(problem_, structure_, judge_, deadline_);
    }
    if (wanted.smallest) budget = judge_.smallest();
    if (budget < judge_.smallest())
      fail("the budget " + wanted.text + " (" + std::to_string(budget) + " bytes) is below the smallest feasible peak, " +
           std::to_string(judge_.smallest()) + " bytes (" + human_bytes(judge_.smallest()) + ")");
    std::optional<size_t> found = propose_structured(problem_, structure_, judge_, deadline_, budget, solution);
    // The integer program on the whole program: the method for one general segment.
    if (!found && IntegerProgram::available() && !deadline_.passed()) {
      if (problem_.integer_program_fits()) {
        const bool general = general_segment(problem_, structure_);
        if (general) {
          propose_knapsack_start(problem_, judge_, deadline_, budget);
          found = propose_free(judge_, budget, solution);
        }
        if (!found) found = propose_integer_program(problem_, judge_, deadline_, budget, solution, exact_gave_up_);
        if (found && general) propose_kept_on_planner(problem_, judge_, deadline_, budget, *found, solution);
      } else {
        exact_gave_up_ =
            "no structured answer planned within the budget, and the whole program is too large for the integer program";
      }
    }
    if (!found) found = propose_greedy(problem_, judge_, deadline_, budget, wanted, exact_gave_up_, solution);
    solution.budget_bytes = budget;
    return {*found, std::move(solution)};
  }

  // The cheapest answer planned within the searched budget, whichever search found it.
  BudgetSolution answer(std::pair<size_t, BudgetSolution> searched) const {
    BudgetSolution& solution = searched.second;
    return finish(judge_.cheapest_within(solution.budget_bytes, searched.first, solution), solution);
  }

 private:
  int64_t budget_bytes(const Budget& b) const {
    if (!b.is_fraction) return static_cast<int64_t>(std::floor(b.value));
    const double range = static_cast<double>(problem_.everything.arena_peak - fraction_zero_);
    return fraction_zero_ + static_cast<int64_t>(std::floor(b.value * std::max(0.0, range)));
  }

  BudgetSolution finish(size_t index, BudgetSolution& solution) const;

  const PluginRegistry& plugins_;
  bool whole_program_;
  Judge judge_;
  Deadline deadline_;
  const Problem problem_;
  Structure structure_;
  int64_t fraction_zero_ = 0;
  // Why the exact methods gave no answer, when the greedy search stands in.
  std::string exact_gave_up_ = "the exact methods ran out of time";
};

// The judged answer `index` as the solver's answer: its planned peak and counts are the planner's.
BudgetSolution BudgetSearch::finish(size_t index, BudgetSolution& solution) const {
  const JudgedAnswer& j = judge_[index];
  const Effects fx = effects_of(problem_.candidates, kept_anywhere(j.answer));
  for (size_t i = 0; i < problem_.candidates.size(); ++i) {
    const Candidate& c = problem_.candidates[i];
    SolvedEquation e;
    e.site = c.site;
    e.primitive = c.primitive;
    e.signature = c.signature;
    e.type = c.type;
    e.where = c.where;
    e.decision = j.answer.offloaded[i] ? Decision::kOffloadable : j.answer.saved[i] ? Decision::kSaveable : Decision::kRecompute;
    e.read_by_backward = fx.needed[i] != 0;
    e.iterations = problem_.timeline.levels[static_cast<size_t>(c.level)].iterations;
    e.bytes = c.stack_bytes > 0 ? c.stack_bytes : c.bytes;
    e.cost = problem_.unit_cost(i);
    solution.equations.push_back(std::move(e));
  }
  solution.whole_program = problem_.whole_program;
  solution.cost_kind = problem_.options.cost;
  solution.peak_bytes = j.peak;
  solution.smallest_peak = judge_.smallest();
  solution.everything_peak = problem_.everything.arena_peak;
  solution.fraction_zero_peak = fraction_zero_;
  solution.residual_bytes = j.residual_bytes;
  solution.recompute_flops = j.recompute_flops;
  solution.cost = j.cost;
  if (solution.lower_bound > solution.cost) solution.lower_bound = solution.cost;
  solution.planner_calls = judge_.calls();
  solution.seconds = deadline_.elapsed();
  solution.structured_seconds = structure_.structured_seconds;
  return solution;
}

}  // namespace
}  // namespace rematkit::solver

namespace rematkit {

RecomputeCost parse_recompute_cost(const std::string& text, const std::string& what) {
  if (text == "flops") return RecomputeCost::kFlops;
  if (text == "measured") return RecomputeCost::kMeasured;
  fail(what + ": '" + text + "' is neither flops nor measured");
}

Budget parse_budget(const std::string& text, const std::string& what) {
  Budget b;
  b.text = text;
  if (text == "min") {
    b.smallest = true;
    return b;
  }
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size)
    fail(what + ": '" + text + "' is not a budget (bytes such as 64MiB or 1e9, a fraction between 0 and 1, or min)");
  // A bare number up to 1 is a fraction; anything with a unit, or above 1, is bytes.
  if (size->unit.empty() && size->number <= 1.0 && text.find_first_of("eE") == std::string::npos) {
    b.is_fraction = true;
    b.value = size->number;
  } else {
    b.value = size->bytes;
  }
  return b;
}

bool budget_solver_is_exact() { return solver::IntegerProgram::available(); }

BudgetSolution solve_budget(const Program& program, const BudgetOptions& options) {
  solver::BudgetSearch search(program, options);
  search.prepare();
  return search.answer(search.search(options.budget));
}

// Each budget's answer is the cheapest of every answer planned for any of them that fits its
// budget, picked after all the searches: then a larger budget never costs more and a smaller one
// never plans a larger peak, whatever each search found in its share of the time. (If the answer
// at the larger budget fits the smaller, it is the cheapest there too.)
std::vector<BudgetSolution> solve_budgets(const Program& program, const BudgetOptions& options,
                                          const std::vector<Budget>& budgets) {
  solver::BudgetSearch search(program, options);
  search.prepare();
  std::vector<std::pair<size_t, BudgetSolution>> searched;
  for (const Budget& b : budgets) searched.push_back(search.search(b));
  std::vector<BudgetSolution> out;
  for (std::pair<size_t, BudgetSolution>& s : searched) out.push_back(search.answer(std::move(s)));
  return out;
}

Linearization linearize_solution(const Program& program, const BudgetSolution& solution, const BudgetOptions& options) {
  const PluginRegistry& plugins = options.backends.plugins ? *options.backends.plugins : default_plugins();
  solver::DecisionTable table;
  for (const SolvedEquation& e : solution.equations) table.by_site[e.site] = e.decision;
  const solver::PlannerJudge judge(program, solution.whole_program, plugins.policies(), BackendOptions{}, options.differentiate,
                           options.mesh);
  return judge.linearize_with(table);
}

}  // namespace rematkit
