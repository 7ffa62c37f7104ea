#include "budget_rows.hpp"

namespace rematkit::sweep {

std::optional<Budget> budget_policy(const std::string& policy) {
  if (policy.rfind("budget(", 0) != 0 || policy.back() != ')') return std::nullopt;
  std::string inner = policy.substr(7, policy.size() - 8);
  if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') && inner.back() == inner.front())
    inner = inner.substr(1, inner.size() - 2);
  return parse_budget(inner, "budget");
}

}  // namespace rematkit::sweep
