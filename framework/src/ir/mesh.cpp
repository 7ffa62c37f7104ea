#include "rematkit/ir/mesh.hpp"

#include <algorithm>

#include "python_repr.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit {
namespace {

using detail::Repr;

int64_t positive_size(const Repr& r, const std::string& axis, const SourceLocation& where) {
  int64_t size = 0;
  try {
    if (r.kind == Repr::Kind::kNumber) size = std::stoll(r.text);
  } catch (const std::exception&) {
  }
  if (size <= 0) fail_at(where, "mesh axis '" + axis + "' has no positive size (" + r.text + ")");
  return size;
}

// A numpy array's shape, from its repr's nested lists: array([[0, 1], [2, 3]]) is (2, 2).
std::vector<int64_t> array_shape(const Repr& array) {
  std::vector<int64_t> shape;
  const Repr* level = array.is_call("array") && !array.items.empty() ? &array.items[0] : &array;
  while (level->kind == Repr::Kind::kSequence) {
    shape.push_back(static_cast<int64_t>(level->items.size()));
    if (level->items.empty()) break;
    level = &level->items[0];
  }
  return shape;
}

std::string text_of(const Repr& r) { return r.text; }

// Devices past what any machine has would overflow the products of axis sizes.
constexpr int64_t kMaxMeshDevices = int64_t{1} << 24;

void check_mesh_size(const Mesh& mesh, const SourceLocation& where) {
  int64_t n = 1;
  for (const MeshAxis& a : mesh.axes) {
    if (a.size > kMaxMeshDevices || n * a.size > kMaxMeshDevices)
      fail_at(where, "the mesh " + mesh.str() + " has more than " + std::to_string(kMaxMeshDevices) + " devices");
    n *= a.size;
  }
}

}  // namespace

int64_t Mesh::num_devices() const {
  int64_t n = 1;
  for (const MeshAxis& a : axes) n *= a.size;
  return n;
}

int Mesh::index_of(std::string_view name) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Mesh::str() const {
  std::string s;
  for (const MeshAxis& a : axes) s += (s.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
  return s;
}

Mesh read_mesh(std::string_view printed, const SourceLocation& where) {
  const Repr r = detail::read_repr(printed, "mesh", where);
  Mesh mesh;
  auto add = [&](const std::string& name, const Repr& size) {
    if (mesh.index_of(name) >= 0) fail_at(where, "the mesh names axis '" + name + "' twice");
    mesh.axes.push_back({name, positive_size(size, name, where)});
  };
  if (r.kind == Repr::Kind::kDict) {  // NamedSharding's mesh={'x': 4} (JAX to 0.4.14)
    for (size_t i = 0; i < r.items.size(); ++i) add(r.keys[i], r.items[i]);
  } else if (r.kind == Repr::Kind::kCall && r.text.size() >= 4 && r.text.compare(r.text.size() - 4, 4, "Mesh") == 0) {
    if (const Repr* ids = r.find("device_ids=")) {  // Mesh(device_ids=array(..), axis_names=(..)) (to 0.4.23)
      const Repr* names = r.find("axis_names=");
      const std::vector<int64_t> shape = array_shape(*ids);
      if (!names || names->kind != Repr::Kind::kSequence || names->items.size() != shape.size())
        fail_at(where, "mesh=: the device array's dims and axis_names do not match");
      for (size_t i = 0; i < shape.size(); ++i) add(names->items[i].text, Repr{Repr::Kind::kNumber, std::to_string(shape[i]), {}, {}});
    } else if (!r.items.empty() && r.keys[0].empty() && r.items[0].kind == Repr::Kind::kSequence) {
      for (const Repr& pair : r.items[0].items) {  // AbstractMesh((('x', 2),)) (0.4.32-0.4.37)
        if (pair.kind != Repr::Kind::kSequence || pair.items.size() != 2)
          fail_at(where, "mesh=: expected ('name', size) pairs in " + std::string(printed));
        add(pair.items[0].text, pair.items[1]);
      }
    } else {  // Mesh('x': 2, 'y': 4, axis_types=(..)) and AbstractMesh alike
      for (size_t i = 0; i < r.items.size(); ++i)
        if (!r.keys[i].empty() && r.keys[i].back() != '=') add(r.keys[i], r.items[i]);
    }
  } else {
    fail_at(where, "mesh= is not a mesh rematkit reads: " + std::string(printed));
  }
  if (mesh.axes.empty()) fail_at(where, "the mesh has no axes: " + std::string(printed));
  check_mesh_size(mesh, where);
  return mesh;
}

Mesh parse_mesh_option(std::string_view text, const SourceLocation& where) {
  Mesh mesh;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      fail_at(where, "expected NAME=SIZE, found '" + std::string(item) + "' (--mesh data=2,model=4)");
    const std::string name(item.substr(0, eq));
    const std::string size(item.substr(eq + 1));
    int64_t n = 0;
    try {
      size_t used = 0;
      n = std::stoll(size, &used);
      if (used != size.size()) n = 0;
    } catch (const std::exception&) {
    }
    if (n <= 0) fail_at(where, "mesh axis '" + name + "' needs a positive size, found '" + size + "'");
    if (mesh.index_of(name) >= 0) fail_at(where, "mesh axis '" + name + "' is named twice");
    mesh.axes.push_back({name, n});
    pos = comma + 1;
  }
  check_mesh_size(mesh, where);
  return mesh;
}

Mesh mapped_call_mesh(const Equation& eqn) {
  if (eqn.prim == Prim::kXlaPmap) {
    const ParamValue* name = eqn.params.find("axis_name");
    if (!name || (name->kind != ParamValue::Kind::kIdent && name->kind != ParamValue::Kind::kString))
      fail_at(eqn.where, "xla_pmap needs an axis_name");
    return Mesh{{{name->text, param_int(eqn.params, "axis_size", eqn.where)}}};
  }
  const ParamValue* mesh = eqn.params.find("mesh");
  if (!mesh) fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " needs a mesh= parameter");
  return read_mesh(mesh->text, eqn.where);
}

namespace {

// A PartitionSpec's entries: None, 'x', ('x', 'y'), UNCONSTRAINED (left to the compiler: whole here).
DimAxes spec_dims(const Repr& spec, const SourceLocation& where) {
  DimAxes dims;
  if (spec.kind != Repr::Kind::kCall || (spec.text != "PartitionSpec" && spec.text != "P"))
    fail_at(where, "expected a PartitionSpec, found '" + spec.text + "'");
  for (size_t i = 0; i < spec.items.size(); ++i) {
    if (!spec.keys[i].empty()) continue;  // unreduced={..}, reduced={..}: the shape is the same
    const Repr& e = spec.items[i];
    std::vector<std::string> axes;
    if (e.kind == Repr::Kind::kString) axes.push_back(e.text);
    else if (e.kind == Repr::Kind::kSequence) std::transform(e.items.begin(), e.items.end(), std::back_inserter(axes), text_of);
    dims.push_back(std::move(axes));
  }
  return dims;
}

// shard_map's in_names entry (to 0.6.0): {0: ('x',), 1: ('y', 'z')}.
DimAxes names_dims(const Repr& names, const SourceLocation& where) {
  if (names.kind != Repr::Kind::kDict) fail_at(where, "expected a {dim: axes} dict in shard_map's names");
  DimAxes dims;
  for (size_t i = 0; i < names.items.size(); ++i) {
    int64_t dim = -1;
    try {
      dim = std::stoll(names.keys[i]);
    } catch (const std::exception&) {
    }
    if (dim < 0 || dim > 64) fail_at(where, "shard_map's names: '" + names.keys[i] + "' is no dim");
    if (dims.size() <= static_cast<size_t>(dim)) dims.resize(static_cast<size_t>(dim) + 1);
    const Repr& axes = names.items[i];
    if (axes.kind == Repr::Kind::kSequence)
      std::transform(axes.items.begin(), axes.items.end(), std::back_inserter(dims[static_cast<size_t>(dim)]), text_of);
    else dims[static_cast<size_t>(dim)].push_back(axes.text);
  }
  return dims;
}

}  // namespace

std::vector<MappedValue> mapped_call_values(const Equation& eqn, bool results, size_t count) {
  std::vector<MappedValue> values(count);
  const std::string side = results ? "out" : "in";
  if (eqn.prim == Prim::kXlaPmap) {
    const std::string axis = mapped_call_mesh(eqn).axes[0].name;
    std::vector<int64_t> dims(count, 0);  // mapped_invars (to 0.2.5) and out_axes default: dim 0
    if (const ParamValue* v = eqn.params.find(side + "_axes")) {
      if (!v->is_sequence() || v->items.size() != count)
        fail_at(eqn.where, "xla_pmap's " + side + "_axes gives " + std::to_string(v->items.size()) + " axes for " +
                               std::to_string(count) + " " + (results ? "results" : "operands"));
      for (size_t i = 0; i < count; ++i) {
        const ParamValue& a = v->items[i];
        if (a.kind == ParamValue::Kind::kNone && !results) dims[i] = -1;
        else if (a.kind == ParamValue::Kind::kInt && a.integer >= 0) dims[i] = a.integer;
        else fail_at(eqn.where, "xla_pmap's " + side + "_axes: " + a.str() + " is no dim");
      }
    } else if (const ParamValue* mapped = eqn.params.find("mapped_invars"); mapped && !results && mapped->is_sequence()) {
      for (size_t i = 0; i < count && i < mapped->items.size(); ++i)
        if (mapped->items[i].kind == ParamValue::Kind::kBool && !mapped->items[i].boolean) dims[i] = -1;
    }
    for (size_t i = 0; i < count; ++i) {
      if (dims[i] < 0) continue;
      values[i].dims.resize(static_cast<size_t>(dims[i]) + 1);
      values[i].dims[static_cast<size_t>(dims[i])] = {axis};
      values[i].squeezed = static_cast<int>(dims[i]);
    }
    return values;
  }
  const ParamValue* specs = eqn.params.find(side + "_specs");
  const ParamValue* names = eqn.params.find(side + "_names");
  if (!specs && !names) fail_at(eqn.where, "shard_map needs " + side + "_specs= (or " + side + "_names=, JAX to 0.6.0)");
  const std::string key = specs ? side + "_specs" : side + "_names";
  const Repr all = detail::read_repr((specs ? specs : names)->text, key, eqn.where);
  if (all.kind != Repr::Kind::kSequence || all.items.size() != count)
    fail_at(eqn.where, "shard_map's " + key + " gives " + std::to_string(all.items.size()) + " entries for " +
                           std::to_string(count) + " " + (results ? "results" : "operands"));
  for (size_t i = 0; i < count; ++i) values[i].dims = specs ? spec_dims(all.items[i], eqn.where) : names_dims(all.items[i], eqn.where);
  return values;
}

std::vector<std::string> collective_axes(const Params& params, const SourceLocation& where) {
  const ParamValue* v = params.find("axes");
  if (!v) v = params.find("axis_name");
  if (!v) fail_at(where, "the collective names no mesh axes (axes= or axis_name=)");
  std::vector<std::string> axes;
  auto add = [&](const ParamValue& a) {
    if (a.kind == ParamValue::Kind::kInt)
      fail_at(where, "positional axes (" + a.str() + ") in a collective are not supported: rematkit reads mesh axis names");
    if (a.kind != ParamValue::Kind::kIdent && a.kind != ParamValue::Kind::kString)
      fail_at(where, "expected a mesh axis name, found " + a.str());
    axes.push_back(a.text);
  };
  if (v->is_sequence()) std::for_each(v->items.begin(), v->items.end(), add);
  else add(*v);
  if (const ParamValue* groups = params.find("axis_index_groups"); groups && groups->kind != ParamValue::Kind::kNone)
    fail_at(where, "axis_index_groups are not supported: a collective here works over whole mesh axes");
  return axes;
}

Params mapped_value_params(const MappedValue& v, const Mesh& mesh, const SourceLocation& where) {
  ParamValue dims = ParamValue::of_tuple({});
  std::vector<int64_t> sizes;
  std::vector<bool> named(mesh.axes.size(), false);
  for (const std::vector<std::string>& axes : v.dims) {
    ParamValue one = ParamValue::of_tuple({});
    for (const std::string& a : axes) {
      one.items.push_back(ParamValue::of_ident(a));
      if (const int i = mesh.index_of(a); i >= 0) named[static_cast<size_t>(i)] = true;
    }
    dims.items.push_back(std::move(one));
    sizes.push_back(axes_size(mesh, axes, where));
  }
  ParamValue replicated = ParamValue::of_tuple({});
  int64_t copies = 1;
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    if (named[i]) continue;
    replicated.items.push_back(ParamValue::of_ident(mesh.axes[i].name));
    copies *= mesh.axes[i].size;
  }
  Params p;
  p.set("dim_axes", std::move(dims));
  p.set("dim_sizes", ParamValue::of_ints(sizes));
  p.set("replicated_axes", std::move(replicated));
  p.set("replicated_size", ParamValue::of_int(copies));
  return p;
}

namespace {

// XLA's HloSharding::ToString: {replicated}, {maximal device=N}, {manual},
// {devices=[t0,...,tk]<ids> [last_tile_dim_replicate | last_tile_dims={..}]}.
std::optional<std::vector<int64_t>> hlo_sharding_tiles(std::string_view text, int rank, const SourceLocation& where) {
  const size_t at = text.find("devices=[");
  if (at == std::string_view::npos) return std::nullopt;  // replicated, maximal, manual
  std::vector<int64_t> tiles;
  size_t pos = at + 9;
  while (pos < text.size() && text[pos] != ']') {
    size_t used = 0;
    try {
      tiles.push_back(std::stoll(std::string(text.substr(pos)), &used));
    } catch (const std::exception&) {
      fail_at(where, "sharding=: unreadable tile assignment in " + std::string(text));
    }
    pos += used;
    if (pos < text.size() && text[pos] == ',') ++pos;
  }
  size_t trailing = 0;  // subgroup dims after the value's own
  if (text.find("last_tile_dim_replicate") != std::string_view::npos) trailing = 1;
  if (const size_t dims = text.find("last_tile_dims={"); dims != std::string_view::npos) {
    const size_t close = text.find('}', dims);
    if (close == std::string_view::npos) fail_at(where, "sharding=: an unclosed last_tile_dims in " + std::string(text));
    trailing = 1 + static_cast<size_t>(std::count(text.begin() + static_cast<long>(dims), text.begin() + static_cast<long>(close), ','));
  }
  if (tiles.size() < trailing || tiles.size() - trailing != static_cast<size_t>(rank))
    fail_at(where, "sharding=" + std::string(text) + " tiles " + std::to_string(tiles.size() - trailing) +
                       " dims of a value with " + std::to_string(rank));
  tiles.resize(static_cast<size_t>(rank));
  return tiles;
}

}  // namespace

std::optional<Mesh> printed_mesh(std::string_view printed, const SourceLocation& where) {
  const size_t named = printed.find("mesh=");
  if (named != std::string_view::npos && printed.substr(named + 5, 1) == "{")  // mesh={'x': 4} (JAX to 0.4.14)
    return read_mesh(printed.substr(named + 5, printed.find('}', named) - named - 4), where);
  const size_t start = printed.find("Mesh(", named == std::string_view::npos ? 0 : named);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t from = printed.rfind("Abstract", start) == start - 8 && start >= 8 ? start - 8 : start;
  // The mesh's repr runs to its closing parenthesis.
  int open = 0;
  size_t end = from;
  for (; end < printed.size(); ++end) {
    if (printed[end] == '(') ++open;
    if (printed[end] == ')' && --open == 0) break;
  }
  if (end >= printed.size()) return std::nullopt;
  const std::string text(printed.substr(from, end + 1 - from));
  if (text == "Mesh()" || text.find("Mesh(,") != std::string::npos) return std::nullopt;
  return read_mesh(text, where);
}

std::optional<std::vector<int64_t>> sharding_tiles(std::string_view printed, int rank, const Mesh* mesh,
                                                   const SourceLocation& where) {
  if (printed.find("GSPMDSharding(") != std::string_view::npos || printed.find("OpShardingSharding(") != std::string_view::npos)
    return hlo_sharding_tiles(printed, rank, where);
  if (printed.rfind("PositionalSharding(", 0) == 0) {
    const size_t at = printed.find("shape=(");
    if (at == std::string_view::npos) return std::nullopt;
    const Repr shape = detail::read_repr(printed.substr(at + 6, printed.find(')', at) + 1 - at - 6), "sharding", where);
    std::vector<int64_t> tiles;
    for (const Repr& n : shape.items) tiles.push_back(positive_size(n, "shape", where));
    if (static_cast<int>(tiles.size()) != rank) return std::nullopt;
    return tiles;
  }
  std::optional<Mesh> own;
  const Repr* spec = nullptr;
  Repr whole;
  if (printed.rfind("NamedSharding(", 0) == 0) {
    own = printed_mesh(printed, where);
    whole = detail::read_repr(printed, "sharding", where);
    spec = whole.find("spec=");
  } else if (printed.rfind("PartitionSpec(", 0) == 0 || printed.rfind("P(", 0) == 0) {
    whole = detail::read_repr(printed, "sharding", where);
    spec = &whole;
  }
  if (!spec) return std::nullopt;  // UnspecifiedValue, SingleDeviceSharding
  const Mesh* over = own ? &*own : mesh;
  if (!over) fail_at(where, "a PartitionSpec with no mesh to size its axes: give one with --mesh");
  const DimAxes dims = spec_dims(*spec, where);
  std::vector<int64_t> tiles(static_cast<size_t>(rank), 1);
  for (size_t d = 0; d < dims.size() && d < tiles.size(); ++d) tiles[d] = axes_size(*over, dims[d], where);
  return tiles;
}

Type mapped_value_type(const Type& whole, const MappedValue& v, const Mesh& mesh, bool to_device, const SourceLocation& where,
                 const std::string& what) {
  Type t = whole;
  if (v.squeezed >= 0) {
    const int64_t n = mesh.axes[0].size;
    if (to_device) {
      if (v.squeezed >= t.rank() || t.shape[static_cast<size_t>(v.squeezed)] != n)
        fail_at(where, what + " is " + whole.str() + ": pmap maps its dim " + std::to_string(v.squeezed) +
                           ", which must have axis_size " + std::to_string(n));
      t.shape.erase(t.shape.begin() + v.squeezed);
    } else {
      if (v.squeezed > t.rank()) fail_at(where, what + ": out_axes " + std::to_string(v.squeezed) + " is past its dims");
      t.shape.insert(t.shape.begin() + v.squeezed, n);
    }
    return t;
  }
  if (static_cast<int>(v.dims.size()) > t.rank())
    fail_at(where, what + " is " + whole.str() + " but its spec names " + std::to_string(v.dims.size()) + " dims");
  for (size_t d = 0; d < v.dims.size(); ++d) {
    const int64_t n = axes_size(mesh, v.dims[d], where);
    if (!to_device) {
      t.shape[d] *= n;
    } else if (t.shape[d] % n != 0) {
      std::string axes;
      for (const std::string& a : v.dims[d]) axes += (axes.empty() ? "" : ",") + a;
      fail_at(where, what + " is " + whole.str() + ": mesh axes " + axes + " (" + std::to_string(n) +
                         " devices) do not divide its dim " + std::to_string(d) + " of size " + std::to_string(t.shape[d]));
    } else {
      t.shape[d] /= n;
    }
  }
  return t;
}

int64_t axes_size(const Mesh& mesh, const std::vector<std::string>& axes, const SourceLocation& where) {
  int64_t size = 1;
  for (const std::string& a : axes) {
    const int i = mesh.index_of(a);
    if (i < 0) fail_at(where, "mesh axis '" + a + "' is not an axis of the mesh (" + mesh.str() + ")");
    size *= mesh.axes[static_cast<size_t>(i)].size;
  }
  return size;
}

MeshGroup mesh_group(const Mesh& mesh, int64_t device, const std::vector<std::string>& axes) {
  std::vector<size_t> positions;
  for (const std::string& a : axes) {
    const int at = mesh.index_of(a);
    if (at < 0) fail("the mesh " + mesh.str() + " has no axis '" + a + "'");
    positions.push_back(static_cast<size_t>(at));
  }
  std::vector<int64_t> coords(mesh.axes.size());  // `device`'s, row-major
  for (size_t i = mesh.axes.size(), rest = static_cast<size_t>(device); i-- > 0;) {
    coords[i] = static_cast<int64_t>(rest) % mesh.axes[i].size;
    rest /= static_cast<size_t>(mesh.axes[i].size);
  }
  MeshGroup g;
  int64_t size = 1;
  for (size_t p : positions) size *= mesh.axes[p].size;
  for (int64_t k = 0; k < size; ++k) {
    std::vector<int64_t> c = coords;
    int64_t rest = k;
    for (size_t i = positions.size(); i-- > 0;) {
      c[positions[i]] = rest % mesh.axes[positions[i]].size;
      rest /= mesh.axes[positions[i]].size;
    }
    int64_t member = 0;
    for (size_t i = 0; i < mesh.axes.size(); ++i) member = member * mesh.axes[i].size + c[i];
    if (member == device) g.rank = k;
    g.members.push_back(member);
  }
  return g;
}

}  // namespace rematkit
