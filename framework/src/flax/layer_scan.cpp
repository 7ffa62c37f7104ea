#include "rematkit/flax/layer_scan.hpp"

#include <memory>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/parser.hpp"

namespace rematkit {

Atom checkpoint_over(ProgramBuilder& b, Atom x, const std::vector<Atom>& params, const std::string& policy,
                     bool prevent_cse, const LayerFn& fn) {
  ProgramBuilder inner;
  const Atom ix = inner.argument("x", b.type_of(x));
  std::vector<Atom> iw;
  for (const Atom& a : params) iw.push_back(inner.argument("w" + std::to_string(iw.size()), b.type_of(a)));
  const Atom out = fn(inner, ix, iw);
  std::vector<Atom> operands{x};
  operands.insert(operands.end(), params.begin(), params.end());
  Params p;
  p.set("policy", parse_param_value(policy, "policy"));
  p.set("prevent_cse", ParamValue::of_bool(prevent_cse));
  return b.call(Prim::kCheckpoint, inner.finish({out}), operands, std::move(p)).at(0);
}

Atom scan_layers(ProgramBuilder& b, Atom x, const std::vector<Atom>& stacked, const std::vector<int64_t>& lengths,
                 const std::string& policy, bool checkpoint_each_layer, const LayerFn& layer, std::optional<Atom> rng) {
  if (lengths.empty()) fail("scan_layers needs at least one length");
  const std::vector<int64_t> rest(lengths.begin() + 1, lengths.end());
  ProgramBuilder body;
  const Atom bx = body.argument("x", b.type_of(x));
  std::vector<Atom> bw;
  for (const Atom& a : stacked) {
    Type row = b.type_of(a);
    if (row.rank() < 1 || row.shape[0] != lengths[0])
      fail("scan_layers: a stacked param is " + row.str() + ", whose leading dim is not the length " +
           std::to_string(lengths[0]));
    row.shape.erase(row.shape.begin());
    bw.push_back(body.argument("w" + std::to_string(bw.size()), row));
  }
  std::vector<Atom> operands{x};
  operands.insert(operands.end(), stacked.begin(), stacked.end());
  if (rng) {
    Params split;
    split.set("shape", ParamValue::of_ints({lengths[0]}));
    operands.push_back(b.emit1(Prim::kRandomSplit, {*rng}, std::move(split)));
    bw.push_back(body.argument("key", b.type_of(*rng)));
  }
  Atom out;
  if (!rest.empty()) {
    // The row's key goes into the checkpoint as its last operand and is split again inside.
    out = checkpoint_over(body, bx, bw, policy, false, [&](ProgramBuilder& inner, Atom ix, const std::vector<Atom>& iw) {
      if (!rng) return scan_layers(inner, ix, iw, rest, policy, false, layer);
      return scan_layers(inner, ix, std::vector<Atom>(iw.begin(), iw.end() - 1), rest, policy, false, layer, iw.back());
    });
  } else if (checkpoint_each_layer) {
    out = checkpoint_over(body, bx, bw, policy, true, layer);
  } else {
    out = layer(body, bx, bw);
  }
  if (body.type_of(out) != b.type_of(x))
    fail("scan_layers: a layer must give back what it takes (the carry " + b.type_of(x).str() + "), not " +
         body.type_of(out).str());
  return b.emit1(Prim::kScan, operands, scan_params_of(std::make_shared<const Program>(body.finish({out})), lengths[0], 0, 1));
}

Atom scan_with_remat(ProgramBuilder& b, Atom x, const std::vector<Atom>& stacked, const std::vector<int64_t>& lengths,
                     const std::string& policy, RematPlacement remat, const LayerFn& layer, std::optional<Atom> rng) {
  const bool one_scan = lengths.size() == 1;
  const bool per_layer = one_scan && remat == RematPlacement::kPerLayer;
  // The stacked params, then the key (the last operand), which each scan splits.
  const LayerFn scanned = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) {
    if (!rng) return scan_layers(into, h, p, lengths, policy, per_layer, layer);
    return scan_layers(into, h, std::vector<Atom>(p.begin(), p.end() - 1), lengths, policy, per_layer, layer, p.back());
  };
  std::vector<Atom> operands = stacked;
  if (rng) operands.push_back(*rng);
  if (one_scan && remat == RematPlacement::kWhole) return checkpoint_over(b, x, operands, policy, true, scanned);
  return scanned(b, x, operands);
}

}  // namespace rematkit
