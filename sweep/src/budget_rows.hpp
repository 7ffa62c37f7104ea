// budget(X) in a sweep's policies: a row for the budget solver's cheapest decisions under X.
#pragma once
#include <optional>
#include <string>

#include "rematkit/budget_solver.hpp"

namespace rematkit::sweep {

// X as the solver reads it (bytes such as 64MiB, or a fraction; quoted or not) when `policy` is
// budget(X); none for any other policy. A bad-input Error for a bad X.
std::optional<Budget> budget_policy(const std::string& policy);

}  // namespace rematkit::sweep
