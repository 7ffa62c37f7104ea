// One device's part of a collective (jax/_src/lax/parallel.py) or of shard_map's split and join
// of a value into devices' blocks: what the device gets, given what it gives, the other devices'
// operands reaching it through a MeshTransport. The reference interpreter's simulated mesh and the
// step executor on any mesh run their collectives here, so both give the same bits.
#pragma once

#include "rematkit/core_export.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/ir/params.hpp"

namespace rematkit {

// `operand`: the device's operand (null for axis_index). Reductions add the members' operands in
// the group's order, rounding as `arithmetic` says, so every device of a group gets the same bits.
REMATKIT_CORE_EXPORT Tensor run_device_collective(MeshTransport& transport, Prim prim, const Params& params,
                                                  const Tensor* operand, const Type& out_type, Arithmetic arithmetic);

// The same on the device's buffers, for what needs no arithmetic beyond f32's or none at all:
// psum, pmax and pmin of f32, all_gather of any dtype (the same bits as run_device_collective in
// f32, without a tensor of doubles between). False, having done nothing: another collective.
REMATKIT_CORE_EXPORT bool run_device_collective_on_buffers(MeshTransport& transport, Prim prim, const Params& params,
                                                           const void* operand, const Type& operand_type, void* out,
                                                           const Type& out_type);

// The block of `whole` that `device` of `mesh` holds, as a shard_map_in with `params` splits it
// (`block`: its type); nothing is exchanged.
REMATKIT_CORE_EXPORT Tensor split_to_device(const Mesh& mesh, int64_t device, const Params& params, const Tensor& whole,
                                            const Type& block);

}  // namespace rematkit
