// The transpose rules of the collectives and of a shard_map's split and join. Each device's
// cotangent is the exact transpose of what the device computed (jax/_src/lax/parallel.py:
// psum's is psum, all_gather's reduce_scatter, ppermute's the inverse permutation), and a value
// outside a shard_map holds the whole cotangent on every device, as shard_map.py's
// _shard_map_transpose has it when no replication checks rewrite the body: a result's
// cotangent is shared out over the mesh axes its spec leaves out, an operand's summed over them.
#pragma once

#include "emitter.hpp"

namespace rematkit::autodiff {

// The cotangent of a collective's (or shard_map_in's, shard_map_out's) operand given its
// result's `ct`; `operand` is the operand's type.
ValueId collective_transpose(Emitter& em, Prim prim, const Params& params, ValueId ct, const Type& operand);

}  // namespace rematkit::autodiff
