#include "rematkit/analysis/device_placement.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/byte_size.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace rematkit {
namespace {

using Tiles = std::vector<int64_t>;

// A printed sharded type's mesh axes per dim: f32[8@x,4] is {{x}, {}}, f32[8@(x,y)] {{x, y}};
// none for a named shape (f32[4;x:8]: a loop over x, not a split).
DimAxes sharded_type_axes(const std::string& printed) {
  DimAxes dims;
  const size_t open = printed.find('['), close = printed.find(']');
  if (open == std::string::npos || close == std::string::npos) return dims;
  const std::string inside = printed.substr(open + 1, close - open - 1);
  if (inside.find(';') != std::string::npos) return dims;
  size_t pos = 0;
  while (pos <= inside.size()) {
    size_t end = pos;
    for (int depth = 0; end < inside.size() && (depth > 0 || inside[end] != ','); ++end)
      depth += inside[end] == '(' ? 1 : inside[end] == ')' ? -1 : 0;
    const std::string dim = inside.substr(pos, end - pos);
    std::vector<std::string> axes;
    if (const size_t at = dim.find('@'); at != std::string::npos) {
      std::string names = dim.substr(at + 1);
      for (char& c : names)
        if (c == '(' || c == ')' || c == ' ') c = ',';
      for (size_t p = 0; p <= names.size();) {
        const size_t comma = std::min(names.find(',', p), names.size());
        if (comma > p) axes.push_back(names.substr(p, comma - p));
        p = comma + 1;
      }
    }
    dims.push_back(std::move(axes));
    pos = end + 1;
  }
  return dims;
}

Tiles type_tiles(const std::string& printed, const Mesh& mesh) {
  Tiles tiles;
  for (const std::vector<std::string>& axes : sharded_type_axes(printed)) tiles.push_back(axes_size(mesh, axes, {}));
  return tiles;
}

Tiles dim_sizes(const FlatEquation& eqn, int rank) {
  Tiles tiles = param_ints(eqn.params, "dim_sizes", eqn.where);
  tiles.resize(static_cast<size_t>(rank), 1);
  return tiles;
}

// A collective whose result has its operand's shape: outside a shard_map body (the transpose of
// its split) it works on blocks placed as its operand is.
bool keeps_shape(Prim prim) {
  return prim == Prim::kPsum || prim == Prim::kPmax || prim == Prim::kPmin || prim == Prim::kPbroadcast ||
         prim == Prim::kPvary;
}

bool is_axes_reduction(Prim prim) {
  return prim == Prim::kReduceSum || prim == Prim::kReduceMax || prim == Prim::kReduceMin || prim == Prim::kReduceProd ||
         prim == Prim::kArgMax || prim == Prim::kArgMin;
}

bool same_family(Prim prim) {
  switch (prim_family(prim)) {
    case PrimFamily::kUnary: case PrimFamily::kBinaryArithmetic: case PrimFamily::kComparison: case PrimFamily::kBitwise:
    case PrimFamily::kTernary: case PrimFamily::kSelect: case PrimFamily::kSharding: case PrimFamily::kComplexPart:
      return true;
    case PrimFamily::kContraction: case PrimFamily::kReduction: case PrimFamily::kLayout: case PrimFamily::kNormalization:
    case PrimFamily::kRandom: case PrimFamily::kCall: case PrimFamily::kControlFlow: case PrimFamily::kEffect:
    case PrimFamily::kHostCall: case PrimFamily::kFourier: case PrimFamily::kMappedCall: case PrimFamily::kCollective:
      return false;
  }
  return false;
}

class Placer {
 public:
  Placer(Linearization& lin, const Mesh& mesh) : g_(lin.graph), mesh_(mesh), tiles_(g_.values.size()), local_(g_.values.size(), false) {}

  // A loop body's arguments placed as the loop's operands are (set before run()).
  void seed_value(ValueId v, Tiles t) { set(v, std::move(t)); }
  const Tiles& tiles_of(ValueId v) const { return tiles_[v]; }

  PlacementSummary run() {
    seed();
    PlacementSummary s;
    // The program's own equations first, as GSPMD places the forward computation and then its
    // transpose; then the tangent and backward equations, whose values follow.
    for (const bool primal_only : {true, false}) {
      for (int round = 0; round < 8; ++round) {
        bool changed = false;
        for (const FlatEquation& eqn : g_.eqns)
          if (!primal_only || g_.is_known(eqn)) changed |= forward(eqn);
        for (auto it = g_.eqns.rbegin(); it != g_.eqns.rend(); ++it)
          if (!primal_only || g_.is_known(*it)) changed |= backward(*it);
        if (!changed) break;
      }
      // A scan's body, once its operands are placed: placed as they are, its stacked results after it.
      for (const FlatEquation& eqn : g_.eqns)
        if (eqn.scan) place_scan(eqn, s);
    }
    s.mesh = mesh_;
    for (size_t v = 0; v < g_.values.size(); ++v) {
      Value& value = g_.values[v];
      if (local_[v] || value.origin == ValueOrigin::kLiteral) continue;
      if (tiles_[v].empty()) {
        if (value.type.rank() == 0) continue;  // a scalar is the same size wherever it lives
        ++s.unplaced_values;
        s.unplaced_bytes += value.type.bytes();
        continue;
      }
      if (std::any_of(tiles_[v].begin(), tiles_[v].end(), [](int64_t t) { return t > 1; })) {
        value.tiles = tiles_[v];
        ++s.split_values;
      }
    }
    return s;
  }

 private:
  bool set(ValueId v, Tiles t) {
    if (v == kNoValue || local_[v] || !tiles_[v].empty() || t.size() != g_.values[v].type.shape.size()) return false;
    if (g_.values[v].origin == ValueOrigin::kLiteral) return false;
    tiles_[v] = std::move(t);
    return true;
  }

  // The body of a scan, placed once from its forward part's operands (consts and carries as they
  // are, xs without their leading dim); every part's stacked outputs then take a leading 1.
  void place_scan(const FlatEquation& eqn, PlacementSummary& s) {
    const ScanLinearization& scan = *eqn.scan;
    auto found = bodies_.find(&scan);
    if (found == bodies_.end()) {
      if (eqn.part != ControlFlowPart::kForward) return;
      // The linearization's bodies are its own until it is shared: an analysis marks them in place.
      Linearization& body = const_cast<Linearization&>(scan.body);
      auto nested = std::make_unique<Placer>(body, mesh_);
      const size_t n_args = scan.num_consts + scan.num_carry + scan.num_xs;
      for (size_t i = 0; i < n_args && i < eqn.inputs.size(); ++i) {
        Tiles t = at(eqn.inputs[i]);
        if (t.empty()) continue;
        if (i >= scan.num_consts + scan.num_carry) t.erase(t.begin());
        nested->seed_value(body.arguments[i], std::move(t));
      }
      const PlacementSummary inner = nested->run();
      s.split_values += inner.split_values;
      s.unplaced_values += inner.unplaced_values;
      s.unplaced_bytes += inner.unplaced_bytes;
      found = bodies_.emplace(&scan, std::move(nested)).first;
    }
    const Placer& body = *found->second;
    const Linearization& lin = scan.body;
    auto stacked = [&](ValueId v) {
      Tiles t = body.tiles_of(v);
      if (!t.empty()) t.insert(t.begin(), 1);
      return t;
    };
    std::vector<Tiles> outs;
    if (eqn.part == ControlFlowPart::kForward) {
      for (size_t k = 0; k < lin.outputs.size(); ++k)
        outs.push_back(k < scan.num_carry ? body.tiles_of(lin.outputs[k]) : stacked(lin.outputs[k]));
      for (ValueId v : scan.saved) outs.push_back(stacked(v));
    } else if (eqn.part == ControlFlowPart::kRecompute) {
      for (ValueId v : scan.recomputed) outs.push_back(stacked(v));
    } else if (eqn.part == ControlFlowPart::kTranspose) {
      for (size_t i = 0; i < scan.tangent_given.size(); ++i)
        if (scan.tangent_given[i])
          outs.push_back(i < scan.num_consts + scan.num_carry ? body.tiles_of(lin.arguments[i]) : stacked(lin.arguments[i]));
    }
    for (size_t k = 0; k < outs.size() && k < eqn.outputs.size(); ++k)
      if (!outs[k].empty()) set(eqn.outputs[k], outs[k]);
  }

  void seed() {
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (!g_.values[v].sharding.empty() && g_.values[v].sharding.find('@') != std::string::npos)
        tiles_[v] = type_tiles(g_.values[v].sharding, mesh_);
    for (const FlatEquation& eqn : g_.eqns) {
      const int rank = eqn.outputs.empty() ? 0 : g_.values[eqn.outputs[0]].type.rank();
    if (eqn.prim == Prim::kShardMapIn) {
      set(eqn.inputs[0], dim_sizes(eqn, g_.values[eqn.inputs[0]].type.rank()));
      local_[eqn.outputs[0]] = true;
    } else if (eqn.prim == Prim::kShardMapOut) {
      set(eqn.outputs[0], dim_sizes(eqn, rank));
    } else if (eqn.prim == Prim::kShardingConstraint || eqn.prim == Prim::kReshard) {
      const ParamValue* s = eqn.params.find(eqn.prim == Prim::kReshard ? "dst_sharding" : "sharding");
      if (!s) continue;
      if (const std::optional<Tiles> t = sharding_tiles(s->text, rank, &mesh_, eqn.where)) {
        set(eqn.outputs[0], *t);
        set(eqn.inputs[0], *t);
      }
    } else {  // a value computed from a device's block is one device's too
      bool local = false;
      for (ValueId v : eqn.inputs) local |= local_[v];
      if (local)
        for (ValueId v : eqn.outputs) local_[v] = true;
    }
    }
  }

  const Tiles& at(ValueId v) const { return tiles_[v]; }
  const Shape& shape(ValueId v) const { return g_.values[v].type.shape; }

  bool forward(const FlatEquation& eqn) {
    if (eqn.outputs.size() != 1 || eqn.scan || eqn.cond) return false;
    const ValueId out = eqn.outputs[0];
    if (!tiles_[out].empty() || local_[out]) return false;
    if (same_family(eqn.prim) || keeps_shape(eqn.prim)) {
      for (ValueId in : eqn.inputs)
        if (!at(in).empty() && shape(in) == shape(out)) return set(out, at(in));
      return false;
    }
    if (eqn.prim == Prim::kDotGeneral) {  // an operand no sharding reaches is whole (GSPMD: replicated)
      const Tiles& lhs_known = at(eqn.inputs[0]);
      const Tiles& rhs_known = at(eqn.inputs[1]);
      if (lhs_known.empty() && rhs_known.empty()) return false;
      const Tiles lhs = lhs_known.empty() ? Tiles(shape(eqn.inputs[0]).size(), 1) : lhs_known;
      const Tiles rhs = rhs_known.empty() ? Tiles(shape(eqn.inputs[1]).size(), 1) : rhs_known;
      const DotDims d = dot_dims(eqn.params, eqn.where);
      Tiles t;
      for (int64_t b : d.lhs_batch) t.push_back(lhs[static_cast<size_t>(b)]);
      for (int64_t f : dot_free_dims(static_cast<int>(lhs.size()), d.lhs_contract, d.lhs_batch)) t.push_back(lhs[static_cast<size_t>(f)]);
      for (int64_t f : dot_free_dims(static_cast<int>(rhs.size()), d.rhs_contract, d.rhs_batch)) t.push_back(rhs[static_cast<size_t>(f)]);
      return set(out, t);
    }
    if (eqn.inputs.empty() || at(eqn.inputs[0]).empty()) return false;
    const Tiles& in = at(eqn.inputs[0]);
    if (eqn.prim == Prim::kBroadcastInDim) {
      Tiles t(shape(out).size(), 1);
      const auto dims = param_ints(eqn.params, "broadcast_dimensions", eqn.where);
      for (size_t i = 0; i < dims.size(); ++i)
        if (shape(eqn.inputs[0])[i] == shape(out)[static_cast<size_t>(dims[i])]) t[static_cast<size_t>(dims[i])] = in[i];
      return set(out, t);
    }
    if (eqn.prim == Prim::kTranspose) {
      const auto perm = param_ints(eqn.params, "permutation", eqn.where);
      Tiles t;
      for (int64_t p : perm) t.push_back(in[static_cast<size_t>(p)]);
      return set(out, t);
    }
    if (is_axes_reduction(eqn.prim)) {
      const auto axes = param_ints(eqn.params, "axes", eqn.where);
      Tiles t;
      for (size_t d = 0; d < in.size(); ++d)
        if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) t.push_back(in[d]);
      return set(out, t);
    }
    if (eqn.prim == Prim::kReshape) return set(out, reshaped(in, shape(eqn.inputs[0]), shape(out)));
    return false;
  }

  bool backward(const FlatEquation& eqn) {
    if (eqn.outputs.size() != 1 || eqn.scan || eqn.cond || at(eqn.outputs[0]).empty()) return false;
    const ValueId out = eqn.outputs[0];
    const Tiles& t = at(out);
    bool changed = false;
    if (same_family(eqn.prim) || keeps_shape(eqn.prim)) {
      for (ValueId in : eqn.inputs)
        if (shape(in) == shape(out)) changed |= set(in, t);
      return changed;
    }
    if (eqn.inputs.empty()) return false;
    const ValueId in = eqn.inputs[0];
    if (eqn.prim == Prim::kBroadcastInDim) {
      const auto dims = param_ints(eqn.params, "broadcast_dimensions", eqn.where);
      Tiles u(shape(in).size(), 1);
      for (size_t i = 0; i < dims.size(); ++i)
        if (shape(in)[i] == shape(out)[static_cast<size_t>(dims[i])]) u[i] = t[static_cast<size_t>(dims[i])];
      return set(in, u);
    }
    if (eqn.prim == Prim::kTranspose) {
      const auto perm = param_ints(eqn.params, "permutation", eqn.where);
      Tiles u(perm.size(), 1);
      for (size_t i = 0; i < perm.size(); ++i) u[static_cast<size_t>(perm[i])] = t[i];
      return set(in, u);
    }
    if (eqn.prim == Prim::kReshape) return set(in, reshaped(t, shape(out), shape(in)));
    if (eqn.prim == Prim::kDotGeneral) {
      const DotDims d = dot_dims(eqn.params, eqn.where);
      const int lhs_rank = static_cast<int>(shape(eqn.inputs[0]).size());
      const int rhs_rank = static_cast<int>(shape(eqn.inputs[1]).size());
      Tiles lhs(static_cast<size_t>(lhs_rank), 1), rhs(static_cast<size_t>(rhs_rank), 1);
      size_t k = 0;
      for (size_t b = 0; b < d.lhs_batch.size(); ++b, ++k) {
        lhs[static_cast<size_t>(d.lhs_batch[b])] = t[k];
        rhs[static_cast<size_t>(d.rhs_batch[b])] = t[k];
      }
      for (int64_t f : dot_free_dims(lhs_rank, d.lhs_contract, d.lhs_batch)) lhs[static_cast<size_t>(f)] = t[k++];
      for (int64_t f : dot_free_dims(rhs_rank, d.rhs_contract, d.rhs_batch)) rhs[static_cast<size_t>(f)] = t[k++];
      changed |= set(eqn.inputs[0], lhs);
      changed |= set(eqn.inputs[1], rhs);
      return changed;
    }
    return false;
  }

  // A reshape keeps the blocks of the leading dims it leaves whole (GSPMD's reshape of whole dims).
  static Tiles reshaped(const Tiles& from, const Shape& from_shape, const Shape& to_shape) {
    Tiles t(to_shape.size(), 1);
    for (size_t d = 0; d < from_shape.size() && d < to_shape.size() && from_shape[d] == to_shape[d]; ++d) t[d] = from[d];
    return t;
  }

  FlatGraph& g_;
  const Mesh& mesh_;
  std::vector<Tiles> tiles_;
  std::vector<bool> local_;
  std::map<const ScanLinearization*, std::unique_ptr<Placer>> bodies_;
};

void collect_axes(const Program& program, std::set<std::string>& axes, std::vector<Mesh>& meshes) {
  auto add_axes = [&](const std::string& text) {
    for (size_t at = text.find('\''); at != std::string::npos; at = text.find('\'', at + 1)) {
      const size_t end = text.find('\'', at + 1);
      if (end == std::string::npos) break;
      axes.insert(text.substr(at + 1, end - at - 1));
      at = end;
    }
  };
  for (const Var& v : program.vars)
    for (const std::vector<std::string>& dim : sharded_type_axes(v.sharding)) axes.insert(dim.begin(), dim.end());
  for (const Equation& eqn : program.eqns) {
    if (is_mapped_call(eqn.prim)) {
      const Mesh m = mapped_call_mesh(eqn);
      meshes.push_back(m);
      for (const MeshAxis& a : m.axes) axes.insert(a.name);
    }
    if (is_collective(eqn.prim))
      for (const std::string& a : collective_axes(eqn.params, eqn.where)) axes.insert(a);
    for (const auto& [key, value] : eqn.params.entries) {
      if (value.kind != ParamValue::Kind::kIdent) continue;
      if (key == "sharding" || key == "dst_sharding" || key == "context_mesh" || key == "resource_env" ||
          key == "in_specs" || key == "out_specs" || key == "in_names" || key == "out_names") {
        add_axes(value.text);
        if (std::optional<Mesh> m = printed_mesh(value.text, eqn.where)) meshes.push_back(*m);
      }
    }
    for (const Program* sub : sub_programs(eqn.params)) collect_axes(*sub, axes, meshes);
    if (const ParamValue* body = eqn.params.find(std::string(body_param(eqn.prim)));
        is_mapped_call(eqn.prim) && body && body->program)
      collect_axes(*body->program, axes, meshes);
  }
}

}  // namespace

PlacementSummary place_on_mesh(Linearization& lin, const Mesh& mesh) { return Placer(lin, mesh).run(); }

std::optional<Mesh> program_mesh(const Program& program) {
  std::set<std::string> axes;
  std::vector<Mesh> meshes;
  collect_axes(program, axes, meshes);
  if (meshes.empty()) return std::nullopt;
  return meshes.front();
}

bool program_is_sharded(const Program& program) {
  std::set<std::string> axes;
  std::vector<Mesh> meshes;
  collect_axes(program, axes, meshes);
  return !axes.empty() || !meshes.empty();
}

void check_mesh_option(const Mesh& mesh, const Program& program, const SourceLocation& where) {
  std::set<std::string> axes;
  std::vector<Mesh> meshes;
  collect_axes(program, axes, meshes);
  for (const MeshAxis& a : mesh.axes)
    if (!axes.count(a.name)) {
      std::string named;
      for (const std::string& n : axes) named += (named.empty() ? "" : ", ") + n;
      fail_at(where, "mesh axis '" + a.name + "' is not one the program names (" +
                         (named.empty() ? std::string("it names none: its values are whole on every device") : named) + ")");
    }
  for (const Mesh& m : meshes)
    for (const MeshAxis& a : m.axes) {
      const int i = mesh.index_of(a.name);
      if (i >= 0 && mesh.axes[static_cast<size_t>(i)].size != a.size)
        fail_at(where, "mesh axis '" + a.name + "' has " + std::to_string(mesh.axes[static_cast<size_t>(i)].size) +
                           " devices here but " + std::to_string(a.size) + " in the program's mesh (" + m.str() + ")");
    }
}

std::optional<Mesh> resolve_mesh(const Program& program, const std::string& mesh_text, bool whole_arrays,
                                 const std::string& what) {
  if (whole_arrays) {
    if (!mesh_text.empty()) fail(what + " and whole arrays: choose one (whole arrays count no mesh)");
    return std::nullopt;
  }
  if (mesh_text.empty()) return program_mesh(program);
  const SourceLocation where{what, 0, 0};
  Mesh mesh = parse_mesh_option(mesh_text, where);
  check_mesh_option(mesh, program, where);
  return mesh;
}

std::string placement_line(const PlacementSummary& s) {
  std::string line = "per device of the mesh " + s.mesh.str() + " (" + std::to_string(s.mesh.num_devices()) +
                     " devices; --global for whole arrays): " + std::to_string(s.split_values) + " value(s) split";
  if (s.unplaced_values > 0)
    line += "; " + std::to_string(s.unplaced_values) + " value(s), " + human_bytes(s.unplaced_bytes) +
            ", that no sharding reaches are counted whole on every device";
  return line;
}

}  // namespace rematkit
