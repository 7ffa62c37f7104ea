#include "budget_rows.hpp"

#include "rematkit/schedule/step_program.hpp"
#include "rematkit/sweep/budget_answers.hpp"

namespace rematkit::sweep {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

int64_t planned_peak(const Linearization& lin, const BackendOptions& backends) {
  return build_step_program(lin, backends, Pass::kBackward, InputMode::kLoadedEachRun)
      .layout()
      .arena(MemorySpace::kDevice);
}

}  // namespace

std::optional<Budget> budget_policy(const std::string& policy) {
  if (policy.rfind("budget(", 0) != 0 || policy.back() != ')') return std::nullopt;
  std::string inner = policy.substr(7, policy.size() - 8);
  if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') && inner.back() == inner.front())
    inner = inner.substr(1, inner.size() - 2);
  return parse_budget(inner, "budget");
}

Linearization BudgetAnswers::linearized(const SweepConfig& config, size_t model, const Program& program,
                                        const std::vector<size_t>& trained, const std::string& policy,
                                        const BackendOptions& backends) {
  BudgetOptions options;
  options.backends = backends;
  options.differentiate = trained;
  options.time_limit_seconds = config.budget_time_limit_seconds;
  const std::string list = joined(backends.preference);
  const Key key{model, list, backends.threads};
  auto it = answers_.find(key);
  // Another thread count's answers, where the planner's answer is the same at this one.
  for (auto other = answers_.begin(); it == answers_.end() && other != answers_.end(); ++other) {
    if (std::get<0>(other->first) != model || std::get<1>(other->first) != list) continue;
    const auto found = other->second.find(policy);
    if (found == other->second.end()) continue;
    const BudgetSolution& s = found->second;
    BudgetSolution everything = s;
    for (SolvedEquation& e : everything.equations) e.decision = Decision::kSaveable;
    if (planned_peak(linearize_solution(program, s, options), backends) == s.peak_bytes &&
        planned_peak(linearize_solution(program, everything, options), backends) == s.everything_peak)
      it = answers_.emplace(key, other->second).first;
  }
  if (it == answers_.end()) {
    // Every budget of the sweep at once: they share the solver's work on the model.
    std::vector<std::string> policies;
    std::vector<Budget> budgets;
    for (const std::string& p : config.policies)
      if (const std::optional<Budget> b = budget_policy(p)) policies.push_back(p), budgets.push_back(*b);
    std::map<std::string, BudgetSolution> answers;
    try {
      std::vector<BudgetSolution> solved = solve_budgets(program, options, budgets);
      for (size_t i = 0; i < policies.size(); ++i) answers[policies[i]] = std::move(solved[i]);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      // One budget the model cannot meet: this one alone, so that its error is its own.
      options.budget = *budget_policy(policy);
      answers[policy] = solve_budget(program, options);
    }
    ++solves_;
    it = answers_.emplace(key, std::move(answers)).first;
  }
  auto found = it->second.find(policy);
  if (found == it->second.end()) {
    options.budget = *budget_policy(policy);
    found = it->second.emplace(policy, solve_budget(program, options)).first;
    ++solves_;
  }
  return linearize_solution(program, found->second, options);
}

}  // namespace rematkit::sweep
