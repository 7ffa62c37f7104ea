// The models a sweep runs, made concrete for one policy: a program with its inputs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "rematkit/ir/program.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

struct ModelInstance {
  Program program;  // returns a scalar loss
  std::vector<Tensor> constants, arguments;
  // The arguments a training step updates (and the only ones differentiated): an MLP's params, a
  // program's floating arguments or those its `wrt` names.
  std::vector<size_t> trained;
  // For program models, the policy checkpoints the whole program (or, retargeted, replaces the
  // policies of its checkpoints); MLPs place it in their checkpoints.
  std::string whole_program_policy;
};

// An MLP is a Flax MLP (Dense layers, params drawn as Flax's init draws them from PRNGKey(seed)),
// with checkpoints as its `remat` says and the loss sum(MLP(x)); x is uniform in [-1, 1].
// A program model's arguments are uniform in [-1, 1] too. A MemoryLimitError, before they are drawn,
// when a program's inputs would take more than `max_memory` (nullopt: the available memory).
REMATKIT_SWEEP_EXPORT ModelInstance instantiate(const ModelSpec& model, const std::string& policy, uint64_t seed,
                                                std::optional<int64_t> max_memory = std::nullopt);

// A program model's instance before its `wrt`: `program` with its constants and arguments drawn in
// binder order, uniform in [-1, 1] (integer and bool ones zero) from `seed`, and every floating
// argument trained. `rematkit compare` runs on these inputs when it is given no inputs file.
REMATKIT_SWEEP_EXPORT ModelInstance program_instance(Program program, uint64_t seed,
                                                     std::optional<int64_t> max_memory = std::nullopt);

}  // namespace rematkit::sweep
