#include "fusion_steps.hpp"

#include <algorithm>
#include <utility>

#include "fusion_pass.hpp"

namespace rematkit {
namespace fusion {

PassView::PassView(const Linearization& lin, const std::vector<int>& pass_eqns, Pass pass,
                   const std::vector<ValueId>& readout)
    : graph(lin.graph), eqns(pass_eqns) {
  std::map<ValueId, int> definitions;
  for (size_t p = 0; p < eqns.size(); ++p) {
    const FlatEquation& e = eqn_at(p);
    for (ValueId v : e.inputs) readers[v].push_back(p);
    for (ValueId v : e.outputs) {
      if (++definitions[v] > 1) unfusable.insert(v);
      defined_at[v] = p;
    }
  }
  for (ValueId v : readout)
    if (v != kNoValue) escapes.insert(v);
  if (pass == Pass::kForward)
    for (const Residual& r : lin.residuals) escapes.insert(r.value);
}

}  // namespace fusion

PassFusion fuse_pass(const Linearization& lin, const std::vector<int>& eqns, Pass pass,
                     const std::vector<ValueId>& readout, PreparedKernels& kernels, bool fuse,
                     const std::set<int>& held_apart) {
  using fusion::kOnItsOwn;
  const fusion::PassView view(lin, eqns, pass, readout);
  PassFusion fusion;
  std::vector<int> at(eqns.size(), kOnItsOwn);  // per position: the fused step it is part of, or kOnItsOwn
  std::vector<size_t> runs_at;                   // per fused step: the position of its last part, where it runs
  constexpr int kHeldApart = -2;  // neither a seed nor a part: a chain stops before it
  for (size_t p = 0; p < eqns.size(); ++p)
    if (held_apart.count(eqns[p])) at[p] = kHeldApart;
  if (fuse && kernels.backends().fuses()) {
    for (size_t p = 0; p < eqns.size(); ++p) {
      if (at[p] != kOnItsOwn) continue;
      const FlatEquation& seed = view.eqn_at(p);
      if (!fusion::product(seed) && !fusion::elementwise(seed) && seed.prim != Prim::kScatterAdd) continue;
      auto fuse = [&](std::vector<size_t> parts, size_t fewest = 2) {
        for (; parts.size() >= fewest; parts.pop_back()) {  // dropping the last part keeps the rest valid
          FusedStep step;
          const Params params = fusion::encode(view, parts, step);
          if (!fusion::bind_to_backend(view, parts, params, step, kernels)) continue;
          for (size_t q : parts) at[q] = static_cast<int>(fusion.steps.size());
          fusion.steps.push_back(std::move(step));
          runs_at.push_back(parts.back());
          return true;
        }
        return false;
      };
      if (std::vector<size_t> permuted = fusion::find_product_transpose(view, p, at);
          !permuted.empty() && fuse(permuted, permuted.size()))
        continue;
      if (seed.prim == Prim::kScatterAdd) {
        if (std::vector<size_t> sum = fusion::find_scatter_sum(view, p, at); !sum.empty()) fuse(sum, sum.size());
        continue;
      }
      // A tree is taken whole where a backend runs it (oneDNN's chains are of post-ops, so it runs
      // none); else the chain, cut as below.
      std::vector<size_t> parts = fusion::find_chain(view, p, at, fusion::Growth::kChain);
      if (std::vector<size_t> tree = fusion::find_chain(view, p, at, fusion::Growth::kTree);
          tree.size() >= 2 && tree != parts && fuse(tree, tree.size()))
        continue;
      // A backend may decline the spreads and generators a fusion pulled in (rows too short for it,
      // an iota or random bits it does not compute): then the chain fuses without the generators,
      // then without either, reading their buffers.
      auto drop = [&](std::initializer_list<Prim> prims) {
        return std::erase_if(parts, [&](size_t q) {
                 return q != p && std::find(prims.begin(), prims.end(), view.eqn_at(q).prim) != prims.end();
               }) > 0;
      };
      if (!fuse(parts) && (!drop({Prim::kIota, Prim::kRandomBits}) || !fuse(parts)) && drop({Prim::kBroadcastInDim}))
        fuse(parts);
    }
  }
  // The pass in order: equations on their own where they are, each fused step where its last
  // part was.
  std::vector<std::pair<size_t, int>> items;
  for (size_t p = 0; p < eqns.size(); ++p)
    if (at[p] == kOnItsOwn || at[p] == kHeldApart) items.push_back({p, eqns[p]});
  for (size_t i = 0; i < fusion.steps.size(); ++i) items.push_back({runs_at[i], -1 - static_cast<int>(i)});
  std::sort(items.begin(), items.end());
  for (const auto& item : items) fusion.order.push_back(item.second);
  return fusion;
}

}  // namespace rematkit
