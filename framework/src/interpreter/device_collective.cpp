#include "rematkit/interpreter/device_collective.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collectives.hpp"

namespace rematkit {
namespace {

using Bytes = std::vector<std::byte>;

// What a value crosses between devices as: its own dtype, but the interpreter's f64 arithmetic
// holds a float in a double, which goes as one.
Type wire_type(const Type& type, Arithmetic arithmetic) {
  Type wire = type;
  if (arithmetic == Arithmetic::kFloat64 && is_floating(type.dtype)) wire.dtype = DType::kF64;
  if (arithmetic == Arithmetic::kFloat64 && is_complex(type.dtype)) wire.dtype = DType::kC128;
  return wire;
}

Bytes bytes_of(const Tensor& t, Arithmetic arithmetic) {
  Tensor wire = t;
  wire.type = wire_type(t.type, arithmetic);
  Bytes b(static_cast<size_t>(wire.type.bytes()));
  write_buffer(wire, b.data());
  return b;
}

Tensor read_wire(const Type& type, const std::byte* at, Arithmetic arithmetic) {
  Tensor t = read_buffer(wire_type(type, arithmetic), at);
  t.type = type;
  return t;
}

// What every device of a group must agree on: the collective, its params and the operand's type.
std::string what_of(Prim prim, const Params& params, const Type& operand) {
  std::string what = std::string(prim_name(prim)) + "[";
  for (const auto& [key, value] : params.entries) what += (what.back() == '[' ? "" : " ") + key + "=" + value.str();
  return what + "] of " + operand.str();
}

// `t`'s elements as one flat tensor of `n * per` elements, padded with zeros.
Tensor flat_padded(const Tensor& t, int64_t n, int64_t per) {
  Tensor f = t;
  f.type.shape = {n * per};
  f.data.resize(static_cast<size_t>(n * per), 0.0);
  if (!f.imag.empty()) f.imag.resize(f.data.size(), 0.0);
  return f;
}

// Elementwise over the members' chunks, in the group's order; the sum rounded once at the end.
enum class Reduce { kSum, kMax, kMin };

Tensor reduce_in_order(const std::vector<Tensor>& parts, Reduce how, Arithmetic arithmetic) {
  Tensor out = parts[0];
  const auto combine = [how](double a, double b) {
    return how == Reduce::kSum ? a + b : how == Reduce::kMax ? std::max(a, b) : std::min(a, b);
  };
  for (size_t j = 1; j < parts.size(); ++j) {
    for (size_t e = 0; e < out.data.size(); ++e) out.data[e] = combine(out.data[e], parts[j].data[e]);
    for (size_t e = 0; e < out.imag.size(); ++e) out.imag[e] = combine(out.imag[e], parts[j].imag[e]);
  }
  if (how == Reduce::kSum) {
    for (double& v : out.data) v = round_to_dtype(v, out.type.dtype, arithmetic);
    for (double& v : out.imag) v = round_to_dtype(v, out.type.dtype, arithmetic);
  }
  return out;
}

// Every member's chunk for this device, after each gave `chunks` (one per member, in order).
std::vector<Tensor> exchange_chunks(MeshTransport& transport, const std::string& what, const MeshGroup& g,
                                    const std::vector<Tensor>& chunks, Arithmetic arithmetic) {
  Bytes given, received;
  for (const Tensor& c : chunks) {
    const Bytes b = bytes_of(c, arithmetic);
    given.insert(given.end(), b.begin(), b.end());
  }
  const size_t chunk = given.size() / chunks.size();
  received.resize(given.size());
  transport.all_to_all(what, g.members, given.data(), chunk, received.data());
  std::vector<Tensor> parts;
  for (size_t k = 0; k < chunks.size(); ++k) parts.push_back(read_wire(chunks[0].type, received.data() + k * chunk, arithmetic));
  return parts;
}

// Every member's `mine`, in the group's order.
std::vector<Tensor> gather(MeshTransport& transport, const std::string& what, const MeshGroup& g, const Tensor& mine,
                           Arithmetic arithmetic) {
  const Bytes given = bytes_of(mine, arithmetic);
  Bytes received(given.size() * g.members.size());
  transport.all_gather(what, g.members, given.data(), given.size(), received.data());
  std::vector<Tensor> parts;
  for (size_t k = 0; k < g.members.size(); ++k) parts.push_back(read_wire(mine.type, received.data() + k * given.size(), arithmetic));
  return parts;
}

// The block `j` of `n` along `dim` of `t`.
Tensor block_along(const Tensor& t, size_t dim, int64_t n, int64_t j) {
  Type type = t.type;
  type.shape[dim] /= n;
  Tensor part = Tensor::filled(type, 0.0);
  std::vector<int64_t> at(type.shape.size(), 0);
  at[dim] = j * type.shape[dim];
  detail::copy_block(t, at, part, std::vector<int64_t>(at.size(), 0), type.shape);
  return part;
}

// psum, pmax, pmin as the reduce-scatter and all-gather an all-reduce is: each member reduces one
// chunk of the flattened operand over the group, in the group's order, then every member gathers
// every reduced chunk. Each device moves 2(n-1)/n of the operand, not n times it.
Tensor all_reduce(MeshTransport& transport, const std::string& what, const MeshGroup& g, const Tensor& x,
                  Reduce how, Arithmetic arithmetic) {
  const auto n = static_cast<int64_t>(g.members.size());
  const int64_t elements = x.type.num_elements();
  const int64_t per = (elements + n - 1) / n;
  const Tensor flat = flat_padded(x, n, per);
  std::vector<Tensor> chunks;
  for (int64_t k = 0; k < n; ++k) chunks.push_back(block_along(flat, 0, n, k));
  const Tensor reduced = reduce_in_order(exchange_chunks(transport, what, g, chunks, arithmetic), how, arithmetic);
  const std::vector<Tensor> all = gather(transport, what, g, reduced, arithmetic);
  Tensor out = x;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t e = 0; e < per && k * per + e < elements; ++e) {
      out.data[static_cast<size_t>(k * per + e)] = all[static_cast<size_t>(k)].data[static_cast<size_t>(e)];
      if (!out.imag.empty()) out.imag[static_cast<size_t>(k * per + e)] = all[static_cast<size_t>(k)].imag[static_cast<size_t>(e)];
    }
  return out;
}

// The device's position in ppermute's pairs: whom it sends to and hears from (-1: none), as
// device ids. A bad-input error for a pair off the axis.
std::pair<int64_t, int64_t> permute_peers(const Params& params, const MeshGroup& g) {
  const auto n = static_cast<int64_t>(g.members.size());
  int64_t to = -1, from = -1;
  for (const ParamValue& pair : params.find("perm")->items) {
    if (pair.items.size() != 2) fail("ppermute's perm holds (source, destination) pairs, found " + pair.str());
    const int64_t src = pair.items[0].integer, dst = pair.items[1].integer;
    if (src < 0 || src >= n || dst < 0 || dst >= n)
      fail("ppermute's pair " + pair.str() + " names a device its axis (" + std::to_string(n) + " devices) does not have");
    if (src == g.rank) to = g.members[static_cast<size_t>(dst)];
    if (dst == g.rank) from = g.members[static_cast<size_t>(src)];
  }
  return {to, from};
}

// psum, pmax, pmin of f32 as all_reduce computes them: each member's chunk of the others' summed in
// a double in the group's order, rounded to f32 once.
void all_reduce_f32(MeshTransport& transport, const std::string& what, const MeshGroup& g, const float* x,
                    int64_t elements, Reduce how, float* out) {
  const auto n = static_cast<int64_t>(g.members.size());
  const int64_t per = (elements + n - 1) / n;
  std::vector<float> given(static_cast<size_t>(n * per), 0.0f), received(given.size());
  std::copy(x, x + elements, given.begin());
  transport.all_to_all(what, g.members, given.data(), static_cast<size_t>(per) * sizeof(float), received.data());
  std::vector<float> reduced(static_cast<size_t>(per));
  for (int64_t e = 0; e < per; ++e) {
    double v = received[static_cast<size_t>(e)];
    for (int64_t k = 1; k < n; ++k) {
      const double w = received[static_cast<size_t>(k * per + e)];
      v = how == Reduce::kSum ? v + w : how == Reduce::kMax ? std::max(v, w) : std::min(v, w);
    }
    reduced[static_cast<size_t>(e)] = static_cast<float>(v);
  }
  std::vector<float>& all = given;  // reused: n * per floats
  transport.all_gather(what, g.members, reduced.data(), reduced.size() * sizeof(float), all.data());
  std::copy(all.begin(), all.begin() + elements, out);
}

// all_gather: member k's operand as block k along the dim, for each index of the dims before it.
void all_gather_bytes(MeshTransport& transport, const std::string& what, const MeshGroup& g, const std::byte* x,
                      const Type& type, int64_t dim, std::byte* out) {
  const auto n = static_cast<int64_t>(g.members.size());
  const auto bytes = static_cast<size_t>(type.bytes());
  std::vector<std::byte> all(bytes * static_cast<size_t>(n));
  transport.all_gather(what, g.members, x, bytes, all.data());
  int64_t outer = 1;
  for (int64_t d = 0; d < dim && d < type.rank(); ++d) outer *= type.shape[static_cast<size_t>(d)];
  const size_t inner = bytes / static_cast<size_t>(outer);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      std::copy_n(all.data() + static_cast<size_t>(k) * bytes + static_cast<size_t>(o) * inner, inner,
                  out + (static_cast<size_t>(o * n + k)) * inner);
}

bool whole_axes(const Params& params) {
  const ParamValue* groups = params.find("axis_index_groups");
  return !groups || groups->str() == "None";
}

}  // namespace

MeshTransport::~MeshTransport() = default;

bool run_device_collective_on_buffers(MeshTransport& transport, Prim prim, const Params& params, const void* operand,
                                      const Type& operand_type, void* out, const Type& out_type) {
  const bool reduction = (prim == Prim::kPsum || prim == Prim::kPmax || prim == Prim::kPmin) &&
                         operand_type.dtype == DType::kF32 && out_type.num_elements() == operand_type.num_elements();
  if (!operand || !(reduction || prim == Prim::kAllGather) || !whole_axes(params)) return false;
  const MeshGroup g = mesh_group(transport.mesh(), transport.device(), collective_axes(params, {}));
  const std::string what = what_of(prim, params, operand_type);
  if (reduction) {
    const Reduce how = prim == Prim::kPsum ? Reduce::kSum : prim == Prim::kPmax ? Reduce::kMax : Reduce::kMin;
    all_reduce_f32(transport, what, g, static_cast<const float*>(operand), operand_type.num_elements(), how,
                   static_cast<float*>(out));
    return true;
  }
  if (out_type.bytes() != operand_type.bytes() * static_cast<int64_t>(g.members.size())) return false;
  all_gather_bytes(transport, what, g, static_cast<const std::byte*>(operand), operand_type,
                   params.find("all_gather_dimension")->integer, static_cast<std::byte*>(out));
  return true;
}

Tensor split_to_device(const Mesh& mesh, int64_t device, const Params& params, const Tensor& whole, const Type& block) {
  return detail::local_collective(Prim::kShardMapIn, params, detail::DeviceView{mesh, device}, {&whole}, block);
}

Tensor run_device_collective(MeshTransport& transport, Prim prim, const Params& params, const Tensor* operand,
                             const Type& out_type, Arithmetic arithmetic) {
  const Mesh& mesh = transport.mesh();
  const detail::DeviceView device{mesh, transport.device()};
  if (!detail::needs_other_devices(prim, params))
    return detail::local_collective(prim, params, device, {operand}, out_type);
  const std::string what = what_of(prim, params, operand->type);
  if (prim == Prim::kShardMapOut) {  // the blocks of the value from the devices that hold them
    std::vector<std::string> named;
    for (const ParamValue& dim : params.find("dim_axes")->items)
      for (const ParamValue& a : dim.items) named.push_back(a.text);
    const MeshGroup g = mesh_group(mesh, device.device, named);
    const std::vector<Tensor> parts = gather(transport, what, g, *operand, arithmetic);
    std::vector<const Tensor*> all(static_cast<size_t>(mesh.num_devices()), nullptr);
    for (size_t k = 0; k < parts.size(); ++k) all[static_cast<size_t>(g.members[k])] = &parts[k];
    return detail::gathered_collective(prim, params, device, all, out_type);
  }
  const MeshGroup g = mesh_group(mesh, device.device, collective_axes(params, {}));
  const auto n = static_cast<int64_t>(g.members.size());
  if (prim == Prim::kPsum || prim == Prim::kPmax || prim == Prim::kPmin) {
    const Reduce how = prim == Prim::kPsum ? Reduce::kSum : prim == Prim::kPmax ? Reduce::kMax : Reduce::kMin;
    Tensor out = all_reduce(transport, what, g, *operand, how, arithmetic);
    out.type = out_type;
    return out;
  }
  if (prim == Prim::kPpermute) {  // from the device whose pair names this one; zeros if none does
    const auto [to, from] = permute_peers(params, g);
    const Bytes given = bytes_of(*operand, arithmetic);
    Bytes received(given.size());
    transport.permute(what, to, given.data(), from, received.data(), given.size());
    return from < 0 ? Tensor::filled(out_type, 0.0) : read_wire(out_type, received.data(), arithmetic);
  }
  if (prim == Prim::kReduceScatter || prim == Prim::kAllToAll) {
    // Block k along the split dim goes to member k: psum_scatter sums what arrives, in the group's
    // order; all_to_all lays it side by side along its concat dim.
    const auto split = static_cast<size_t>(params.find(prim == Prim::kAllToAll ? "split_axis" : "scatter_dimension")->integer);
    std::vector<Tensor> chunks;
    for (int64_t k = 0; k < n; ++k) chunks.push_back(block_along(*operand, split, n, k));
    const std::vector<Tensor> parts = exchange_chunks(transport, what, g, chunks, arithmetic);
    if (prim == Prim::kReduceScatter) {
      Tensor out = reduce_in_order(parts, Reduce::kSum, arithmetic);
      out.type = out_type;  // untiled: the scattered dim of size 1 dropped
      return out;
    }
    const auto concat = static_cast<size_t>(params.find("concat_axis")->integer);
    Tensor out = Tensor::filled(out_type, 0.0);
    for (int64_t j = 0; j < n; ++j) {
      std::vector<int64_t> to(out_type.shape.size(), 0);
      to[concat] = j * parts[0].type.shape[concat];
      detail::copy_block(parts[static_cast<size_t>(j)], std::vector<int64_t>(to.size(), 0), out, to, parts[0].type.shape);
    }
    return out;
  }
  // all_gather and pbroadcast: every member's operand, then what the collective makes of them.
  const std::vector<Tensor> parts = gather(transport, what, g, *operand, arithmetic);
  std::vector<const Tensor*> all(static_cast<size_t>(mesh.num_devices()), nullptr);
  for (size_t k = 0; k < parts.size(); ++k) all[static_cast<size_t>(g.members[k])] = &parts[k];
  return detail::gathered_collective(prim, params, device, all, out_type);
}

}  // namespace rematkit
