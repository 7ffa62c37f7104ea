// Finding what to fuse: a chain (or a tree) of equations of one output shape from a seed (and
// reductions of its rows), each kept only where the fused step may still run where its last part was.
#include <algorithm>
#include <utility>

#include "fusion_pass.hpp"
#include "rematkit/plugin/fusion_view.hpp"  // row_spread_trailing_dims: which spreads a backend fills

namespace rematkit::fusion {
namespace {

// broadcast_in_dim to `shape` of one element, or of one per row (plugin::row_spread_trailing_dims).
bool spreads_over(const PassView& pass, const FlatEquation& e, const std::vector<int64_t>& shape) {
  const FlatGraph& g = pass.graph;
  if (e.prim != Prim::kBroadcastInDim || e.outputs.size() != 1 || e.inputs.size() != 1 ||
      g.values[e.outputs[0]].type.shape != shape)
    return false;
  return g.values[e.inputs[0]].type.num_elements() == 1 ||
         plugin::row_spread_trailing_dims(g.values[e.inputs[0]].type.shape,
                                          param_ints(e.params, "broadcast_dimensions", e.where), shape) > 0;
}

// An iota of `shape` (a one-hot's class numbers, a mask's positions), or one key's random_bits of it
// (dropout's): a part computes it in each segment rather than reading a whole buffer written before.
bool generates(const PassView& pass, const FlatEquation& e, const std::vector<int64_t>& shape) {
  if (e.scan || e.cond || e.outputs.size() != 1 || pass.graph.values[e.outputs[0]].type.shape != shape) return false;
  if (e.prim == Prim::kIota) return e.inputs.empty();
  return e.prim == Prim::kRandomBits && e.inputs.size() == 1 && pass.graph.values[e.inputs[0]].type.shape.empty();
}

// Whether `e` reads a value of the fusion, or an operand of the fusion's shape that a part reads
// too (a relu and its mask both read the pre-activation: one pass over it instead of two).
bool reads_any(const PassView& pass, const FlatEquation& e, const std::vector<size_t>& parts,
               const std::vector<int64_t>& shape) {
  auto reads = [&](ValueId v) { return std::find(e.inputs.begin(), e.inputs.end(), v) != e.inputs.end(); };
  for (size_t q : parts) {
    for (ValueId v : pass.eqn_at(q).outputs)
      if (reads(v)) return true;
    for (ValueId v : pass.eqn_at(q).inputs)
      if (reads(v) && pass.graph.values[v].type.shape == shape) return true;
  }
  return false;
}

// The fused step runs where its last part was: every equation outside it that reads one of its
// values must come after that, and no value it defines may be defined twice in the pass. Nor may a
// part define a value that an earlier part read: that read was of the value defined before the
// pass (a recomputation defines again what the pass read as saved).
bool valid(const PassView& pass, const std::vector<size_t>& parts) {
  const size_t last = parts.back();
  for (size_t q : parts)
    for (ValueId v : pass.eqn_at(q).outputs) {
      if (pass.unfusable.count(v)) return false;
      if (auto it = pass.readers.find(v); it != pass.readers.end())
        for (size_t r : it->second) {
          const bool part = std::find(parts.begin(), parts.end(), r) != parts.end();
          if ((r < last && !part) || (r < q && part)) return false;
        }
    }
  return true;
}

// A sum or max over the trailing axes of `shape`, of a value of that shape (a layer norm's sum of
// squares, a softmax's max and sum): a fused step's part whose rows are reduced as the segments
// pass, which no later part reads (its result leaves the step).
bool reduces_rows(const PassView& pass, const FlatEquation& e, const std::vector<int64_t>& shape) {
  if (e.scan || e.cond || e.outputs.size() != 1 || e.inputs.size() != 1) return false;
  if ((e.prim != Prim::kReduceSum && e.prim != Prim::kReduceMax) || pass.graph.values[e.inputs[0]].type.shape != shape)
    return false;
  std::vector<int64_t> axes = param_ints(e.params, "axes", e.where);
  std::sort(axes.begin(), axes.end());
  if (axes.empty()) return false;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<int64_t>(shape.size() - axes.size() + i)) return false;
  return true;
}

}  // namespace

bool elementwise(const FlatEquation& e) {
  if (e.scan || e.cond || e.outputs.size() != 1) return false;
  const PrimFamily family = prim_family(e.prim);
  return family == PrimFamily::kUnary || family == PrimFamily::kBinaryArithmetic || family == PrimFamily::kBitwise ||
         family == PrimFamily::kComparison || family == PrimFamily::kSelect;
}

bool product(const FlatEquation& e) { return e.prim == Prim::kDotGeneral && !e.scan && !e.cond && e.outputs.size() == 1; }

// Later elementwise equations of the seed's shape that read what the fusion reads or computes.
std::vector<size_t> find_chain(const PassView& pass, size_t first, const std::vector<int>& taken, Growth growth) {
  const FlatGraph& g = pass.graph;
  const std::vector<int64_t>& shape = g.values[pass.eqn_at(first).outputs[0]].type.shape;
  // A part's operands spread from a scalar (a relu's zeros) or from one value per row (a layer
  // norm's mean and scale, a softmax's max and sum), or an iota of the shape, come along, from
  // before the seed too (not ahead of a product, which leads its fusion): then they fill a segment
  // inside the kernel instead of a whole buffer before it.
  auto with_spreads = [&](std::vector<size_t> grown, const FlatEquation& e) {
    for (ValueId v : e.inputs)
      if (auto d = pass.defined_at.find(v);
          d != pass.defined_at.end() && d->second != first &&
          (d->second > first || !product(pass.eqn_at(first))) && taken[d->second] == kOnItsOwn &&
          (spreads_over(pass, pass.eqn_at(d->second), shape) || generates(pass, pass.eqn_at(d->second), shape)) &&
          std::find(grown.begin(), grown.end(), d->second) == grown.end())
        grown.push_back(d->second);
    std::sort(grown.begin(), grown.end());
    return grown;
  };
  // A part's other operands, computed since the seed by cotangent equations of the shape on their
  // own, come along with what those read of the same kind: a sum of two cotangents (a loss's exp
  // and one-hot terms) is then one pass, neither term written out and read back. Recomputations
  // stay where they are: the budget solver's memory model knows a recomputation burst as the
  // chains it makes (and one may define again a value the pass read before as saved, which
  // `valid` refuses in any fusion).
  // (A value is read after the equation defining it, so a producer comes before its reader.)
  auto with_producers = [&](std::vector<size_t> grown, size_t reader) {
    if (growth == Growth::kChain) return grown;
    std::vector<size_t> pending{reader};
    while (!pending.empty() && grown.size() < kMaxParts) {
      const size_t at = pending.back();
      pending.pop_back();
      for (ValueId v : pass.eqn_at(at).inputs) {
        auto d = pass.defined_at.find(v);
        if (d == pass.defined_at.end() || d->second <= first || d->second >= at || taken[d->second] != kOnItsOwn ||
            std::find(grown.begin(), grown.end(), d->second) != grown.end())
          continue;
        const FlatEquation& producer = pass.eqn_at(d->second);
        if (!elementwise(producer) || producer.role != EqnRole::kBackward ||
            g.values[producer.outputs[0]].type.shape != shape)
          continue;
        grown = with_spreads(std::move(grown), producer);
        grown.push_back(d->second);
        pending.push_back(d->second);
        if (grown.size() >= kMaxParts) break;
      }
    }
    std::sort(grown.begin(), grown.end());
    return grown;
  };
  std::vector<size_t> parts{first};
  if (std::vector<size_t> grown = with_spreads(parts, pass.eqn_at(first)); grown.size() > 1 && valid(pass, grown))
    parts = std::move(grown);
  for (size_t q = first + 1; q < pass.eqns.size() && q <= first + kLookahead && parts.size() < kMaxParts; ++q) {
    const FlatEquation& e = pass.eqn_at(q);
    if (taken[q] != kOnItsOwn) continue;
    if (!reduces_rows(pass, e, shape) && (!elementwise(e) || g.values[e.outputs[0]].type.shape != shape)) continue;
    if (!reads_any(pass, e, parts, shape)) continue;
    std::vector<size_t> grown = parts;
    grown.push_back(q);
    grown = with_spreads(with_producers(std::move(grown), q), e);
    if (valid(pass, grown)) parts = std::move(grown);
  }
  return parts;
}

// A product whose result only a transpose reads (attention's heads put back in [B, S, H, Dh]).
std::vector<size_t> find_product_transpose(const PassView& pass, size_t first, const std::vector<int>& taken) {
  const FlatEquation& e = pass.eqn_at(first);
  if (!product(e)) return {};
  const auto readers = pass.readers.find(e.outputs[0]);
  if (readers == pass.readers.end() || readers->second.size() != 1) return {};
  const size_t t = readers->second.front();
  const FlatEquation& transpose = pass.eqn_at(t);
  if (t <= first || t > first + kLookahead || taken[t] != kOnItsOwn || transpose.prim != Prim::kTranspose ||
      transpose.scan || transpose.cond || transpose.outputs.size() != 1)
    return {};
  std::vector<size_t> parts{first, t};
  return valid(pass, parts) ? parts : std::vector<size_t>{};
}

// A scatter-add into a scalar spread over its shape (a gather's transpose: an embedding's rows'
// cotangents into zeros) whose one reader adds it to another value of the shape (a tied
// embedding's cotangent from the head's product): the spread, the scatter and the sum.
std::vector<size_t> find_scatter_sum(const PassView& pass, size_t scatter, const std::vector<int>& taken) {
  const FlatGraph& g = pass.graph;
  const FlatEquation& e = pass.eqn_at(scatter);
  if (e.prim != Prim::kScatterAdd || e.scan || e.cond || e.outputs.size() != 1 || e.inputs.empty()) return {};
  const std::vector<int64_t>& shape = g.values[e.outputs[0]].type.shape;
  const auto spread = pass.defined_at.find(e.inputs[0]);
  const auto readers = pass.readers.find(e.outputs[0]);
  if (spread == pass.defined_at.end() || spread->second >= scatter || taken[spread->second] != kOnItsOwn ||
      readers == pass.readers.end() || readers->second.size() != 1)
    return {};
  const FlatEquation& s = pass.eqn_at(spread->second);
  if (s.prim != Prim::kBroadcastInDim || s.inputs.size() != 1 || g.values[s.inputs[0]].type.num_elements() != 1) return {};
  const size_t sum = readers->second.front();
  const FlatEquation& a = pass.eqn_at(sum);
  if (sum <= scatter || sum > scatter + kLookahead || taken[sum] != kOnItsOwn || a.scan || a.cond ||
      (a.prim != Prim::kAdd && a.prim != Prim::kAddAny) || a.inputs.size() != 2 || a.inputs[0] == a.inputs[1] ||
      g.values[a.inputs[0]].type != g.values[a.inputs[1]].type || g.values[a.outputs[0]].type.shape != shape)
    return {};
  std::vector<size_t> parts{spread->second, scatter, sum};
  return valid(pass, parts) ? parts : std::vector<size_t>{};
}

}  // namespace rematkit::fusion
