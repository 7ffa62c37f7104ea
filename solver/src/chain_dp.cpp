#include "chain_dp.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

namespace rematkit::solver {
namespace {

std::string local_key(const Candidate& c) {
  return c.signature + "|" + std::to_string(c.bytes) + "|" + std::to_string(static_cast<int64_t>(c.flops)) + "|" +
         std::to_string(c.read_by_backward);
}

// A layout of the members as prelude, n layers of k from `first`, epilogue; checked.
class Layout {
 public:
  Layout(const std::vector<Candidate>& candidates, const Segment& segment, size_t first, size_t k, size_t n)
      : c_(candidates), s_(segment), first_(first), k_(k), n_(n) {
    for (size_t p = 0; p < segment.members.size(); ++p) position_[segment.members[p]] = p;
  }

  // 0: prelude, 1..n: layers, n + 1: epilogue.
  size_t layer_of_position(size_t p) const {
    if (p < first_) return 0;
    if (p >= first_ + n_ * k_) return n_ + 1;
    return (p - first_) / k_ + 1;
  }
  size_t layer_of(int candidate) const { return layer_of_position(position_.at(candidate)); }
  size_t index_in_layer(int candidate) const { return (position_.at(candidate) - first_) % k_; }
  int member(size_t layer, size_t index) const { return s_.members[first_ + (layer - 1) * k_ + index]; }

  std::optional<Chain> check() const {
    if (!reads_alike()) return std::nullopt;
    const std::optional<std::vector<std::pair<int, int>>> blocks = moment_blocks();
    if (!blocks) return std::nullopt;
    Chain chain = chain_of(*blocks);
    if (chain.exports.size() > 6 || chain.last_exports.size() > 6) return std::nullopt;
    return chain;
  }

 private:
  // Reads: a layer reads itself, the layer before and the prelude; alike in every layer but the
  // first (whose inputs come from the prelude or outside).
  bool reads_alike() const {
    const size_t n = n_, k = k_;
    std::vector<std::vector<std::pair<int, size_t>>> reads_of(k);  // relative, from layer 2
    for (size_t p = 0; p < s_.members.size(); ++p) {
      const size_t l = layer_of_position(p);
      std::vector<std::pair<int, size_t>> relative;
      for (int r : c_[static_cast<size_t>(s_.members[p])].reads) {
        const size_t lr = layer_of(r);
        const bool ok = l == 0 ? lr == 0 : l <= n ? (lr == l || lr + 1 == l || lr == 0) : (lr >= n || lr == 0);
        if (!ok) return false;
        if (l >= 1 && l <= n && lr >= 1 && lr <= n) relative.push_back({static_cast<int>(l - lr), index_in_layer(r)});
      }
      if (l < 1 || l > n) continue;
      const size_t i = (p - first_) % k;
      if (l == 2) reads_of[i] = relative;
      else if (l > 2 && relative != reads_of[i]) return false;
    }
    for (size_t i = 0; i < k; ++i) {  // the first layer reads within itself as the others do
      std::vector<std::pair<int, size_t>> own;
      for (int r : c_[static_cast<size_t>(member(1, i))].reads)
        if (layer_of(r) == 1) own.push_back({0, index_in_layer(r)});
      std::vector<std::pair<int, size_t>> expected;
      for (const auto& r : reads_of[i])
        if (r.first == 0) expected.push_back(r);
      if (own != expected) return false;
    }
    return true;
  }

  // Per layer (0: prelude, 1..n: layers, n + 1: epilogue), its block of moments [first, last]; none
  // when the moments are not laid out as a chain's.
  std::optional<std::vector<std::pair<int, int>>> moment_blocks() const {
    const size_t n = n_, k = k_;
    // Moments: each reads one layer and the one before (its home is the later one); the homes'
    // moments are contiguous, the epilogue's first, then the layers from the last, the prelude's last.
    std::map<int, size_t> home, low;
    for (int m : s_.members)
      for (int t : c_[static_cast<size_t>(m)].read_at) {
        const size_t l = layer_of(m);
        if (l == 0) {
          home.try_emplace(t, 0);
          continue;
        }
        auto [it, fresh] = home.try_emplace(t, l);
        if (!fresh) it->second = std::max(it->second, l);
        auto [lo, lo_fresh] = low.try_emplace(t, l);
        if (!lo_fresh) lo->second = std::min(lo->second, l);
      }
    for (const auto& [t, h] : home)
      if (low.count(t) && low.at(t) + 1 < h) return std::nullopt;
    std::vector<std::pair<int, int>> block(n + 2, {0, -1});
    std::vector<size_t> count(n + 2, 0);
    for (const auto& [t, h] : home) {
      auto& b = block[h];
      if (count[h]++ == 0) b = {t, t};
      else b = {std::min(b.first, t), std::max(b.second, t)};
    }
    for (size_t h = 0; h <= n + 1; ++h)
      if (count[h] > 0 && static_cast<size_t>(block[h].second - block[h].first + 1) != count[h]) return std::nullopt;
    int previous_end = -1;
    for (size_t h = n + 2; h-- > 0;) {
      if (count[h] == 0) {
        if (h >= 1 && h <= n) return std::nullopt;  // a layer the backward pass never reads
        continue;
      }
      if (block[h].first <= previous_end) return std::nullopt;
      previous_end = block[h].second;
    }
    // Interior layers alike in their moments too.
    for (size_t l = 3; l + 1 <= n; ++l)
      if (block[l].second - block[l].first != block[2].second - block[2].first) return std::nullopt;
    for (size_t i = 0; i < k; ++i) {
      auto relative = [&](size_t l) {
        std::vector<int> r;
        for (int t : c_[static_cast<size_t>(member(l, i))].read_at) r.push_back(t - block[l].first);
        return r;
      };
      for (size_t l = 3; l + 1 <= n; ++l)
        if (relative(l) != relative(2)) return std::nullopt;
    }
    return block;
  }

  Chain chain_of(const std::vector<std::pair<int, int>>& block) const {
    const size_t n = n_, k = k_;
    Chain chain;
    for (size_t p = 0; p < first_; ++p) chain.prelude.push_back(s_.members[p]);
    for (size_t p = first_ + n * k; p < s_.members.size(); ++p) chain.epilogue.push_back(s_.members[p]);
    for (size_t l = 1; l <= n; ++l) {
      chain.layers.emplace_back();
      for (size_t i = 0; i < k; ++i) chain.layers.back().push_back(member(l, i));
      chain.blocks.push_back(block[l]);
    }
    chain.epilogue_block = block[n + 1];
    chain.prelude_block = block[0];
    auto read_by = [&](int m, size_t reader_layer, std::pair<int, int> reader_block) {
      const Candidate& c = c_[static_cast<size_t>(m)];
      if (std::any_of(c.readers.begin(), c.readers.end(), [&](int r) { return layer_of(r) == reader_layer; })) return true;
      return std::any_of(c.read_at.begin(), c.read_at.end(), [&](int t) { return t >= reader_block.first && t <= reader_block.second; });
    };
    // The epilogue is kept: only its moments' reads make the last layer's values needed.
    auto read_in = [&](int m, std::pair<int, int> b) {
      const Candidate& c = c_[static_cast<size_t>(m)];
      return std::any_of(c.read_at.begin(), c.read_at.end(), [&](int t) { return t >= b.first && t <= b.second; });
    };
    for (size_t i = 0; i < k; ++i) {
      if (read_by(member(2, i), 3, block[3])) chain.exports.push_back(static_cast<int>(i));
      if (read_in(member(n, i), block[n + 1])) chain.last_exports.push_back(static_cast<int>(i));
    }
    return chain;
  }

  const std::vector<Candidate>& c_;
  const Segment& s_;
  size_t first_, k_, n_;
  std::map<int, size_t> position_;
};

// What one run does: its own bytes at each of its moments, what it keeps for the moments of the
// runs before it in the backward pass, and which exports it needs of the layer below it.
struct RunProfile {
  int first_moment = 0;            // the top layer's block start (the run's first moment)
  std::vector<int64_t> own;        // per moment of the run's blocks
  int64_t held = 0, held_forward = 0;  // its kept values but its top's exports
  double cost = 0.0;
  uint64_t top_need = 0;           // the top's exports it needs itself (bit per export)
  uint64_t import_need = 0;        // the exports below it that it needs
  std::vector<int> import_last;    // per export below: its last use in the run (relative), -1 none
  uint64_t import_read_last = 0;   // those a moment reads at that last use (else a recomputation does)
};

// A way to the top of layer a - 1: its runs so far, as dynamic programming over layers keeps it.
struct ChainState {
  int64_t held = 0, held_forward = 0;  // what the runs below keep for the moments above them
  double cost = 0.0;
  int64_t peak = 0;
  uint32_t need = 0;  // the top exports the run below needs itself
  int32_t prev = -1;  // into states[a - r]
  uint16_t run = 0, pattern = 0;
  double key = 0.0;   // the objective: cost, or the peak
};

class ChainSolver {
 public:
  ChainSolver(const std::vector<Candidate>& candidates, const MemoryModel& model, const Chain& chain,
              const ChainOptions& options)
      : c_(candidates), model_(model), chain_(chain), options_(options), n_(chain.layers.size()),
        k_(chain.layers[0].size()) {
    for (int m : chain.prelude) prelude_bytes_ += c_[static_cast<size_t>(m)].bytes + c_[static_cast<size_t>(m)].stack_bytes;
    frag_ = model.fragmentation();
    make_patterns();
    longest_ = options.longest_run > 0
                   ? static_cast<size_t>(options.longest_run)
                   : std::min(n_, std::max<size_t>(16, static_cast<size_t>(std::ceil(2 * std::sqrt(2.0 * static_cast<double>(n_))))));
  }

  std::optional<ChainAnswer> solve(std::optional<int64_t> budget);

 private:
  // The top's exports: the interior exports, or the epilogue's for the last layer.
  const std::vector<int>& top_exports(size_t b) const { return b == n_ ? chain_.last_exports : chain_.exports; }

  // Layers a..b (1-based) as one run with `pattern`: the memory model's effects on its members
  // and the exports below it, read where the run's own moments read them.
  RunProfile simulate(size_t a, size_t b, const std::vector<char>& pattern) const {
    const int lo = chain_.blocks[b - 1].first, hi = chain_.blocks[a - 1].second;
    std::vector<int> members;  // global indices: imports first, then the layers
    if (a >= 2)
      for (int x : chain_.exports) members.push_back(chain_.layers[a - 2][static_cast<size_t>(x)]);
    const size_t imports = members.size();
    for (size_t l = a; l <= b; ++l)
      for (int m : chain_.layers[l - 1]) members.push_back(m);
    return run_profile(members, imports, lo, hi, [&](size_t l, size_t i) -> char {
      const std::vector<int>& top = top_exports(b);
      if (l == b && std::find(top.begin(), top.end(), static_cast<int>(i)) != top.end()) return 1;
      if (l < b && std::find(chain_.exports.begin(), chain_.exports.end(), static_cast<int>(i)) != chain_.exports.end()) return 0;
      return pattern[i];
    }, a, b);
  }

  // The epilogue with the last layer's exports below it: everything saved.
  RunProfile simulate_epilogue() const {
    std::vector<int> members;
    for (int x : chain_.last_exports) members.push_back(chain_.layers[n_ - 1][static_cast<size_t>(x)]);
    const size_t imports = members.size();
    for (int m : chain_.epilogue) members.push_back(m);
    return run_profile(members, imports, chain_.epilogue_block.first, chain_.epilogue_block.second,
                       [](size_t, size_t) -> char { return 1; }, n_ + 1, n_ + 1);
  }

  template <typename SavedOf>
  RunProfile run_profile(const std::vector<int>& members, size_t imports, int lo, int hi, SavedOf saved_of, size_t a,
                         size_t b) const {
    std::map<int, int> local_of;
    for (size_t i = 0; i < members.size(); ++i) local_of[members[i]] = static_cast<int>(i);
    std::vector<Candidate> local(members.size());
    std::vector<char> saved(members.size(), 1);
    for (size_t i = 0; i < members.size(); ++i) {
      const Candidate& g = c_[static_cast<size_t>(members[i])];
      Candidate& l = local[i];
      l.bytes = g.bytes;
      l.stack_bytes = g.stack_bytes;
      l.stack_until = g.stack_until;
      for (int t : g.read_at)
        if (t >= lo && t <= hi) l.read_at.push_back(t);
      l.read_by_backward = !l.read_at.empty() || (g.read_by_backward && g.read_at.empty());
      for (int r : g.reads)
        if (const auto it = local_of.find(r); it != local_of.end()) l.reads.push_back(it->second);
      for (int r : g.readers)
        if (const auto it = local_of.find(r); it != local_of.end()) l.readers.push_back(it->second);
      if (i >= imports && b <= n_) {
        const size_t at = i - imports;
        saved[i] = saved_of(a + at / k_, at % k_);
      }
    }
    const Effects fx = effects_of(local, saved);
    RunProfile p;
    p.first_moment = lo;
    p.own.assign(static_cast<size_t>(std::max(0, hi - lo + 1)), 0);
    const std::vector<int>& top = b <= n_ ? top_exports(b) : chain_.last_exports;
    for (size_t i = imports; i < members.size(); ++i) {
      const size_t at = i - imports;
      const Candidate& l = local[i];
      if (fx.recomputed[i]) p.cost += options_.unit_cost[static_cast<size_t>(members[i])];
      for (int t = lo; t <= hi; ++t) p.own[static_cast<size_t>(t - lo)] += bytes_at(l, fx, i, t);
      const bool top_export = b <= n_ && a + at / k_ == b &&
                              std::find(top.begin(), top.end(), static_cast<int>(at % k_)) != top.end();
      if (top_export) {
        const size_t bit = static_cast<size_t>(std::find(top.begin(), top.end(), static_cast<int>(at % k_)) - top.begin());
        if (fx.needed[i]) p.top_need |= uint64_t{1} << bit;
        continue;
      }
      if (!fx.kept[i]) continue;
      p.held += (fx.last_use[i] >= 0 ? l.bytes : 0) + l.stack_bytes;
      p.held_forward += l.bytes + l.stack_bytes;
    }
    for (size_t x = 0; x < imports; ++x) {
      if (fx.needed[x]) p.import_need |= uint64_t{1} << x;
      p.import_last.push_back(fx.needed[x] ? fx.last_use[x] - lo : -1);
      if (std::binary_search(local[x].read_at.begin(), local[x].read_at.end(), fx.last_use[x]))
        p.import_read_last |= uint64_t{1} << x;
    }
    return p;
  }

  // Bytes of the exports below a run (those of layer a - 1), by bit.
  int64_t import_bytes(size_t a, size_t bit, bool last) const {
    const std::vector<int>& x = last ? chain_.last_exports : chain_.exports;
    return c_[static_cast<size_t>(chain_.layers[a - 2][static_cast<size_t>(x[bit])])].bytes;
  }

  // The run's peak given which exports below it the runs below need (`below`), with nothing else
  // held; and the bytes of those exports it holds for the moments before it.
  int64_t run_peak(const RunProfile& p, size_t a, uint64_t below, bool epilogue, int shift = 0) const {
    int64_t peak = 0;
    const size_t imports = p.import_last.size();
    for (size_t t = 0; t < p.own.size(); ++t) {
      int64_t bytes = p.own[t];
      for (size_t x = 0; x < imports; ++x) {
        // Held for the runs below it: alive throughout. Needed here alone: to its last use, but
        // at that moment only if the moment reads it (else it dies in the recomputations run
        // for it, as bytes_at counts it).
        const bool held_below = (below >> x) & 1;
        const int last = p.import_last[x];
        const bool held_here = ((p.import_need >> x) & 1) &&
                               (static_cast<int>(t) < last || (static_cast<int>(t) == last && ((p.import_read_last >> x) & 1)));
        if (held_below || held_here) bytes += import_bytes(a, x, epilogue);
      }
      peak = std::max(peak, model_.base(stage_of_moment(p.first_moment + shift + static_cast<int>(t))) + bytes);
    }
    return peak + frag_;
  }
  int64_t imports_held(const RunProfile& p, size_t a, uint64_t below, bool epilogue) const {
    int64_t bytes = 0;
    for (size_t x = 0; x < p.import_last.size(); ++x)
      if (((below | p.import_need) >> x) & 1) bytes += import_bytes(a, x, epilogue);
    return bytes;
  }

  // The profile of run [a, b] with pattern q, and the moment its profile's first moment is at.
  std::pair<const RunProfile*, int> profile(size_t a, size_t b, size_t q) {
    // Runs clear of the chain's ends are alike wherever they are: profiled once, at layer 3.
    // (The exports below layer 3 are layer 2's, whose moments are checked alike.)
    const bool interior = a >= 3 && b + 1 <= n_;
    const auto key = std::make_tuple(interior ? 0 : a, b - a + 1, q, interior);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      RunProfile p = interior ? simulate(3, b - a + 3, patterns_[q]) : simulate(a, b, patterns_[q]);
      if (interior) p.first_moment -= chain_.blocks[b - a + 2].first;  // relative to the top's block
      it = cache_.emplace(key, std::move(p)).first;
    }
    return {&it->second, interior ? chain_.blocks[b - 1].first : 0};
  }

  void make_patterns();

  // Run [a, b] with each pattern: its profile, and per need below, its peak and what it adds to held.
  struct Step {
    const RunProfile* p;
    std::vector<int64_t> peak, added;  // per need
  };
  std::vector<Step> steps_of(size_t a, size_t b, const std::vector<uint32_t>& needs);
  // Per step, whether another is no worse for every need (of `needs` many) and so it is not tried.
  static std::vector<char> no_better(const std::vector<Step>& steps, size_t needs);
  // The states at layer a extended by a run of r layers with every pattern worth trying: whether
  // any state could take it.
  bool extend(size_t a, size_t r, const std::vector<uint32_t>& needs, std::optional<int64_t> budget,
              std::vector<std::vector<ChainState>>& states);
  // The index of the best state at the chain's top with the epilogue and forward pass added (its
  // state with that peak in `best_state`), or -1 when none fits the budget.
  int best_final(const std::vector<ChainState>& finals, std::optional<int64_t> budget, ChainState& best_state) const;
  ChainAnswer answer_of(const std::vector<std::vector<ChainState>>& states, size_t best, const ChainState& best_state) const;

  const std::vector<Candidate>& c_;
  const MemoryModel& model_;
  const Chain& chain_;
  const ChainOptions& options_;
  size_t n_, k_, longest_ = 0;
  int64_t prelude_bytes_ = 0, frag_ = 0;
  std::vector<std::vector<char>> patterns_;
  std::map<std::tuple<size_t, size_t, size_t, bool>, RunProfile> cache_;
};

void ChainSolver::make_patterns() {
  // The positions a pattern decides: all but the exports the run's rule always sets (an export
  // the epilogue does not read is the pattern's in the last layer).
  auto in = [](const std::vector<int>& v, size_t i) { return std::find(v.begin(), v.end(), static_cast<int>(i)) != v.end(); };
  std::vector<size_t> free;
  for (size_t i = 0; i < k_; ++i)
    if (!in(chain_.exports, i) || !in(chain_.last_exports, i)) free.push_back(i);
  std::vector<std::vector<char>> all;
  if (options_.enumerate && free.size() <= 8) {
    for (uint32_t bits = 0; bits < (1u << free.size()); ++bits) {
      std::vector<char> p(k_, 1);
      for (size_t f = 0; f < free.size(); ++f) p[free[f]] = (bits >> f) & 1;
      all.push_back(std::move(p));
    }
  } else if (options_.enumerate) {
    all.push_back(std::vector<char>(k_, 1));
    all.push_back(std::vector<char>(k_, 0));
  }
  for (const std::vector<char>& p : options_.patterns)
    if (p.size() == k_) all.push_back(p);
  // Patterns that do the same (they differ where nothing is needed) are one, and one no better
  // than another in every respect on runs of one and two layers is dropped; profiled at the
  // chain's start, in its middle and at its end.
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t a : {size_t{1}, n_ >= 4 ? size_t{2} : size_t{1}, n_})
    for (size_t r = 1; r <= 2; ++r) {
      const size_t first = a == n_ ? n_ + 1 - r : a;
      if (first >= 1 && first + r - 1 <= n_) runs.push_back({first, first + r - 1});
    }
  std::vector<std::vector<RunProfile>> profiles;
  std::map<std::string, size_t> seen;
  for (const std::vector<char>& p : all) {
    std::vector<RunProfile> prof;
    std::string key;
    for (const auto& [first, last] : runs) {
      prof.push_back(simulate(first, last, p));
      const RunProfile& x = prof.back();
      key += std::to_string(x.held) + "," + std::to_string(x.held_forward) + "," + std::to_string(x.cost) + "," +
             std::to_string(x.top_need) + "," + std::to_string(x.import_need) + ";";
      for (int64_t b : x.own) key += std::to_string(b) + ",";
      for (int l : x.import_last) key += std::to_string(l) + ",";
      key += std::to_string(x.import_read_last) + "|";
    }
    if (!seen.try_emplace(key, patterns_.size()).second) continue;
    patterns_.push_back(p);
    profiles.push_back(std::move(prof));
  }
  auto no_worse = [](const RunProfile& x, const RunProfile& y) {
    if (x.held > y.held || x.held_forward > y.held_forward || x.cost > y.cost) return false;
    if ((x.top_need & ~y.top_need) != 0 || (x.import_need & ~y.import_need) != 0) return false;
    for (size_t t = 0; t < x.own.size(); ++t)
      if (x.own[t] > y.own[t]) return false;
    for (size_t i = 0; i < x.import_last.size(); ++i)
      if (x.import_last[i] > y.import_last[i]) return false;
    return (x.import_read_last & ~y.import_read_last) == 0;
  };
  std::vector<char> dropped(patterns_.size(), 0);
  for (size_t i = 0; i < patterns_.size(); ++i)
    for (size_t j = 0; j < patterns_.size() && !dropped[i]; ++j) {
      if (i == j || dropped[j]) continue;
      bool better = true;
      for (size_t r = 0; r < profiles[i].size(); ++r) better = better && no_worse(profiles[j][r], profiles[i][r]);
      dropped[i] = better;
    }
  std::vector<std::vector<char>> kept;
  for (size_t i = 0; i < patterns_.size(); ++i)
    if (!dropped[i]) kept.push_back(patterns_[i]);
  patterns_ = std::move(kept);
}

// Keeps the states no other beats: as good an objective, and no more held, in the forward pass
// too, for the same needs (a staircase per need). Past `most` states, held bytes are rounded up to
// a grid, coarser until they fit: only choices closer than the grid are lost. (The grid costs
// little precision on long chains and bounds the work to layers x states.) The grid only coarsens
// during one solve: the quantum that last fitted is where the next prune starts.
class StatePruner {
 public:
  StatePruner(size_t most, int64_t first_quantum) : most_(most), first_quantum_(first_quantum) {}

  size_t most() const { return most_; }

  void prune(std::vector<ChainState>& list) {
    const bool many = list.size() > 4 * most_;
    if (many && quantum_ == 1) quantum_ = first_quantum_;
    for (bool coarse = many || quantum_ > 1;; coarse = true) {
      if (coarse)
        for (ChainState& s : list) {
          s.held = (s.held + quantum_ - 1) / quantum_ * quantum_;
          s.held_forward = (s.held_forward + quantum_ - 1) / quantum_ * quantum_;
        }
      keep_undominated(list);
      if (list.size() <= most_) return;
      if (quantum_ == 1) quantum_ = first_quantum_;
      else quantum_ *= 2;
    }
  }

 private:
  void keep_undominated(std::vector<ChainState>& list) {
    std::sort(list.begin(), list.end(), [](const ChainState& x, const ChainState& y) {
      if (x.key != y.key) return x.key < y.key;
      if (x.cost != y.cost) return x.cost < y.cost;
      if (x.peak != y.peak) return x.peak < y.peak;
      return x.held != y.held ? x.held < y.held : x.held_forward < y.held_forward;
    });
    // Per need, (held, least held_forward) by held ascending, held_forward descending.
    for (auto& stair : stairs_) stair.second.clear();
    kept_.clear();
    for (const ChainState& s : list) {
      auto where = std::find_if(stairs_.begin(), stairs_.end(), [&](const auto& x) { return x.first == s.need; });
      if (where == stairs_.end()) where = stairs_.insert(stairs_.end(), {s.need, {}});
      std::vector<std::pair<int64_t, int64_t>>& stair = where->second;
      auto it = std::upper_bound(stair.begin(), stair.end(), std::make_pair(s.held, INT64_MAX));
      if (it != stair.begin() && std::prev(it)->second <= s.held_forward) continue;
      kept_.push_back(s);
      it = stair.insert(it, {s.held, s.held_forward});
      auto last = std::next(it);
      while (last != stair.end() && last->second >= s.held_forward) ++last;
      stair.erase(std::next(it), last);
    }
    list.swap(kept_);
  }

  size_t most_;
  int64_t first_quantum_;
  int64_t quantum_ = 1;
  std::vector<std::pair<uint32_t, std::vector<std::pair<int64_t, int64_t>>>> stairs_;
  std::vector<ChainState> kept_;
};

std::vector<ChainSolver::Step> ChainSolver::steps_of(size_t a, size_t b, const std::vector<uint32_t>& needs) {
  std::vector<Step> steps;
  for (size_t q = 0; q < patterns_.size(); ++q) {
    const auto [p, shift] = profile(a, b, q);
    Step st{p, {}, {}};
    for (uint32_t need : needs) {
      st.peak.push_back(run_peak(*p, a, need, false, shift));
      st.added.push_back(imports_held(*p, a, need, false));
    }
    steps.push_back(std::move(st));
  }
  return steps;
}

std::vector<char> ChainSolver::no_better(const std::vector<Step>& steps, size_t needs) {
  std::vector<char> skip(steps.size(), 0);
  for (size_t q = 0; q < steps.size(); ++q)
    for (size_t o = 0; o < steps.size() && !skip[q]; ++o) {
      if (o == q || skip[o]) continue;
      const RunProfile& x = *steps[o].p;
      const RunProfile& y = *steps[q].p;
      bool no_worse = x.cost <= y.cost && (x.top_need & ~y.top_need) == 0 && x.held <= y.held && x.held_forward <= y.held_forward;
      for (size_t k = 0; k < needs && no_worse; ++k)
        no_worse = steps[o].peak[k] <= steps[q].peak[k] && steps[o].added[k] <= steps[q].added[k];
      const bool equal = no_worse && x.cost == y.cost && x.top_need == y.top_need && x.held == y.held &&
                         x.held_forward == y.held_forward && steps[o].peak == steps[q].peak && steps[o].added == steps[q].added;
      skip[q] = no_worse && (!equal || o < q);
    }
  return skip;
}

bool ChainSolver::extend(size_t a, size_t r, const std::vector<uint32_t>& needs, std::optional<int64_t> budget,
                         std::vector<std::vector<ChainState>>& states) {
  const size_t b = a + r - 1;
  // Per pattern and need below: the run's peak and what it adds to held; a pattern no better
  // than another for every need is not tried.
  const std::vector<Step> steps = steps_of(a, b, needs);
  const std::vector<char> skip = no_better(steps, needs.size());
  bool any = false;
  for (size_t q = 0; q < steps.size(); ++q) {
    if (skip[q]) continue;
    const RunProfile& p = *steps[q].p;
    for (size_t s = 0; s < states[a].size(); ++s) {
      const ChainState& from = states[a][s];
      const size_t k = static_cast<size_t>(std::find(needs.begin(), needs.end(), from.need) - needs.begin());
      const int64_t peak = from.held + steps[q].peak[k];
      if (budget && peak > *budget) continue;
      any = true;
      ChainState next;
      next.held = from.held + p.held + steps[q].added[k];
      next.held_forward = from.held_forward + p.held_forward + steps[q].added[k];
      next.cost = from.cost + p.cost;
      next.peak = std::max(from.peak, peak);
      next.need = static_cast<uint32_t>(p.top_need);
      next.prev = static_cast<int32_t>(s);
      next.run = static_cast<uint16_t>(r);
      next.pattern = static_cast<uint16_t>(q);
      next.key = budget ? next.cost : static_cast<double>(next.peak);
      states[b + 1].push_back(next);
    }
  }
  return any;
}

// The epilogue's moments come first, with every run's kept values held; then the forward pass.
int ChainSolver::best_final(const std::vector<ChainState>& finals, std::optional<int64_t> budget, ChainState& best_state) const {
  auto objective = [&](const ChainState& s) { return budget ? s.cost : static_cast<double>(s.peak); };
  const RunProfile e = simulate_epilogue();
  const int64_t fixed = std::max(model_.base(kForwardStage), model_.base(kPrologueStage)) + frag_;
  int best = -1;
  for (size_t s = 0; s < finals.size(); ++s) {
    ChainState st = finals[s];
    const int64_t held_e = e.held_forward + imports_held(e, n_ + 1, st.need, true);
    const int64_t peak = std::max({st.peak, e.own.empty() ? 0 : st.held + run_peak(e, n_ + 1, st.need, true),
                                   fixed + st.held_forward + held_e});
    if (budget && peak > *budget) continue;
    st.peak = peak;
    if (best < 0 || std::make_tuple(objective(st), st.cost, st.peak) < std::make_tuple(objective(best_state), best_state.cost, best_state.peak))
      best = static_cast<int>(s), best_state = st;
  }
  return best;
}

// The answer: the runs, back from the last.
ChainAnswer ChainSolver::answer_of(const std::vector<std::vector<ChainState>>& states, size_t best,
                                   const ChainState& best_state) const {
  ChainAnswer answer;
  answer.cost = best_state.cost;
  answer.peak = best_state.peak;
  std::vector<char> saved_of(c_.size(), 1);
  size_t b = n_;
  ChainState s = states[n_ + 1][best];
  while (b >= 1) {
    const size_t a = b - s.run + 1;
    const std::vector<char>& pattern = patterns_[s.pattern];
    const std::vector<int>& top = top_exports(b);
    for (size_t l = a; l <= b; ++l)
      for (size_t i = 0; i < k_; ++i) {
        const bool export_here = std::find(chain_.exports.begin(), chain_.exports.end(), static_cast<int>(i)) != chain_.exports.end();
        const bool top_here = std::find(top.begin(), top.end(), static_cast<int>(i)) != top.end();
        char v = pattern[i];
        if (l == b && top_here) v = 1;
        else if (l < b && export_here) v = 0;
        saved_of[static_cast<size_t>(chain_.layers[l - 1][i])] = v;
      }
    ++answer.runs;
    const int prev = s.prev;
    b = a - 1;
    if (b >= 1) s = states[a][static_cast<size_t>(prev)];
  }
  answer.saved.assign(saved_of.begin(), saved_of.end());
  return answer;
}

std::optional<ChainAnswer> ChainSolver::solve(std::optional<int64_t> budget) {
  // The prelude's moments come last; it is held throughout.
  int64_t prelude_peak = 0;
  for (int t = chain_.prelude_block.first; t <= chain_.prelude_block.second; ++t)
    prelude_peak = std::max(prelude_peak, model_.base(stage_of_moment(t)) + prelude_bytes_ + frag_);
  if (budget && prelude_peak > *budget) return std::nullopt;
  std::vector<std::vector<ChainState>> states(n_ + 2);
  ChainState start{prelude_bytes_, prelude_bytes_, 0.0, prelude_peak, 0, -1, 0, 0, 0.0};
  start.key = budget ? start.cost : static_cast<double>(start.peak);
  states[1].push_back(start);
  StatePruner pruner(std::clamp<size_t>(65536 / n_, 64, 1024),
                     std::max<int64_t>(1, (budget ? *budget : model_.base(kForwardStage) + prelude_bytes_) / 8192));
  for (size_t a = 1; a <= n_; ++a) {
    if (std::chrono::steady_clock::now() > options_.deadline) return std::nullopt;
    pruner.prune(states[a]);
    std::vector<uint32_t> needs;  // of the states here
    for (const ChainState& st : states[a])
      if (std::find(needs.begin(), needs.end(), st.need) == needs.end()) needs.push_back(st.need);
    int idle = 0;  // run lengths in a row that no state could take
    for (size_t r = 1; r <= longest_ && a + r - 1 <= n_ && idle < 2; ++r) {
      idle = extend(a, r, needs, budget, states) ? 0 : idle + 1;
      const size_t b = a + r - 1;
      if (states[b + 1].size() > 8 * pruner.most() && b + 1 <= n_) pruner.prune(states[b + 1]);
    }
  }
  pruner.prune(states[n_ + 1]);
  ChainState best_state;
  const int best = best_final(states[n_ + 1], budget, best_state);
  if (best < 0) return std::nullopt;
  return answer_of(states, static_cast<size_t>(best), best_state);
}

}  // namespace

std::optional<Chain> find_chain(const std::vector<Candidate>& candidates, const Segment& segment) {
  const std::vector<int>& m = segment.members;
  const size_t count = m.size();
  if (count < 3 || segment.last_moment < 0) return std::nullopt;
  for (int i : m)
    if (candidates[static_cast<size_t>(i)].stack_bytes > 0) return std::nullopt;
  std::vector<size_t> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = std::hash<std::string>{}(local_key(candidates[static_cast<size_t>(m[i])]));
  // The period whose repetition covers the most members.
  size_t best_k = 0, best_start = 0, best_len = 0;
  for (size_t k = 1; k <= std::min<size_t>(count / 3, 512); ++k) {
    size_t run = 0;
    for (size_t i = 0; i + k < count; ++i) {
      run = h[i] == h[i + k] ? run + 1 : 0;
      if (run > 0 && run + k > best_len) best_k = k, best_start = i + 1 - run, best_len = run + k;
    }
  }
  if (best_k == 0 || best_len / best_k < 3) return std::nullopt;
  // The phase at which a layer reads only itself and the layer before; the fewest exports.
  std::optional<Chain> best;
  for (size_t p = 0; p < best_k; ++p) {
    const size_t first = best_start + p;
    const size_t n = (best_start + best_len - first) / best_k;
    if (n < 3) continue;
    std::optional<Chain> chain = Layout(candidates, segment, first, best_k, n).check();
    if (chain && (!best || chain->exports.size() < best->exports.size())) best = std::move(chain);
  }
  return best;
}

std::optional<ChainAnswer> solve_chain(const std::vector<Candidate>& candidates, const MemoryModel& model,
                                       const Segment& segment, const Chain& chain, const ChainOptions& options,
                                       std::optional<int64_t> budget) {
  std::optional<ChainAnswer> answer = ChainSolver(candidates, model, chain, options).solve(budget);
  if (!answer) return answer;
  // Per member of the segment, in its order.
  std::vector<char> saved;
  for (int m : segment.members) saved.push_back(answer->saved[static_cast<size_t>(m)]);
  answer->saved = std::move(saved);
  return answer;
}

}  // namespace rematkit::solver
