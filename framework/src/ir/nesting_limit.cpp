#include "rematkit/ir/nesting_limit.hpp"

namespace rematkit {

void fail_too_deep(const SourceLocation& where, const std::string& what, int limit) {
  fail_at(where, what + " nested more than " + std::to_string(limit) +
                     " deep (rematkit's limit, docs/program-format.md#limits)");
}

NestingGuard::NestingGuard(int& depth, int limit, const char* what, const SourceLocation& where) : depth_(depth) {
  if (depth_ >= limit) fail_too_deep(where, what, limit);
  ++depth_;
}

NestingGuard::NestingGuard(int& depth, const char* pass, const Program& program)
    : NestingGuard(depth, kMaxProgramNesting, pass, program.eqns.empty() ? SourceLocation{} : program.eqns.front().where) {}

}  // namespace rematkit
