// The type rules of the collectives (jax/_src/lax/parallel.py's abstract evals: a device's block
// in, a device's block out) and of shard_map_in/shard_map_out, the split and the join of a
// shard_map operand and result.
#pragma once
#include <vector>

#include "rematkit/ir/params.hpp"
#include "rematkit/ir/primitive.hpp"

namespace rematkit {

Type collective_result(Prim prim, const Params& params, const std::vector<Type>& in, const SourceLocation& where);

}  // namespace rematkit
