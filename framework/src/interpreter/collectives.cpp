#include "collectives.hpp"

#include <algorithm>
#include <functional>

namespace rematkit::detail {
namespace {

std::vector<int64_t> coords_of(const Mesh& mesh, int64_t device) {
  std::vector<int64_t> c(mesh.axes.size());
  for (size_t i = mesh.axes.size(); i-- > 0;) {
    c[i] = device % mesh.axes[i].size;
    device /= mesh.axes[i].size;
  }
  return c;
}

int64_t device_at(const Mesh& mesh, const std::vector<int64_t>& coords) {
  int64_t d = 0;
  for (size_t i = 0; i < mesh.axes.size(); ++i) d = d * mesh.axes[i].size + coords[i];
  return d;
}

// The devices that share `device`'s place on every axis but `axes`, in the order of their index
// over `axes` (the first axis named the slowest, as axis_index counts), and `device`'s own index.
struct Group {
  std::vector<int64_t> members;
  int64_t rank = 0;
};

Group group_of(const Mesh& mesh, int64_t device, const std::vector<std::string>& axes) {
  std::vector<size_t> positions;
  for (const std::string& a : axes) positions.push_back(static_cast<size_t>(mesh.index_of(a)));
  const std::vector<int64_t> mine = coords_of(mesh, device);
  Group g;
  int64_t size = 1;
  for (size_t p : positions) size *= mesh.axes[p].size;
  for (int64_t k = 0; k < size; ++k) {
    std::vector<int64_t> c = mine;
    int64_t rest = k;
    for (size_t i = positions.size(); i-- > 0;) {
      c[positions[i]] = rest % mesh.axes[positions[i]].size;
      rest /= mesh.axes[positions[i]].size;
    }
    const int64_t member = device_at(mesh, c);
    if (member == device) g.rank = k;
    g.members.push_back(member);
  }
  return g;
}

// Each dim's mesh axes, from shard_map_in's and shard_map_out's dim_axes=((x,), (), ...).
DimAxes dim_axes(const Params& params) {
  DimAxes dims;
  for (const ParamValue& d : params.find("dim_axes")->items) {
    std::vector<std::string> axes;
    for (const ParamValue& a : d.items) axes.push_back(a.text);
    dims.push_back(std::move(axes));
  }
  return dims;
}

// Copies the block of `src` at `src_at` (of `dst`'s block shape `shape`) into `dst` at `dst_at`.
void copy_block(const Tensor& src, const std::vector<int64_t>& src_at, Tensor& dst, const std::vector<int64_t>& dst_at,
                const Shape& shape) {
  const std::vector<int64_t> ss = row_major_strides(src.type.shape), ds = row_major_strides(dst.type.shape);
  const int64_t n = num_elements(shape);
  const bool complex = !src.imag.empty() && !dst.imag.empty();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, s = 0, d = 0;
    for (size_t k = shape.size(); k-- > 0;) {
      const int64_t idx = rest % shape[k];
      rest /= shape[k];
      s += (src_at[k] + idx) * ss[k];
      d += (dst_at[k] + idx) * ds[k];
    }
    dst.data[static_cast<size_t>(d)] = src.data[static_cast<size_t>(s)];
    if (complex) dst.imag[static_cast<size_t>(d)] = src.imag[static_cast<size_t>(s)];
  }
}

// `t` read with a size-1 dim inserted at `dim` (the same elements).
Tensor with_unit_dim(const Tensor& t, int64_t dim) {
  Tensor u = t;
  u.type.shape.insert(u.type.shape.begin() + dim, 1);
  return u;
}

// The position of the device's block along each dim: its index over the dim's axes.
std::vector<int64_t> block_index(const Mesh& mesh, int64_t device, const DimAxes& dims, size_t rank) {
  std::vector<int64_t> at(rank, 0);
  for (size_t d = 0; d < dims.size(); ++d) at[d] = group_of(mesh, device, dims[d]).rank;
  return at;
}

Tensor elementwise(const std::vector<const Tensor*>& xs, const Type& out_type, const std::function<double(double, double)>& fn) {
  Tensor out = *xs[0];
  out.type = out_type;
  for (size_t j = 1; j < xs.size(); ++j) {
    for (size_t e = 0; e < out.data.size(); ++e) out.data[e] = fn(out.data[e], xs[j]->data[e]);
    for (size_t e = 0; e < out.imag.size(); ++e) out.imag[e] = fn(out.imag[e], xs[j]->imag[e]);
  }
  return out;
}

Tensor sum_of(const std::vector<const Tensor*>& xs, const Type& type, Arithmetic arithmetic) {
  Tensor out = elementwise(xs, type, [](double a, double b) { return a + b; });
  for (double& v : out.data) v = round_to_dtype(v, type.dtype, arithmetic);
  for (double& v : out.imag) v = round_to_dtype(v, type.dtype, arithmetic);
  return out;
}

std::vector<const Tensor*> members_of(const Group& g, const std::vector<const Tensor*>& all) {
  std::vector<const Tensor*> xs;
  for (int64_t m : g.members) xs.push_back(all[static_cast<size_t>(m)]);
  return xs;
}

int64_t int_param(const Params& p, const char* key) { return p.find(key)->integer; }
bool tiled(const Params& p) { return p.find("tiled") && p.find("tiled")->boolean; }

}  // namespace

bool needs_other_devices(Prim prim, const Params& params) {
  if (prim == Prim::kAxisIndex || prim == Prim::kPvary || prim == Prim::kShardMapIn) return false;
  return prim != Prim::kPbroadcast || params.find("source") != nullptr;  // without source: a cast
}

Tensor local_collective(Prim prim, const Params& params, const DeviceView& device, const std::vector<const Tensor*>& in,
                        const Type& out_type) {
  if (prim == Prim::kAxisIndex) {
    const Group g = group_of(device.mesh, device.device, collective_axes(params, {}));
    return Tensor::filled(out_type, static_cast<double>(g.rank));
  }
  if (prim == Prim::kPvary || prim == Prim::kPbroadcast) return *in[0];  // a cast: the same value here
  if (prim == Prim::kShardMapIn) {  // the device's block of the whole value
    Tensor out = Tensor::filled(out_type, 0.0);
    std::vector<int64_t> at = block_index(device.mesh, device.device, dim_axes(params), out_type.shape.size());
    for (size_t d = 0; d < at.size(); ++d) at[d] *= out_type.shape[d];
    copy_block(*in[0], at, out, std::vector<int64_t>(at.size(), 0), out_type.shape);
    return out;
  }
  internal_error("local_collective of " + std::string(prim_name(prim)));
}

Tensor gathered_collective(Prim prim, const Params& params, const DeviceView& device,
                           const std::vector<const Tensor*>& all, const Type& out_type, Arithmetic arithmetic) {
  const Mesh& mesh = device.mesh;
  if (prim == Prim::kShardMapOut) {  // every block of the value, from the devices that hold them
    DimAxes dims = dim_axes(params);
    std::vector<std::string> named;
    for (const auto& axes : dims) named.insert(named.end(), axes.begin(), axes.end());
    Tensor out = Tensor::filled(out_type, 0.0);
    for (int64_t m : group_of(mesh, device.device, named).members) {
      const Tensor& block = *all[static_cast<size_t>(m)];
      std::vector<int64_t> at = block_index(mesh, m, dims, out_type.shape.size());
      for (size_t d = 0; d < at.size(); ++d) at[d] *= block.type.shape[d];
      copy_block(block, std::vector<int64_t>(at.size(), 0), out, at, block.type.shape);
    }
    return out;
  }
  const Group g = group_of(mesh, device.device, collective_axes(params, {}));
  const std::vector<const Tensor*> xs = members_of(g, all);
  const auto n = static_cast<int64_t>(xs.size());
  if (prim == Prim::kPsum) return sum_of(xs, out_type, arithmetic);
  if (prim == Prim::kPmax) return elementwise(xs, out_type, [](double a, double b) { return std::max(a, b); });
  if (prim == Prim::kPmin) return elementwise(xs, out_type, [](double a, double b) { return std::min(a, b); });
  if (prim == Prim::kPbroadcast) {  // the source device's value
    const int64_t source = int_param(params, "source");
    if (source < 0 || source >= n) fail("pbroadcast's source " + std::to_string(source) + " is not a device of its axis");
    Tensor out = *xs[static_cast<size_t>(source)];
    return out;
  }
  if (prim == Prim::kAllGather) {  // every device's operand, side by side along the dim (stacked: a new dim)
    const int64_t dim = int_param(params, "all_gather_dimension");
    Tensor out = Tensor::filled(out_type, 0.0);
    for (int64_t j = 0; j < n; ++j) {
      const Tensor part = tiled(params) ? *xs[static_cast<size_t>(j)] : with_unit_dim(*xs[static_cast<size_t>(j)], dim);
      std::vector<int64_t> at(out_type.shape.size(), 0);
      at[static_cast<size_t>(dim)] = j * part.type.shape[static_cast<size_t>(dim)];
      copy_block(part, std::vector<int64_t>(at.size(), 0), out, at, part.type.shape);
    }
    return out;
  }
  if (prim == Prim::kReduceScatter) {  // the device's block of the sum
    const int64_t dim = int_param(params, "scatter_dimension");
    Type whole = xs[0]->type;
    const Tensor sum = sum_of(xs, whole, arithmetic);
    Tensor out = Tensor::filled(out_type, 0.0);
    Shape block = whole.shape;
    block[static_cast<size_t>(dim)] /= n;
    Tensor shaped = tiled(params) ? out : with_unit_dim(out, dim);
    std::vector<int64_t> at(block.size(), 0);
    at[static_cast<size_t>(dim)] = g.rank * block[static_cast<size_t>(dim)];
    copy_block(sum, at, shaped, std::vector<int64_t>(at.size(), 0), block);
    out.data = std::move(shaped.data);
    out.imag = std::move(shaped.imag);
    return out;
  }
  if (prim == Prim::kPpermute) {  // from the device whose pair names this one; zeros if none does
    for (const ParamValue& pair : params.find("perm")->items) {
      if (pair.items.size() != 2) fail("ppermute's perm holds (source, destination) pairs, found " + pair.str());
      const int64_t src = pair.items[0].integer, dst = pair.items[1].integer;
      if (src < 0 || src >= n || dst < 0 || dst >= n)
        fail("ppermute's pair " + pair.str() + " names a device its axis (" + std::to_string(n) + " devices) does not have");
      if (dst == g.rank) {
        Tensor out = *xs[static_cast<size_t>(src)];
        return out;
      }
    }
    return Tensor::filled(out_type, 0.0);
  }
  if (prim == Prim::kAllToAll) {  // block j of the split dim goes to device j, joined along the concat dim
    const auto split = static_cast<size_t>(int_param(params, "split_axis"));
    const auto concat = static_cast<size_t>(int_param(params, "concat_axis"));
    Tensor out = Tensor::filled(out_type, 0.0);
    Shape block = xs[0]->type.shape;
    block[split] /= n;
    for (int64_t j = 0; j < n; ++j) {
      std::vector<int64_t> from(block.size(), 0), to(block.size(), 0);
      from[split] = g.rank * block[split];
      to[concat] = j * block[concat];
      copy_block(*xs[static_cast<size_t>(j)], from, out, to, block);
    }
    return out;
  }
  internal_error("gathered_collective of " + std::string(prim_name(prim)));
}

}  // namespace rematkit::detail
