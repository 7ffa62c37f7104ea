#include "proposers.hpp"

#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::solver {

std::vector<Answer> propose_jax_seeds(const Problem& problem, Judge& judge, const Deadline& /*deadline*/) {
  judge.record(problem.uniform_for(true), problem.everything, "JAX's everything_saveable");
  const Answer nothing = problem.uniform_for(false);
  // Planned even when it equals everything saved (no candidates): the planner's calls are counted.
  judge.record(nothing, judge.plan(problem.table_of(nothing)), "JAX's nothing_saveable");
  std::vector<Answer> seeds;
  for (const char* spec : {"dots_saveable", "dots_with_no_batch_dims_saveable"}) {
    if (!problem.plugins.policies().contains(spec)) continue;
    const Answer a = judge.answer_of_policy(spec);
    seeds.push_back(a);
    if (problem.options.jax_signatures && !problem.agrees_by_signature(a)) continue;
    judge.judge(a, std::string("JAX's ") + spec);
  }
  return seeds;
}

}  // namespace rematkit::solver
