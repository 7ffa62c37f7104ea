// Using a pasted program as it is, with the changes a user asks for on the command line or in a
// sweep: which arguments to differentiate (jax.grad's argnums), another policy for the
// checkpoints it already has, its parameters split over a mesh axis.
#pragma once

#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

// The indices of the arguments `selection` names, each an argument's name or its index, in
// argument order without repeats. `what` names the option in errors ("--wrt", "wrt"): a name or
// index that is no argument, a non-floating argument, or an empty selection is bad input.
REMATKIT_CORE_EXPORT std::vector<size_t> argument_indices(const Program& program, const std::vector<std::string>& selection,
                                                          const std::string& what);

// `program` with the policy of every checkpoint in it (at any depth, inside calls, loop bodies and
// cond branches too) replaced by
// `spec`, the structure kept: "the same per-layer remat, another policy". `what` names the option
// in errors; a program without a checkpoint is bad input.
REMATKIT_CORE_EXPORT Program retarget_checkpoint_policies(const Program& program, const std::string& spec,
                                                          const std::string& what);

// `program` with each of `arguments` split over mesh axis `axis` of `size` devices, as FSDP splits
// parameters: a sharding_constraint on the argument, along its largest dim `size` divides (the
// first of equal ones); an argument no dim of which it divides stays whole.
REMATKIT_CORE_EXPORT Program split_arguments_over_axis(const Program& program, const std::vector<size_t>& arguments,
                                                       const std::string& axis, int64_t size);

}  // namespace rematkit
