// What a collective computes on one device from the operands it has (jax/_src/lax/parallel.py),
// and shard_map's split and join of whole values into devices' blocks. Internal to the
// interpreter: device_collective.cpp exchanges the operands and calls these.
#pragma once
#include <vector>

#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit::detail {

// A device of a mesh: its id, row-major over the mesh's axes.
struct DeviceView {
  const Mesh& mesh;
  int64_t device;
};

// Copies the block of `src` of shape `shape` at `src_at` into `dst` at `dst_at`.
void copy_block(const Tensor& src, const std::vector<int64_t>& src_at, Tensor& dst, const std::vector<int64_t>& dst_at,
                const Shape& shape);

// Whether `prim` reads other devices' operands (psum does; axis_index and shard_map_in do not).
bool needs_other_devices(Prim prim, const Params& params);

// A collective that needs only the device's own operand and place.
Tensor local_collective(Prim prim, const Params& params, const DeviceView& device, const std::vector<const Tensor*>& in,
                        const Type& out_type);

// shard_map_out, all_gather or pbroadcast given every member's operand (`all`, by device id; the
// others null). device_collective.cpp runs the rest on what it exchanges.
Tensor gathered_collective(Prim prim, const Params& params, const DeviceView& device,
                           const std::vector<const Tensor*>& all, const Type& out_type);

}  // namespace rematkit::detail
