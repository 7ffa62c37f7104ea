#include "commands.hpp"

namespace rematkit::cli {

Linearization linearize_for_command(const Program& program, const std::string& whole_program_policy) {
  const PolicyRegistry policies = PolicyRegistry::with_builtins();
  LinearizeOptions options;
  options.policies = &policies;
  if (!whole_program_policy.empty())
    options.whole_program_policy = policies.parse(whole_program_policy, {"--policy", 0, 0});
  return linearize(program, options);
}

}  // namespace rematkit::cli
