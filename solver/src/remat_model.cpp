#include "remat_model.hpp"

#include <algorithm>
#include <climits>

#include "rematkit/arena_layout.hpp"
#include "rematkit/flops.hpp"

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

}  // namespace

std::vector<Candidate> find_candidates(const Linearization& lin, Timeline& timeline) {
  const FlatGraph& g = lin.graph;
  const std::vector<std::string> sites = equation_sites(g);
  std::vector<int> index(g.eqns.size(), -1);
  std::vector<Candidate> out;
  for (size_t e = 0; e < g.eqns.size(); ++e) {
    const FlatEquation& eqn = g.eqns[e];
    if (sites[e].empty() || eqn.region == 0) continue;
    Candidate c;
    c.eqn = static_cast<int>(e);
    c.site = sites[e];
    c.primitive = std::string(eqn.custom_call >= 0 ? prim_name(g.custom_calls[static_cast<size_t>(eqn.custom_call)].prim)
                                                   : prim_name(eqn.prim));
    c.signature = signature_of(g, eqn);
    c.where = eqn.where;
    c.region = eqn.region;
    std::vector<Type> types;
    for (ValueId v : eqn.outputs) {
      types.push_back(g.values[static_cast<size_t>(v)].type);
      c.bytes += aligned_bytes(types.back().bytes());
    }
    c.type = types_str(types);
    c.flops = static_cast<double>(equation_flops(g, eqn));
    for (ValueId v : eqn.inputs) {
      const Value& value = g.values[static_cast<size_t>(v)];
      if (value.origin == ValueOrigin::kEquation && index[static_cast<size_t>(value.producer)] >= 0 &&
          g.eqns[static_cast<size_t>(value.producer)].region == eqn.region) {
        const int p = index[static_cast<size_t>(value.producer)];
        if (std::find(c.reads.begin(), c.reads.end(), p) == c.reads.end()) c.reads.push_back(p);
      }
    }
    index[e] = static_cast<int>(out.size());
    out.push_back(std::move(c));
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (int p : out[i].reads) out[static_cast<size_t>(p)].readers.push_back(static_cast<int>(i));

  // The live tangent equations (those an output's tangent depends on) and the known values they
  // read: what partial evaluation hands each checkpoint's backward pass, kept or computed again.
  std::vector<char> wanted(g.values.size(), 0);
  for (ValueId t : lin.output_tangents)
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
        const int c = index[static_cast<size_t>(value.producer)];
        if (c >= 0 && out[static_cast<size_t>(c)].region == eqn.region) out[static_cast<size_t>(c)].read_by_backward = true;
      }
    }
  }
  // When the backward pass reads them: its transposed equations that read a candidate of their own
  // checkpoint, in the order they run. (A value handed over but read by none, as the zeros of
  // relu's JVP, is kept from the forward pass to the backward pass's start.)
  timeline.moments.clear();
  for (int e : lin.backward) {
    const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
    if (eqn.role != EqnRole::kBackward) continue;
    bool moment = false;
    for (ValueId v : eqn.inputs) {
      const Value& value = g.values[static_cast<size_t>(v)];
      if (value.origin != ValueOrigin::kEquation) continue;
      const int c = index[static_cast<size_t>(value.producer)];
      if (c < 0 || out[static_cast<size_t>(c)].region != eqn.region) continue;
      Candidate& read = out[static_cast<size_t>(c)];
      const int now = static_cast<int>(timeline.moments.size());
      if (read.read_at.empty() || read.read_at.back() != now) read.read_at.push_back(now);
      read.read_by_backward = true;
      moment = true;
    }
    if (moment) timeline.moments.push_back(e);
  }

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
    computed_by[i] = c.read_at.empty() ? latest_reader : c.read_at.front();
  }
  return out;
}

bool Effects::alive_at(size_t i, int moment) const {
  if (kept[i]) return moment <= last_use[i];
  return recomputed[i] && computed_at[i] <= moment && moment <= last_use[i];
}

Effects effects_of(const std::vector<Candidate>& candidates, const std::vector<char>& saved) {
  const size_t n = candidates.size();
  Effects fx{std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<int>(n, -1),
             std::vector<int>(n, -1)};
  for (size_t i = 0; i < n; ++i) fx.needed[i] = candidates[i].read_by_backward;
  // Readers come after what they read, so one pass from the end closes over recomputed inputs and
  // finds each recomputation's moment: the first at which it, or a recomputed reader, is read.
  for (size_t i = n; i-- > 0;) {
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
  return fx;
}

MemoryModel::MemoryModel(const std::vector<Candidate>& candidates, const Timeline& timeline)
    : candidates_(candidates), base_(timeline.moments.size() + 2, 0) {
  int most = -1;
  for (int e : timeline.moments) most = std::max(most, e);
  moment_of_eqn_.assign(static_cast<size_t>(most + 1), -1);
  for (size_t m = 0; m < timeline.moments.size(); ++m) moment_of_eqn_[static_cast<size_t>(timeline.moments[m])] = static_cast<int>(m);
}

std::vector<int> MemoryModel::stages_of(const Verdict& verdict) const {
  const FlatGraph& g = verdict.lin->graph;
  const size_t n = verdict.step_live.size();
  std::vector<int> stage(n, kForwardStage);
  // Walking back, a recomputation belongs to the moment it was run for (the next one); any other
  // step to the moment before it, or to the prologue.
  int next = -1;  // the stage of the next moment, walking back
  for (size_t t = n; t-- > 0;) {
    if (!verdict.step_backward[t]) continue;
    const int e = verdict.step_equation[t];
    const int moment = e >= 0 && static_cast<size_t>(e) < moment_of_eqn_.size() ? moment_of_eqn_[static_cast<size_t>(e)] : -1;
    if (moment >= 0) {
      stage[t] = next = stage_of_moment(moment);
    } else if (e >= 0 && g.eqns[static_cast<size_t>(e)].role != EqnRole::kBackward && next >= 0) {
      stage[t] = next;
    } else {
      stage[t] = -1;  // placed by the forward walk below
    }
  }
  int current = kPrologueStage;
  for (size_t t = 0; t < n; ++t) {
    if (!verdict.step_backward[t]) continue;
    if (stage[t] >= 0) current = std::max(current, stage[t]);
    else stage[t] = current;
  }
  return stage;
}

int64_t MemoryModel::modelled(int stage, const Effects& fx) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const bool alive = stage < stage_of_moment(0) ? fx.kept[i] != 0 : fx.alive_at(i, stage - stage_of_moment(0));
    if (alive) bytes += candidates_[i].bytes;
  }
  return bytes;
}

void MemoryModel::calibrate(const Verdict& verdict, const std::vector<char>& saved) {
  const Effects fx = effects_of(candidates_, saved);
  const std::vector<int> stage = stages_of(verdict);
  std::vector<int64_t> live(base_.size(), -1);
  for (size_t t = 0; t < stage.size(); ++t)
    live[static_cast<size_t>(stage[t])] = std::max(live[static_cast<size_t>(stage[t])], verdict.step_live[t]);
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

}  // namespace rematkit::solver
