// The budget solver's answers for a sweep's budget(...) rows. A model's budgets are solved
// together (solve_budgets), once per backend list and thread count; another thread count reuses
// them when the planner's answer does not depend on it: when the answer's planned peak, and
// everything_saveable's (a fraction's 1), are the same there. Otherwise it solves again.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/budget_solver.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/sweep/export.hpp"
#include "rematkit/sweep/sweep_config.hpp"

namespace rematkit::sweep {

class REMATKIT_SWEEP_EXPORT BudgetAnswers {
 public:
  // The linearization budget(X)'s answer gives model `model` (an instance drawn for it), on
  // `backends` with their thread count; `budget_text` is X as the policy spells it.
  Linearization linearized(const SweepConfig& config, size_t model, const Program& program,
                           const std::vector<size_t>& trained, const std::string& policy, const BackendOptions& backends);
  int solves() const { return solves_; }  // how many times the solver ran (for tests)

 private:
  using Key = std::tuple<size_t, std::string, int>;  // model, backend list, threads
  std::map<Key, std::map<std::string, BudgetSolution>> answers_;  // by policy
  int solves_ = 0;
};

}  // namespace rematkit::sweep
