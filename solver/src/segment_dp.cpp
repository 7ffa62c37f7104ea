#include "segment_dp.hpp"

#include <algorithm>
#include <tuple>

namespace rematkit::solver {
namespace {

// A partial choice: the segments from the last in the backward pass back to one of them.
struct State {
  int64_t held = 0;          // what they keep until their moments: every earlier moment holds it
  int64_t held_forward = 0;  // what they hold in the forward pass
  double objective = 0.0;    // cost, or the peak so far (smallest_peak)
  double cost = 0.0;
  int64_t peak = 0;          // the largest modelled stage so far
  int prev = -1, option = -1;
};

// More states than this and held bytes are rounded up to a grid (the answer stays within the
// budget; only choices closer than the grid are lost).
constexpr size_t kMostStates = 4096;

// Keeps the states no other is as good as in held, held_forward and objective together.
void prune(std::vector<State>& states) {
  auto by_objective = [](const State& a, const State& b) {
    return std::tie(a.objective, a.cost, a.peak, a.held, a.held_forward) < std::tie(b.objective, b.cost, b.peak, b.held, b.held_forward);
  };
  std::sort(states.begin(), states.end(), by_objective);
  std::vector<State> kept;
  for (const State& s : states) {
    const bool beaten = std::any_of(kept.begin(), kept.end(), [&](const State& k) {
      return k.held <= s.held && k.held_forward <= s.held_forward;
    });
    if (!beaten) kept.push_back(s);
  }
  states = std::move(kept);
}

void coarsen(std::vector<State>& states, int64_t quantum) {
  for (State& s : states) {
    s.held = (s.held + quantum - 1) / quantum * quantum;
    s.held_forward = (s.held_forward + quantum - 1) / quantum * quantum;
  }
  prune(states);
}

std::optional<SegmentChoice> solve(const MemoryModel& model, const std::vector<Segment>& segments,
                                   const std::vector<std::vector<SegmentOption>>& options, std::optional<int64_t> budget) {
  std::vector<std::vector<int64_t>> peaks(segments.size());
  int64_t largest = 1;
  for (size_t g = 0; g < segments.size(); ++g)
    for (const SegmentOption& o : options[g]) {
      peaks[g].push_back(option_peak(model, segments[g], o));
      largest = std::max({largest, peaks[g].back(), o.held, o.held_forward});
    }
  const int64_t quantum = std::max<int64_t>(1, (budget ? *budget : largest * static_cast<int64_t>(segments.size())) / 2048);

  std::vector<std::vector<State>> layers{{State{}}};
  for (size_t g = segments.size(); g-- > 0;) {
    const std::vector<State>& from = layers.back();
    std::vector<State> next;
    for (size_t s = 0; s < from.size(); ++s)
      for (size_t o = 0; o < options[g].size(); ++o) {
        const SegmentOption& opt = options[g][o];
        const int64_t peak = segments[g].last_moment < 0 ? 0 : peaks[g][o] + from[s].held;
        if (budget && peak > *budget) continue;
        State n;
        n.held = from[s].held + opt.held;
        n.held_forward = from[s].held_forward + opt.held_forward;
        n.cost = from[s].cost + opt.cost;
        n.peak = std::max(from[s].peak, peak);
        n.objective = budget ? n.cost : static_cast<double>(n.peak);
        n.prev = static_cast<int>(s);
        n.option = static_cast<int>(o);
        next.push_back(n);
      }
    prune(next);
    if (next.size() > kMostStates) coarsen(next, quantum);
    if (next.empty()) return std::nullopt;
    layers.push_back(std::move(next));
  }
  // The forward pass and the prologue hold what every segment keeps.
  const int64_t fixed = std::max(model.base(kForwardStage), model.base(kPrologueStage)) + model.fragmentation();
  int best = -1;
  double best_objective = 0, best_cost = 0;
  int64_t best_peak = 0;
  const std::vector<State>& last = layers.back();
  for (size_t s = 0; s < last.size(); ++s) {
    const int64_t peak = std::max(last[s].peak, fixed + last[s].held_forward);
    if (budget && peak > *budget) continue;
    const double objective = budget ? last[s].cost : static_cast<double>(peak);
    if (best < 0 || std::tie(objective, last[s].cost, peak) < std::tie(best_objective, best_cost, best_peak))
      best = static_cast<int>(s), best_objective = objective, best_cost = last[s].cost, best_peak = peak;
  }
  if (best < 0) return std::nullopt;
  SegmentChoice choice;
  choice.option.assign(segments.size(), 0);
  choice.cost = best_cost;
  choice.peak = best_peak;
  int at = best;
  for (size_t layer = layers.size() - 1, g = 0; layer > 0; --layer, ++g) {
    const State& s = layers[layer][static_cast<size_t>(at)];
    choice.option[g] = s.option;  // layers[1] decided the last segment, layers.back() the first
    at = s.prev;
  }
  return choice;
}

}  // namespace

std::optional<SegmentChoice> cheapest_within(const MemoryModel& model, const std::vector<Segment>& segments,
                                             const std::vector<std::vector<SegmentOption>>& options, int64_t budget) {
  return solve(model, segments, options, budget);
}

SegmentChoice smallest_peak(const MemoryModel& model, const std::vector<Segment>& segments,
                            const std::vector<std::vector<SegmentOption>>& options) {
  return *solve(model, segments, options, std::nullopt);
}

}  // namespace rematkit::solver
