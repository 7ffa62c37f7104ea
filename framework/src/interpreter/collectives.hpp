// What each collective computes on one device from every device's operand (jax/_src/lax/
// parallel.py), and shard_map's split and join of whole values into devices' blocks. Internal to
// the interpreter: simulated_mesh.cpp hands each device the operands.
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

// Whether `prim` reads other devices' operands (psum does; axis_index and shard_map_in do not).
bool needs_other_devices(Prim prim, const Params& params);

// A collective that needs only the device's own operand and place.
Tensor local_collective(Prim prim, const Params& params, const DeviceView& device, const std::vector<const Tensor*>& in,
                        const Type& out_type);

// A collective given every device's operand (`all`, by device id).
Tensor gathered_collective(Prim prim, const Params& params, const DeviceView& device,
                           const std::vector<const Tensor*>& all, const Type& out_type, Arithmetic arithmetic);

}  // namespace rematkit::detail
