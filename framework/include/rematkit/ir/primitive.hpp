// The primitives rematkit knows (the table in rematkit/plugin/primitive_table.hpp: Prim, names,
// operand counts, param schema, families) and their type rule: what each computes from its
// operand types and params.
#pragma once

#include <optional>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/plugin/primitive_table.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

struct Params;

// Output types of `prim` applied to `inputs`: the operand count and every param are checked
// against the table, then the primitive's type rule runs. A bad-input error at `where` if they
// do not fit. Call primitives (pjit, checkpoint) are checked by the verifier against their body.
REMATKIT_CORE_EXPORT std::vector<Type> infer_types(Prim prim, const Params& params, const std::vector<Type>& inputs,
                              const SourceLocation& where);

// Shape of lax's broadcasting binary op (equal, rank 0, or equal rank with size-1 dims), or nullopt.
REMATKIT_CORE_EXPORT std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace rematkit
