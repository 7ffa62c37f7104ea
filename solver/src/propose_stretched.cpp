#include <algorithm>

#include "proposers.hpp"

namespace rematkit::solver {

// The model adds what other answers measured to every stage, so it can over-estimate an answer
// by more than the budget's slack. Then the method is asked for more than the budget while the
// planner still finds its answers within it.
size_t propose_stretched(Judge& judge, const Deadline& deadline, int64_t budget, size_t best, const std::string& origin,
                         const std::function<std::optional<Answer>(int64_t)>& solve) {
  const int64_t over = judge.model().peak(kept_anywhere(judge[best].answer)) - judge[best].peak;
  int64_t lo = budget, hi = budget + std::max<int64_t>(0, over) + (budget - judge[best].peak);
  for (int round = 0; round < 8 && hi - lo > std::max<int64_t>(budget / 2000, 4096) && judge.time_for_a_judgment(deadline);
       ++round) {
    const int64_t ask = round == 0 ? hi : lo + (hi - lo) / 2;
    const std::optional<Answer> a = solve(ask);
    if (!a) break;
    const size_t j = judge.judge(*a, origin);
    if (judge[j].peak <= budget) {
      if (judge[j].cost < judge[best].cost) best = j;
      lo = ask;
    } else {
      hi = ask;
    }
  }
  return best;
}

}  // namespace rematkit::solver
