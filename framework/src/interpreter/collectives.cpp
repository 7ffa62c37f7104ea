#include "collectives.hpp"

#include <algorithm>
#include <functional>

namespace rematkit::detail {
namespace {

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

// `t` read with a size-1 dim inserted at `dim` (the same elements).
Tensor with_unit_dim(const Tensor& t, int64_t dim) {
  Tensor u = t;
  u.type.shape.insert(u.type.shape.begin() + dim, 1);
  return u;
}

// The position of the device's block along each dim: its index over the dim's axes.
std::vector<int64_t> block_index(const Mesh& mesh, int64_t device, const DimAxes& dims, size_t rank) {
  std::vector<int64_t> at(rank, 0);
  for (size_t d = 0; d < dims.size(); ++d) at[d] = mesh_group(mesh, device, dims[d]).rank;
  return at;
}

std::vector<const Tensor*> members_of(const MeshGroup& g, const std::vector<const Tensor*>& all) {
  std::vector<const Tensor*> xs;
  for (int64_t m : g.members) xs.push_back(all[static_cast<size_t>(m)]);
  return xs;
}

int64_t int_param(const Params& p, const char* key) { return p.find(key)->integer; }
bool tiled(const Params& p) { return p.find("tiled") && p.find("tiled")->boolean; }

}  // namespace

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

bool needs_other_devices(Prim prim, const Params& params) {
  if (prim == Prim::kAxisIndex || prim == Prim::kPvary || prim == Prim::kShardMapIn) return false;
  return prim != Prim::kPbroadcast || params.find("source") != nullptr;  // without source: a cast
}

Tensor local_collective(Prim prim, const Params& params, const DeviceView& device, const std::vector<const Tensor*>& in,
                        const Type& out_type) {
  if (prim == Prim::kAxisIndex) {
    const MeshGroup g = mesh_group(device.mesh, device.device, collective_axes(params, {}));
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
                           const std::vector<const Tensor*>& all, const Type& out_type) {
  const Mesh& mesh = device.mesh;
  if (prim == Prim::kShardMapOut) {  // every block of the value, from the devices that hold them
    DimAxes dims = dim_axes(params);
    std::vector<std::string> named;
    for (const auto& axes : dims) named.insert(named.end(), axes.begin(), axes.end());
    Tensor out = Tensor::filled(out_type, 0.0);
    for (int64_t m : mesh_group(mesh, device.device, named).members) {
      const Tensor& block = *all[static_cast<size_t>(m)];
      std::vector<int64_t> at = block_index(mesh, m, dims, out_type.shape.size());
      for (size_t d = 0; d < at.size(); ++d) at[d] *= block.type.shape[d];
      copy_block(block, std::vector<int64_t>(at.size(), 0), out, at, block.type.shape);
    }
    return out;
  }
  const MeshGroup g = mesh_group(mesh, device.device, collective_axes(params, {}));
  const std::vector<const Tensor*> xs = members_of(g, all);
  const auto n = static_cast<int64_t>(xs.size());
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
  internal_error("gathered_collective of " + std::string(prim_name(prim)));
}

}  // namespace rematkit::detail
