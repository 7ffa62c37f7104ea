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

// A model's program and what its step trains: all that printing the model, checking it, and
// planning or solving its step need. Nothing in it grows with the params' values.
struct ModelProgram {
  Program program;  // returns a scalar loss
  // The arguments a training step updates (and the only ones differentiated): an MLP's params, a
  // program's floating arguments or those its `wrt` names.
  std::vector<size_t> trained;
  // For program models, the policy checkpoints the whole program (or, retargeted, replaces the
  // policies of its checkpoints); MLPs place it in their checkpoints.
  std::string whole_program_policy;
};

// The program with its inputs drawn, as a sweep's steps run it.
struct ModelInstance : ModelProgram {
  std::vector<Tensor> constants, arguments;
};

// An MLP is a Flax MLP (Dense layers, params drawn as Flax's init draws them from PRNGKey(seed)),
// with checkpoints as its `remat` says and the loss sum(MLP(x)); x is uniform in [-1, 1].
// A program model's arguments are uniform in [-1, 1] too. A MemoryLimitError, before they are drawn,
// when a program's inputs would take more than `max_memory` (nullopt: the available memory).
REMATKIT_SWEEP_EXPORT ModelInstance instantiate(const ModelSpec& model, const std::string& policy, uint64_t seed,
                                                std::optional<int64_t> max_memory = std::nullopt);

// The program `instantiate` gives, and its trained arguments, without a value drawn (the params'
// types alone, as jax.eval_shape(model.init, ...) gives them): a 7B model's in seconds, in memory
// proportional to its program.
REMATKIT_SWEEP_EXPORT ModelProgram model_program(const ModelSpec& model, const std::string& policy);

// A program model's instance before its `wrt`: `program` with its constants and arguments drawn in
// binder order, uniform in [-1, 1] (integer and bool ones zero) from `seed`, and every floating
// argument trained. `rematkit compare` runs on these inputs when it is given no inputs file.
REMATKIT_SWEEP_EXPORT ModelInstance program_instance(Program program, uint64_t seed,
                                                     std::optional<int64_t> max_memory = std::nullopt);

}  // namespace rematkit::sweep
