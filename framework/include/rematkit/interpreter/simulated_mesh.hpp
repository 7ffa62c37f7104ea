// A mesh of devices simulated in one process: each device's code runs on a thread of its own and
// the collectives it calls meet the other devices' at a rendezvous, moving the data a real
// collective moves (jax/_src/lax/parallel.py's semantics). The reference interpreter runs
// shard_map and pmap bodies on one, and step programs per device run there in one process
// (mesh_step_runner.hpp); its transport is the in-process MeshTransport.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit {

// Runs `device_code(d)` for every device d of `mesh` (ids row-major over its axes), each on its own
// thread, and returns when all have. The first error any device throws is rethrown; a device
// still waiting at a collective then stops with an error too, so no device waits forever (a
// device that leaves early, or calls a different collective than the others, is an error naming
// both).
REMATKIT_CORE_EXPORT void run_on_simulated_mesh(const Mesh& mesh, const std::function<void(int64_t device)>& device_code);

// The mesh and device the calling thread runs as, when it runs on a simulated mesh.
REMATKIT_CORE_EXPORT bool on_simulated_mesh();

// The calling device's transport, on a simulated mesh (on_simulated_mesh()).
REMATKIT_CORE_EXPORT MeshTransport& simulated_transport();

// One collective (or shard_map_in / shard_map_out) on the calling device: what the device gets,
// given what it gives. A bad-input error off a simulated mesh.
REMATKIT_CORE_EXPORT Tensor run_collective(Prim prim, const Params& params, const std::vector<const Tensor*>& in,
                                           const Type& out_type, Arithmetic arithmetic);

}  // namespace rematkit
