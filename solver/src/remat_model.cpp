#include "remat_model.hpp"

#include <algorithm>
#include <climits>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit::solver {
namespace {

// What a JAX policy sees of an equation, as a key: the primitive (a custom_jvp_call's body answers
// as the call), its operands' avals as aval.str_short() prints them, and checkpoint_name's name.
// The budget-policies plugin builds the same key (signature_of there).
std::string signature_of(const FlatGraph& g, const FlatEquation& eqn) {
  std::string key(prim_name(eqn.prim));
  if (eqn.custom_call >= 0) key = prim_name(g.custom_calls[static_cast<size_t>(eqn.custom_call)].prim);
  for (ValueId v : eqn.inputs) key += " " + g.values[static_cast<size_t>(v)].type.str();
  if (eqn.custom_call < 0 && eqn.prim == Prim::kName) {
    const ParamValue* name = eqn.params.find("name");
    if (name) key += " name=" + name->text;
  }
  return key;
}

// Builds the candidates level by level, and the moments in the order the reverse pass runs them.
class CandidateFinder {
 public:
  CandidateFinder(std::vector<Candidate>& out, Timeline& timeline, double comm_flops_per_byte)
      : out_(out), t_(timeline), comm_flops_per_byte_(comm_flops_per_byte) {}

  void program(const Linearization& lin) {
    t_.levels.push_back(Level{&lin, -1, lin.graph.site_prefix, 1});
    t_.level_of_prefix[lin.graph.site_prefix] = 0;
    own_candidates(0);
    scan_candidates(0);
    walk_backward(0);
  }

 private:
  // The level of a scan's body, made the first time it is asked for.
  int body_level(int parent, const ScanLinearization& scan) {
    const auto it = level_of_scan_.find(&scan);
    if (it != level_of_scan_.end()) return it->second;
    const int level = static_cast<int>(t_.levels.size());
    t_.levels.push_back(Level{&scan.body, parent, scan.body.graph.site_prefix,
                              t_.levels[static_cast<size_t>(parent)].iterations * std::max<int64_t>(scan.length, 1)});
    t_.level_of_prefix[scan.body.graph.site_prefix] = level;
    level_of_scan_[&scan] = level;
    return level;
  }

  int scope_of(int level, int region) {
    const auto [it, fresh] = scopes_.try_emplace({level, region}, static_cast<int>(scopes_.size()) + 1);
    return it->second;
  }

  Candidate make(int level, int e, const std::vector<std::string>& sites) {
    const FlatGraph& g = t_.levels[static_cast<size_t>(level)].lin->graph;
    const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
    Candidate c;
    c.level = level;
    c.eqn = e;
    c.site = sites[static_cast<size_t>(e)];
    c.primitive = std::string(eqn.custom_call >= 0 ? prim_name(g.custom_calls[static_cast<size_t>(eqn.custom_call)].prim)
                                                   : prim_name(eqn.prim));
    c.signature = signature_of(g, eqn);
    c.where = eqn.where;
    std::vector<Type> types;
    for (ValueId v : eqn.outputs) {
      types.push_back(device_type(g.values[static_cast<size_t>(v)]));
      c.bytes += aligned_bytes(types.back().bytes());
    }
    c.type = types_str(types);
    c.flops = static_cast<double>(equation_flops(g, eqn));
    if (comm_flops_per_byte_ > 0 && g.mesh)  // what recomputing a collective sends again
      c.flops += comm_flops_per_byte_ * static_cast<double>(collective_bytes(g, eqn, *g.mesh));
    return c;
  }

  // Adds `c` with its reads among the candidates of its scope made so far.
  int add(Candidate c) {
    const FlatGraph& g = t_.levels[static_cast<size_t>(c.level)].lin->graph;
    for (ValueId v : g.eqns[static_cast<size_t>(c.eqn)].inputs) {
      const Value& value = g.values[static_cast<size_t>(v)];
      if (value.origin != ValueOrigin::kEquation) continue;
      const auto it = index_.find({c.level, value.producer});
      if (it == index_.end() || out_[static_cast<size_t>(it->second)].scope != c.scope) continue;
      if (std::find(c.reads.begin(), c.reads.end(), it->second) == c.reads.end()) c.reads.push_back(it->second);
    }
    const int i = static_cast<int>(out_.size());
    for (int p : c.reads) out_[static_cast<size_t>(p)].readers.push_back(i);
    index_[{c.level, c.eqn}] = i;
    out_.push_back(std::move(c));
    return i;
  }

  // The equations a checkpoint of the level's graph decides, stacked when the level is a body.
  void own_candidates(int level) {
    const Level& l = t_.levels[static_cast<size_t>(level)];
    const FlatGraph& g = l.lin->graph;
    const std::vector<std::string> sites = equation_sites(g);
    std::vector<int> mine;
    for (size_t e = 0; e < g.eqns.size(); ++e) {
      const FlatEquation& eqn = g.eqns[e];
      if (sites[e].empty() || eqn.region == 0) continue;
      Candidate c = make(level, static_cast<int>(e), sites);
      c.scope = scope_of(level, eqn.region);
      c.flops *= static_cast<double>(l.iterations);
      if (level > 0) c.stack_bytes = c.bytes * l.iterations;  // kept: a row of the stacked residual per iteration
      mine.push_back(add(std::move(c)));
    }
    // The live tangent equations (those an output's tangent depends on) and the known values they
    // read: what partial evaluation hands each checkpoint's backward pass, kept or computed again.
    std::vector<char> wanted(g.values.size(), 0);
    for (ValueId t : l.lin->output_tangents)
      if (t != kNoValue) wanted[static_cast<size_t>(t)] = 1;
    for (size_t e = g.eqns.size(); e-- > 0;) {
      const FlatEquation& eqn = g.eqns[e];
      if (eqn.role != EqnRole::kTangent) continue;
      if (std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return wanted[static_cast<size_t>(v)]; }))
        continue;
      for (ValueId v : eqn.inputs) {
        const Value& value = g.values[static_cast<size_t>(v)];
        if (value.is_tangent) {
          wanted[static_cast<size_t>(v)] = 1;
        } else if (value.origin == ValueOrigin::kEquation) {
          const auto it = index_.find({level, value.producer});
          if (it != index_.end() && out_[static_cast<size_t>(it->second)].scope == scope_of(level, eqn.region))
            out_[static_cast<size_t>(it->second)].read_by_backward = true;
        }
      }
    }
  }

  // A checkpoint around a scan decides its body's equations (scan_jvp.cpp, place_residuals): a kept
  // one is stacked by the forward scan, a recomputed residual stacked again by the recompute scan,
  // and both are read where the transposed scan runs. An equation only recomputing needs is one
  // iteration's bytes there.
  void scan_candidates(int level) {
    const FlatGraph& g = t_.levels[static_cast<size_t>(level)].lin->graph;
    for (const FlatEquation& eqn : g.eqns) {
      if (!eqn.scan || eqn.part != ControlFlowPart::kForward || eqn.region == 0) continue;
      const ScanLinearization& s = *eqn.scan;
      if (s.residuals.empty()) continue;  // no tangent reaches it
      const int body = body_level(level, s);
      const FlatGraph& bg = s.body.graph;
      const std::vector<std::string> sites = equation_sites(bg);
      std::vector<char> residual(bg.values.size(), 0), hoisted(bg.eqns.size(), 0);
      for (const Residual& r : s.body.residuals) residual[static_cast<size_t>(r.value)] = 1;
      for (int e : s.hoisted_eqns) hoisted[static_cast<size_t>(e)] = 1;
      const int scope = scope_of(body, -1 - eqn.region);  // the parent's checkpoint, not the body's
      std::vector<int>& mine = scan_scope_[eqn.scan.get()];
      const int64_t stacked = t_.levels[static_cast<size_t>(body)].iterations;
      for (int e : s.body.forward) {
        const FlatEquation& be = bg.eqns[static_cast<size_t>(e)];
        if (sites[static_cast<size_t>(e)].empty() || be.region != 0 || hoisted[static_cast<size_t>(e)]) continue;
        Candidate c = make(body, e, sites);
        c.scope = scope;
        c.flops *= static_cast<double>(stacked);
        const bool is_residual =
            std::any_of(be.outputs.begin(), be.outputs.end(), [&](ValueId v) { return residual[static_cast<size_t>(v)] != 0; });
        c.read_by_backward = is_residual;
        if (is_residual) c.bytes *= stacked;
        else c.stack_bytes = c.bytes * stacked - c.bytes;
        mine.push_back(add(std::move(c)));
      }
    }
  }

  void moment(int level, int e, const std::vector<EquationKey>& keys) {
    const int now = static_cast<int>(t_.moments.size());
    t_.moments.push_back(Moment{level, e});
    t_.moment_of[{level, keys[static_cast<size_t>(e)]}] = now;
  }

  void read_now(int c) {
    Candidate& read = out_[static_cast<size_t>(c)];
    const int now = static_cast<int>(t_.moments.size());
    if (read.read_at.empty() || read.read_at.back() != now) read.read_at.push_back(now);
    read.read_by_backward = true;
  }

  // The level's backward equations that read its candidates, in the order they run; a scan body
  // with checkpoints of its own has its moments where its transposed scan runs.
  void walk_backward(int level) {
    const Linearization& lin = *t_.levels[static_cast<size_t>(level)].lin;
    const FlatGraph& g = lin.graph;
    const std::vector<EquationKey> keys = equation_keys(g);
    for (int e : lin.backward) {
      const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
      if (eqn.role != EqnRole::kBackward) continue;
      std::vector<int> reads;
      for (ValueId v : eqn.inputs) {
        const Value& value = g.values[static_cast<size_t>(v)];
        if (value.origin != ValueOrigin::kEquation) continue;
        const auto it = index_.find({level, value.producer});
        if (it != index_.end() && out_[static_cast<size_t>(it->second)].scope == scope_of(level, eqn.region))
          reads.push_back(it->second);
      }
      const bool transposed_scan = eqn.scan && eqn.part == ControlFlowPart::kTranspose;
      if (transposed_scan)
        if (const auto it = scan_scope_.find(eqn.scan.get()); it != scan_scope_.end())
          for (int c : it->second)
            if (out_[static_cast<size_t>(c)].read_by_backward) reads.push_back(c);
      if (!reads.empty()) {
        for (int c : reads) read_now(c);
        moment(level, e, keys);
      }
      if (transposed_scan) {
        if (const auto it = scan_scope_.find(eqn.scan.get()); it != scan_scope_.end())
          for (int c : it->second) out_[static_cast<size_t>(c)].stack_until = static_cast<int>(t_.moments.size()) - 1;
        if (eqn.scan->body.graph.regions.size() > 1) body_backward(level, *eqn.scan);
      }
    }
  }

  void body_backward(int parent, const ScanLinearization& scan) {
    const int level = body_level(parent, scan);
    const size_t first = out_.size();
    own_candidates(level);
    scan_candidates(level);
    walk_backward(level);
    const int last = static_cast<int>(t_.moments.size()) - 1;
    for (size_t i = first; i < out_.size(); ++i)
      if (out_[i].level == level && out_[i].stack_bytes > 0 && out_[i].stack_until < 0) out_[i].stack_until = last;
  }

  std::vector<Candidate>& out_;
  Timeline& t_;
  double comm_flops_per_byte_;
  std::map<std::pair<int, int>, int> index_;   // (level, graph equation) -> candidate
  std::map<std::pair<int, int>, int> scopes_;  // (level, region) -> scope
  std::map<const ScanLinearization*, int> level_of_scan_;
  std::map<const ScanLinearization*, std::vector<int>> scan_scope_;  // a checkpoint around the scan decides these
};

}  // namespace

std::vector<EquationKey> equation_keys(const FlatGraph& g) {
  std::vector<EquationKey> keys(g.eqns.size());
  std::map<std::tuple<int, int, int, int, int, int>, int> seen;
  for (size_t e = 0; e < g.eqns.size(); ++e) {
    const FlatEquation& eqn = g.eqns[e];
    const auto what = std::make_tuple(eqn.where.line, eqn.where.column, static_cast<int>(eqn.prim),
                                      static_cast<int>(eqn.origin), static_cast<int>(eqn.part), static_cast<int>(eqn.role));
    const int n = seen[what]++;
    keys[e] = EquationKey{eqn.where.line, eqn.where.column, static_cast<int>(eqn.prim) * 8 + static_cast<int>(eqn.role),
                          static_cast<int>(eqn.origin), static_cast<int>(eqn.part), n};
  }
  return keys;
}

std::vector<Candidate> find_candidates(const Linearization& lin, Timeline& timeline, double comm_flops_per_byte) {
  timeline = Timeline{};
  std::vector<Candidate> out;
  CandidateFinder(out, timeline, comm_flops_per_byte).program(lin);

  // Readers come after what they read: one pass from the end bounds each candidate's moments.
  std::vector<int> computed_by(out.size(), -1);  // the latest moment it could be recomputed at
  for (size_t i = out.size(); i-- > 0;) {
    Candidate& c = out[i];
    int earliest = c.read_at.empty() ? INT_MAX : c.read_at.front();
    int latest = c.read_at.empty() ? -1 : c.read_at.back();
    int latest_reader = -1;
    for (int k : c.readers) {
      const Candidate& reader = out[static_cast<size_t>(k)];
      if (reader.earliest < 0) continue;
      earliest = std::min(earliest, reader.earliest);
      latest_reader = std::max(latest_reader, computed_by[static_cast<size_t>(k)]);
    }
    latest = std::max(latest, latest_reader);
    if (latest < 0) continue;  // nothing could ever need it
    c.earliest = earliest;
    c.latest = latest;
    c.stack_until = std::max(c.stack_until, c.stack_bytes > 0 ? latest : -1);
    computed_by[i] = c.read_at.empty() ? latest_reader : c.read_at.front();
  }
  return out;
}

bool Effects::alive_at(size_t i, int moment) const {
  if (kept[i]) return moment <= last_use[i];
  return recomputed[i] && computed_at[i] <= moment && moment <= last_use[i];
}

int64_t bytes_at(const Candidate& c, const Effects& fx, size_t i, int moment) {
  // A value whose last use is a recomputation run for this moment, not the moment's own equation,
  // dies while the recomputations run: the planner frees it after its last reader, so it is not
  // counted with what the moment holds (the stage's base holds what such a burst needs at once).
  const bool dies_in_the_burst = moment == fx.last_use[i] &&
                                 !std::binary_search(c.read_at.begin(), c.read_at.end(), moment);
  int64_t bytes = fx.alive_at(i, moment) && !dies_in_the_burst ? c.bytes : 0;
  if (fx.kept[i] && moment <= c.stack_until) bytes += c.stack_bytes;
  return bytes;
}

void effects_within(const std::vector<Candidate>& candidates, const std::vector<char>& saved, const std::vector<int>& members,
                    Effects& fx) {
  for (int i : members) {
    fx.needed[static_cast<size_t>(i)] = candidates[static_cast<size_t>(i)].read_by_backward;
    fx.kept[static_cast<size_t>(i)] = fx.recomputed[static_cast<size_t>(i)] = 0;
    fx.computed_at[static_cast<size_t>(i)] = fx.last_use[static_cast<size_t>(i)] = -1;
  }
  // Readers come after what they read, so one pass from the end closes over recomputed inputs and
  // finds each recomputation's moment: the first at which it, or a recomputed reader, is read.
  for (size_t m = members.size(); m-- > 0;) {
    const size_t i = static_cast<size_t>(members[m]);
    const Candidate& c = candidates[i];
    int first = c.read_at.empty() ? INT_MAX : c.read_at.front();
    int last = c.read_at.empty() ? -1 : c.read_at.back();
    for (int k : c.readers) {
      // A recomputation no moment asks for runs at its checkpoint's end; the stage bases hold it.
      if (!fx.recomputed[static_cast<size_t>(k)] || fx.computed_at[static_cast<size_t>(k)] == INT_MAX) continue;
      first = std::min(first, fx.computed_at[static_cast<size_t>(k)]);
      last = std::max(last, fx.computed_at[static_cast<size_t>(k)]);
    }
    if (!fx.needed[i]) continue;
    fx.last_use[i] = last;
    if (saved[i]) {
      fx.kept[i] = 1;
      continue;
    }
    fx.recomputed[i] = 1;
    fx.computed_at[i] = first;  // INT_MAX when no moment reads it
    for (int p : c.reads) fx.needed[static_cast<size_t>(p)] = 1;
  }
}

Effects effects_of(const std::vector<Candidate>& candidates, const std::vector<char>& saved) {
  const size_t n = candidates.size();
  Effects fx{std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<int>(n, -1),
             std::vector<int>(n, -1)};
  std::vector<int> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<int>(i);
  effects_within(candidates, saved, all, fx);
  return fx;
}

MemoryModel::MemoryModel(const std::vector<Candidate>& candidates, const Timeline& timeline)
    : candidates_(candidates), timeline_(timeline), base_(timeline.moments.size() + 2, 0) {}

std::vector<std::pair<int, int64_t>> MemoryModel::stage_live(const Verdict& verdict) const {
  struct Entry {
    int moment;
    bool backward, recompute;
    int64_t live;
  };
  std::vector<Entry> entries;
  // A profile's steps at `level`; a transposed scan whose body has moments stands for its body's
  // steps, each live with what is live outside the loop step and the body's fragmentation.
  auto expand = [&](auto&& self, const StepProfile& p, int level, int64_t outside, bool all_backward) -> void {
    const std::vector<EquationKey> keys = equation_keys(*p.graph);
    for (size_t t = 0; t < p.live.size(); ++t) {
      const int e = p.equation[t];
      const bool backward = all_backward || p.backward[t];
      int moment = -1;
      if (e >= 0)
        if (const auto it = timeline_.moment_of.find({level, keys[static_cast<size_t>(e)]}); it != timeline_.moment_of.end())
          moment = it->second;
      const bool recompute = e >= 0 && p.graph->eqns[static_cast<size_t>(e)].role != EqnRole::kBackward;
      const StepProfile* body = p.body[t].get();
      int body_level = -1;
      if (body && backward && e >= 0 && p.graph->eqns[static_cast<size_t>(e)].part == ControlFlowPart::kTranspose)
        if (const auto it = timeline_.level_of_prefix.find(body->graph->site_prefix); it != timeline_.level_of_prefix.end())
          body_level = it->second;
      const bool has_moments = body_level >= 0 && std::any_of(timeline_.moments.begin(), timeline_.moments.end(),
                                                              [&](const Moment& m) { return m.level == body_level; });
      if (!has_moments || moment >= 0) entries.push_back(Entry{moment, backward, recompute, outside + p.live[t]});
      if (has_moments)
        self(self, *body, body_level, outside + p.live[t] - p.workspace[t] + (body->arena - body->live_peak), true);
    }
  };
  expand(expand, verdict.steps, 0, 0, false);

  // Walking back, a recomputation belongs to the moment it was run for (the next one); any other
  // step to the moment before it, or to the prologue.
  const size_t n = entries.size();
  std::vector<int> stage(n, kForwardStage);
  int next = -1;  // the stage of the next moment, walking back
  for (size_t t = n; t-- > 0;) {
    if (!entries[t].backward) continue;
    if (entries[t].moment >= 0) stage[t] = next = stage_of_moment(entries[t].moment);
    else if (entries[t].recompute && next >= 0) stage[t] = next;
    else stage[t] = -1;  // placed by the forward walk below
  }
  int current = kPrologueStage;
  std::vector<std::pair<int, int64_t>> out;
  for (size_t t = 0; t < n; ++t) {
    if (entries[t].backward) {
      if (stage[t] >= 0) current = std::max(current, stage[t]);
      else stage[t] = current;
    }
    out.emplace_back(stage[t], entries[t].live);
  }
  return out;
}

int64_t MemoryModel::modelled(int stage, const Effects& fx) const {
  int64_t bytes = 0;
  const bool forward = stage < stage_of_moment(0);
  for (size_t i = 0; i < candidates_.size(); ++i)
    bytes += forward ? kept_bytes(candidates_[i], fx, i) : bytes_at(candidates_[i], fx, i, stage - stage_of_moment(0));
  return bytes;
}

void MemoryModel::calibrate(const Verdict& verdict, const std::vector<char>& saved) {
  const Effects fx = effects_of(candidates_, saved);
  std::vector<int64_t> live(base_.size(), -1);
  for (const auto& [stage, bytes] : stage_live(verdict))
    live[static_cast<size_t>(stage)] = std::max(live[static_cast<size_t>(stage)], bytes);
  for (size_t s = 0; s < base_.size(); ++s)
    if (live[s] >= 0) base_[s] = std::max(base_[s], live[s] - modelled(static_cast<int>(s), fx));
  fragmentation_ = std::max(fragmentation_, verdict.arena_peak - verdict.live_peak);
}

int64_t MemoryModel::peak(const std::vector<char>& saved) const {
  const Effects fx = effects_of(candidates_, saved);
  int64_t peak = 0;
  for (int s = 0; s < stages(); ++s) peak = std::max(peak, base_[static_cast<size_t>(s)] + modelled(s, fx));
  return peak + fragmentation_;
}

int64_t MemoryModel::excess(const std::vector<char>& saved, int64_t limit) const {
  const Effects fx = effects_of(candidates_, saved);
  int64_t over = 0;
  for (int s = 0; s < stages(); ++s)
    over += std::max<int64_t>(0, base_[static_cast<size_t>(s)] + modelled(s, fx) + fragmentation_ - limit);
  return over;
}

}  // namespace rematkit::solver
