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

std::vector<Candidate> find_candidates(const Linearization& lin) {
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
          g.eqns[static_cast<size_t>(value.producer)].region == eqn.region)
        c.reads.push_back(index[static_cast<size_t>(value.producer)]);
    }
    index[e] = static_cast<int>(out.size());
    out.push_back(std::move(c));
  }
  // The live tangent equations (those an output's tangent depends on) and the known values they
  // read: what each checkpoint's backward pass needs, kept or computed again.
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
  return out;
}

Effects effects_of(const std::vector<Candidate>& candidates, const std::vector<char>& saved) {
  const size_t n = candidates.size();
  Effects fx{std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<char>(n, 0)};
  for (size_t i = 0; i < n; ++i) fx.needed[i] = candidates[i].read_by_backward;
  // Readers come after what they read, so one pass from the end closes over recomputed inputs.
  for (size_t i = n; i-- > 0;) {
    if (!fx.needed[i]) continue;
    if (saved[i]) {
      fx.kept[i] = 1;
      continue;
    }
    fx.recomputed[i] = 1;
    for (int p : candidates[i].reads) fx.needed[static_cast<size_t>(p)] = 1;
  }
  return fx;
}

int64_t SegmentModel::modelled(const Effects& fx, const std::vector<Candidate>& candidates) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < candidates.size(); ++i)
    if ((fx.kept[i] && counts_kept[i]) || (fx.recomputed[i] && counts_recomputed[i])) bytes += candidates[i].bytes;
  return bytes;
}

MemoryModel::MemoryModel(const std::vector<Candidate>& candidates, const Verdict& reference) : candidates_(candidates) {
  for (const auto& [key, first] : reference.segment_first_step) {
    SegmentModel s;
    s.key = key;
    s.counts_kept.assign(candidates.size(), 0);
    s.counts_recomputed.assign(candidates.size(), 0);
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto last = reference.region_last_step.find(candidates[i].region);
      const int region_last = last == reference.region_last_step.end() ? INT_MAX : last->second;
      // A residual lives from the forward pass until its checkpoint's backward pass is done; a
      // recomputed value only during its checkpoint's backward pass.
      s.counts_kept[i] = key == kForwardSegment || region_last >= first;
      s.counts_recomputed[i] = key.first == candidates[i].region;
    }
    segments_.push_back(std::move(s));
  }
}

void MemoryModel::calibrate(const Verdict& verdict, const std::vector<char>& saved) {
  const Effects fx = effects_of(candidates_, saved);
  for (SegmentModel& s : segments_) {
    auto it = verdict.segment_live.find(s.key);
    if (it == verdict.segment_live.end()) it = verdict.segment_live.find(SegmentKey{s.key.first, 0});
    if (it == verdict.segment_live.end()) continue;
    s.base = std::max(s.base, it->second - s.modelled(fx, candidates_));
  }
  fragmentation_ = std::max(fragmentation_, verdict.arena_peak - verdict.live_peak);
}

int64_t MemoryModel::peak(const std::vector<char>& saved) const {
  const Effects fx = effects_of(candidates_, saved);
  int64_t peak = 0;
  for (const SegmentModel& s : segments_) peak = std::max(peak, s.base + s.modelled(fx, candidates_));
  return peak + fragmentation_;
}

}  // namespace rematkit::solver
