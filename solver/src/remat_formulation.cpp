#include "remat_formulation.hpp"

#include <algorithm>
#include <map>

namespace rematkit::solver {
namespace {

// The program is solved in MiB and in units of the costliest equation, so that its coefficients
// stay near 1: CBC's tolerances are absolute, and bytes and FLOPs run to 1e9.
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

std::vector<char> kept_anywhere(const Answer& a) {
  std::vector<char> k(a.saved.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = a.saved[i] || a.offloaded[i];
  return k;
}

Cut cut_of(const std::vector<Candidate>& candidates, const Answer& a) {
  const Effects fx = effects_of(candidates, kept_anywhere(a));
  Cut cut;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (fx.needed[i]) cut.emplace_back(i, a.saved[i] != 0);
  return cut;
}

RematFormulation::RematFormulation(const std::vector<Candidate>& candidates, const MemoryModel& model,
                                   FormulationOptions options)
    : candidates_(candidates), model_(model), options_(std::move(options)) {
  for (double c : options_.cost) cost_scale_ = std::max(cost_scale_, c);
  if (options_.members.empty())
    for (size_t i = 0; i < candidates_.size(); ++i) options_.members.push_back(static_cast<int>(i));
  first_moment_ = model_.stages() - stage_of_moment(0);
  for (int i : options_.members) {
    const Candidate& c = candidates_[static_cast<size_t>(i)];
    if (c.earliest < 0) continue;
    first_moment_ = std::min(first_moment_, c.earliest);
    last_moment_ = std::max({last_moment_, c.latest, c.stack_until});
  }
  if (options_.bound_forward) first_moment_ = 0, last_moment_ = model_.stages() - stage_of_moment(0) - 1;
}

int RematFormulation::computed_by(size_t i, int moment) const {
  const Candidate& c = candidates_[i];
  if (c.earliest < 0 || moment < c.earliest) return -1;
  return c_[i][static_cast<size_t>(std::min(moment, c.latest) - c.earliest)];
}

// Per member: saved (s), offloaded (o), needed (n), recomputed (r), kept (k), on the host (h).
void RematFormulation::add_decisions(IntegerProgram& ip, std::optional<int64_t> limit) {
  const bool offload = options_.offload;
  for (int member_index : options_.members) {
    const size_t i = static_cast<size_t>(member_index);
    // A scan body's residual is kept stacked by the scan, where offloading does not reach.
    const bool may_offload = offload && candidates_[i].level == 0;
    s_[i] = ip.add_binary(0.0);
    o_[i] = may_offload ? ip.add_binary(0.0) : -1;
    n_[i] = ip.add_binary(0.0);
    r_[i] = ip.add_binary(limit ? options_.cost[i] / cost_scale_ : 0.0);
    k_[i] = ip.add_continuous(0.0, 1.0, 0.0);
    const double host_cost = options_.offload_cost_per_byte * static_cast<double>(candidates_[i].bytes) / cost_scale_;
    h_[i] = may_offload ? ip.add_continuous(0.0, 1.0, limit ? host_cost : 0.0) : -1;
  }
}

// How the decisions of each member agree, and what reading a value needs.
void RematFormulation::add_rules(IntegerProgram& ip) {
  for (int member_index : options_.members) {
    const size_t i = static_cast<size_t>(member_index);
    const Candidate& cand = candidates_[i];
    const bool may_offload = o_[i] >= 0;
    if (cand.read_by_backward) ip.add_row({{n_[i], 1.0}}, 1.0, 1.0);
    // A needed value is kept, kept on the host, or recomputed: k + h + r = n. Kept only if saved
    // (k <= s), on the host only if offloaded (h <= o), recomputed only if neither (r + s + o <= 1).
    // The equality keeps the relaxation tight: a fractional answer trades bytes for cost linearly.
    std::vector<std::pair<int, double>> split{{k_[i], 1.0}, {r_[i], 1.0}, {n_[i], -1.0}};
    if (may_offload) split.push_back({h_[i], 1.0});
    ip.add_row(split, 0.0, 0.0);
    ip.add_row({{k_[i], 1.0}, {s_[i], -1.0}}, -kUnbounded, 0.0);
    std::vector<std::pair<int, double>> rec{{r_[i], 1.0}, {s_[i], 1.0}};
    if (may_offload) rec.push_back({o_[i], 1.0});
    ip.add_row(rec, -kUnbounded, 1.0);
    if (may_offload) ip.add_row({{h_[i], 1.0}, {o_[i], -1.0}}, -kUnbounded, 0.0);
    for (int p : cand.reads) ip.add_row({{n_[static_cast<size_t>(p)], 1.0}, {r_[i], -1.0}}, 0.0, kUnbounded);
    if (cand.earliest >= 0)
      for (int t = cand.earliest; t <= cand.latest; ++t) c_[i].push_back(ip.add_binary(0.0));
  }
  if (options_.one_answer_per_signature) {
    std::map<std::string, size_t> first;
    for (int member_index : options_.members) {
      const size_t i = static_cast<size_t>(member_index);
      const auto [it, fresh] = first.try_emplace(candidates_[i].signature, i);
      if (fresh) continue;
      ip.add_row({{s_[i], 1.0}, {s_[it->second], -1.0}}, 0.0, 0.0);
      if (o_[i] >= 0 && o_[it->second] >= 0) ip.add_row({{o_[i], 1.0}, {o_[it->second], -1.0}}, 0.0, 0.0);
    }
  }
}

// Candidate i at moment t: whether it has been recomputed by then (c) and follows the planner's
// placement, and whether it is still to be read (the column returned: its bytes are alive then).
int RematFormulation::add_moment(IntegerProgram& ip, size_t i, int t, int last_read) const {
  const Candidate& cand = candidates_[i];
  const int c = computed_by(i, t);
  ip.add_row({{c, 1.0}, {r_[i], -1.0}}, -kUnbounded, 0.0);  // only if recomputed
  if (t > cand.earliest) ip.add_row({{c, 1.0}, {computed_by(i, t - 1), -1.0}}, 0.0, kUnbounded);
  const bool read_by_now = !cand.read_at.empty() && cand.read_at.front() <= t;
  if (std::binary_search(cand.read_at.begin(), cand.read_at.end(), t)) ip.add_row({{c, 1.0}, {r_[i], -1.0}}, 0.0, kUnbounded);
  // Not before its first reader: the reverse pass, or a recomputed reader.
  if (!read_by_now) {
    std::vector<std::pair<int, double>> lazy{{c, 1.0}};
    for (int k : cand.readers)
      if (const int reader = computed_by(static_cast<size_t>(k), t); reader >= 0) lazy.push_back({reader, -1.0});
    ip.add_row(lazy, -kUnbounded, 0.0);
  }
  // A recomputed reader needs it there when it runs: computed by then, unless kept.
  for (int k : cand.readers) {
    const int reader = computed_by(static_cast<size_t>(k), t);
    if (reader < 0) continue;
    std::vector<std::pair<int, double>> row{{c, 1.0}, {reader, -1.0}, {k_[i], 1.0}};
    if (h_[i] >= 0) row.push_back({h_[i], 1.0});
    ip.add_row(row, 0.0, kUnbounded);
  }
  // Still to be read at t: by the reverse pass (certainly, up to its last read), or by a reader
  // recomputed at t or later.
  const int alive = ip.add_continuous(0.0, 1.0, 0.0);
  if (t <= last_read) {
    ip.add_row({{alive, 1.0}, {c, -1.0}, {k_[i], -1.0}}, 0.0, kUnbounded);
  } else {
    const int pending = ip.add_continuous(0.0, 1.0, 0.0);
    for (int k : cand.readers) {
      const Candidate& reader = candidates_[static_cast<size_t>(k)];
      if (reader.earliest < 0 || t > reader.latest) continue;
      // A reader recomputed later than t still needs it; one recomputed at t reads it in the
      // burst of recomputations run for t, after which it dies (bytes_at, remat_model.cpp).
      std::vector<std::pair<int, double>> row{{pending, 1.0}, {r_[static_cast<size_t>(k)], -1.0}};
      if (const int by_now = computed_by(static_cast<size_t>(k), t); by_now >= 0) row.push_back({by_now, 1.0});
      ip.add_row(row, 0.0, kUnbounded);
    }
    ip.add_row({{alive, 1.0}, {c, -1.0}, {k_[i], -1.0}, {pending, -1.0}}, -1.0, kUnbounded);
  }
  return alive;
}

// When each recomputation runs (c: recomputed by moment t), and so which candidates are alive at
// each moment (a), as the planner places them: where first read, by the reverse pass or by a
// recomputed reader (partial_eval.cpp, recompute_what), and alive until last read. A kept scan
// body value's stack is held until its scan's last moment. Per moment: the bytes alive.
std::vector<std::vector<std::pair<int, double>>> RematFormulation::add_timeline(IntegerProgram& ip) const {
  const int moments = model_.stages() - stage_of_moment(0);
  std::vector<std::vector<std::pair<int, double>>> at(static_cast<size_t>(moments));  // per moment: bytes alive
  for (int member_index : options_.members) {
    const size_t i = static_cast<size_t>(member_index);
    const Candidate& cand = candidates_[i];
    const double mib = static_cast<double>(cand.bytes) / kMiB;
    const double stack_mib = static_cast<double>(cand.stack_bytes) / kMiB;
    if (cand.earliest < 0) continue;
    for (int t = first_moment_; t < cand.earliest; ++t) at[static_cast<size_t>(t)].push_back({k_[i], mib + stack_mib});  // kept, not yet read
    if (stack_mib > 0)
      for (int t = cand.earliest; t <= std::min(cand.stack_until, last_moment_); ++t) at[static_cast<size_t>(t)].push_back({k_[i], stack_mib});
    const int last_read = cand.read_at.empty() ? cand.earliest - 1 : cand.read_at.back();
    for (int t = cand.earliest; t <= cand.latest; ++t)
      at[static_cast<size_t>(t)].push_back({add_moment(ip, i, t, last_read), mib});
  }
  return at;
}

// Every stage within the limit, or, with none, under a peak to minimize. The candidates not
// decided here add what their fixed answers hold.
void RematFormulation::add_bounds(IntegerProgram& ip, std::optional<int64_t> limit,
                                  const std::vector<std::vector<std::pair<int, double>>>& at) const {
  const size_t m = candidates_.size();
  std::vector<std::pair<int, double>> kept_bytes;
  for (int member_index : options_.members) {
    const size_t i = static_cast<size_t>(member_index);
    const double mib = static_cast<double>(candidates_[i].bytes) / kMiB;
    const double stack_mib = static_cast<double>(candidates_[i].stack_bytes) / kMiB;
    kept_bytes.push_back({k_[i], mib + stack_mib});
  }
  std::vector<char> others = options_.fixed.empty() ? std::vector<char>(m, 1) : options_.fixed;
  for (int i : options_.members) others[static_cast<size_t>(i)] = 0;
  const bool any_other = std::any_of(others.begin(), others.end(), [](char c) { return c != 0; }) &&
                         options_.members.size() < m;
  Effects fixed_fx;
  if (any_other) {
    std::vector<char> saved = options_.fixed.empty() ? std::vector<char>(m, 1) : options_.fixed;
    fixed_fx = effects_of(candidates_, saved);
    for (int i : options_.members) fixed_fx.kept[static_cast<size_t>(i)] = fixed_fx.recomputed[static_cast<size_t>(i)] = 0;
  }
  const int peak = limit ? -1 : ip.add_continuous(0.0, kUnbounded, 1.0);
  auto bound = [&](std::vector<std::pair<int, double>> terms, int stage) {
    double fixed = static_cast<double>(model_.base(stage) + model_.fragmentation()) / kMiB;
    if (!options_.extra.empty()) fixed += static_cast<double>(options_.extra[static_cast<size_t>(stage)]) / kMiB;
    if (any_other) fixed += static_cast<double>(model_.modelled(stage, fixed_fx)) / kMiB;
    if (limit) {
      ip.add_row(terms, -kUnbounded, static_cast<double>(*limit) / kMiB - fixed);
    } else {
      terms.push_back({peak, -1.0});
      ip.add_row(terms, -kUnbounded, -fixed);
    }
  };
  if (options_.bound_forward) {
    bound(kept_bytes, kForwardStage);
    bound(kept_bytes, kPrologueStage);
  }
  for (int t = first_moment_; t <= last_moment_; ++t) bound(at[static_cast<size_t>(t)], stage_of_moment(t));
}

// Answers the planner rejected: at least one needed equation decides otherwise.
void RematFormulation::add_cuts(IntegerProgram& ip, const std::vector<Cut>& cuts) const {
  for (const Cut& cut : cuts) {
    std::vector<std::pair<int, double>> terms;
    double ones = 0;
    for (const auto& [i, was_saved] : cut) {
      if (!member(i)) continue;
      terms.push_back({s_[i], was_saved ? -1.0 : 1.0});
      ones += was_saved ? 1 : 0;
    }
    if (!terms.empty()) ip.add_row(terms, 1.0 - ones, kUnbounded);
  }
}

IntegerProgram RematFormulation::build(std::optional<int64_t> limit, const std::vector<Cut>& cuts) {
  IntegerProgram ip;
  const size_t m = candidates_.size();
  s_.assign(m, -1), o_.assign(m, -1), n_.assign(m, -1), r_.assign(m, -1), k_.assign(m, -1), h_.assign(m, -1);
  c_.assign(m, {});
  add_decisions(ip, limit);
  add_rules(ip);
  add_bounds(ip, limit, add_timeline(ip));
  add_cuts(ip, cuts);
  return ip;
}

Answer RematFormulation::answer_of(const IntegerProgram::Result& result) const {
  const size_t m = candidates_.size();
  Answer a{options_.fixed.empty() ? std::vector<char>(m, 1) : options_.fixed, std::vector<char>(m, 0)};
  for (size_t i = 0; i < m; ++i) {
    if (!member(i)) continue;
    a.saved[i] = result.x[static_cast<size_t>(s_[i])] > 0.5;
    if (o_[i] >= 0) a.offloaded[i] = result.x[static_cast<size_t>(o_[i])] > 0.5;
  }
  return a;
}

std::vector<std::pair<int, double>> RematFormulation::start_of(const Answer& a) const {
  const Effects fx = effects_of(candidates_, kept_anywhere(a));
  std::vector<std::pair<int, double>> start;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (!member(i)) continue;
    if (a.saved[i]) start.push_back({s_[i], 1.0});
    if (a.offloaded[i] && o_[i] >= 0) start.push_back({o_[i], 1.0});
    if (fx.needed[i]) start.push_back({n_[i], 1.0});
    if (!fx.recomputed[i]) continue;
    start.push_back({r_[i], 1.0});
    for (int t = fx.computed_at[i]; t <= candidates_[i].latest; ++t) start.push_back({computed_by(i, t), 1.0});
  }
  return start;
}

}  // namespace rematkit::solver
