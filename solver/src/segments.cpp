#include "segments.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace rematkit::solver {
namespace {

int span_end(const Candidate& c) { return std::max(c.latest, c.stack_until); }

// Union-find over candidates.
struct Sets {
  explicit Sets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  }
  void join(int a, int b) { parent[static_cast<size_t>(find(a))] = find(b); }
  std::vector<int> parent;
};

// A segment's shape: its members as the solver sees them, positions and moments relative to it.
std::string shape_of(const std::vector<Candidate>& candidates, const Segment& s) {
  std::map<int, int> position;
  for (size_t k = 0; k < s.members.size(); ++k) position[s.members[k]] = static_cast<int>(k);
  std::string key;
  auto add = [&](int64_t x) { key += std::to_string(x) + ","; };
  for (int i : s.members) {
    const Candidate& c = candidates[static_cast<size_t>(i)];
    key += c.signature + "|";
    add(c.bytes), add(c.stack_bytes), add(static_cast<int64_t>(c.flops)), add(c.read_by_backward);
    add(c.earliest < 0 ? -1 : c.earliest - s.first_moment), add(c.latest < 0 ? -1 : c.latest - s.first_moment);
    add(c.stack_until < 0 ? -1 : c.stack_until - s.first_moment);
    key += "r";
    for (int t : c.read_at) add(t - s.first_moment);
    key += "p";
    for (int p : c.reads) add(position.at(p));
    key += ";";
  }
  return key;
}

}  // namespace

std::vector<Segment> find_segments(const std::vector<Candidate>& candidates, int moments) {
  const size_t n = candidates.size();
  Sets sets(n);
  std::map<int, int> first_of_scope;
  for (size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = first_of_scope.try_emplace(candidates[i].scope, static_cast<int>(i));
    if (!fresh) sets.join(static_cast<int>(i), it->second);
  }
  // Spans per set, then sets whose spans overlap merged (in the order of their starts).
  std::map<int, std::pair<int, int>> span;  // root -> [first, last]
  for (size_t i = 0; i < n; ++i) {
    const Candidate& c = candidates[i];
    if (c.earliest < 0) continue;
    const int root = sets.find(static_cast<int>(i));
    auto [it, fresh] = span.try_emplace(root, c.earliest, span_end(c));
    if (!fresh) it->second = {std::min(it->second.first, c.earliest), std::max(it->second.second, span_end(c))};
  }
  std::vector<std::pair<std::pair<int, int>, int>> by_start;
  for (const auto& [root, s] : span) by_start.push_back({s, root});
  std::sort(by_start.begin(), by_start.end());
  for (size_t k = 1; k < by_start.size(); ++k) {
    auto& [prev, prev_root] = by_start[k - 1];
    auto& [cur, cur_root] = by_start[k];
    if (cur.first <= prev.second) {
      sets.join(cur_root, prev_root);
      cur = {prev.first, std::max(prev.second, cur.second)};
      cur_root = sets.find(cur_root);
      prev_root = cur_root;
    }
  }
  std::map<int, Segment> by_root;
  for (size_t i = 0; i < n; ++i) by_root[sets.find(static_cast<int>(i))].members.push_back(static_cast<int>(i));
  std::vector<Segment> out;
  for (auto& [root, s] : by_root) {
    s.first_moment = moments;
    s.last_moment = -1;
    for (int i : s.members) {
      const Candidate& c = candidates[static_cast<size_t>(i)];
      if (c.earliest < 0) continue;
      s.first_moment = std::min(s.first_moment, c.earliest);
      s.last_moment = std::max(s.last_moment, span_end(c));
    }
    if (s.last_moment < 0) s.first_moment = 0;  // nothing the backward pass reads: no span
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) {
    return std::make_pair(a.last_moment < 0, a.first_moment) < std::make_pair(b.last_moment < 0, b.first_moment);
  });
  std::map<std::string, int> shapes;
  for (Segment& s : out) s.shape = shapes.try_emplace(shape_of(candidates, s), static_cast<int>(shapes.size())).first->second;
  return out;
}

SegmentOption option_of(const std::vector<Candidate>& candidates, const Segment& segment, std::vector<char> saved,
                        const std::vector<double>& unit_cost) {
  const size_t n = candidates.size();
  std::vector<char> all(n, 0);
  for (size_t k = 0; k < segment.members.size(); ++k) all[static_cast<size_t>(segment.members[k])] = saved[k];
  Effects fx{std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<int>(n, -1),
             std::vector<int>(n, -1)};
  effects_within(candidates, all, segment.members, fx);
  SegmentOption o;
  o.saved = std::move(saved);
  const int width = std::max(0, segment.last_moment - segment.first_moment + 1);
  o.alive.assign(static_cast<size_t>(width), 0);
  for (int member : segment.members) {
    const size_t i = static_cast<size_t>(member);
    const Candidate& c = candidates[i];
    if (fx.recomputed[i]) o.cost += unit_cost[i];
    if (!fx.kept[i] && !fx.recomputed[i]) continue;
    o.held_forward += kept_bytes(c, fx, i);
    // Kept ones wait from the forward pass for their first reader, in the span.
    if (fx.kept[i]) o.held += (fx.last_use[i] >= 0 ? c.bytes : 0) + c.stack_bytes;
    for (int t = segment.first_moment; t <= segment.last_moment; ++t)
      o.alive[static_cast<size_t>(t - segment.first_moment)] += bytes_at(c, fx, i, t);
  }
  return o;
}

int64_t option_peak(const MemoryModel& model, const Segment& segment, const SegmentOption& option) {
  int64_t peak = 0;
  for (int t = segment.first_moment; t <= segment.last_moment; ++t)
    peak = std::max(peak, model.base(stage_of_moment(t)) + option.alive[static_cast<size_t>(t - segment.first_moment)]);
  return peak + model.fragmentation();
}

void keep_undominated(std::vector<SegmentOption>& options) {
  auto no_worse = [](const SegmentOption& a, const SegmentOption& b) {
    if (a.held > b.held || a.held_forward > b.held_forward || a.cost > b.cost) return false;
    for (size_t t = 0; t < a.alive.size(); ++t)
      if (a.alive[t] > b.alive[t]) return false;
    return true;
  };
  std::vector<char> dominated(options.size(), 0);
  for (size_t i = 0; i < options.size(); ++i)
    for (size_t j = 0; j < options.size() && !dominated[i]; ++j) {
      if (i == j || !no_worse(options[j], options[i])) continue;
      // Equal ones: the first stays.
      dominated[i] = !no_worse(options[i], options[j]) || j < i;
    }
  std::vector<SegmentOption> kept;
  for (size_t i = 0; i < options.size(); ++i)
    if (!dominated[i]) kept.push_back(std::move(options[i]));
  options = std::move(kept);
}

}  // namespace rematkit::solver
