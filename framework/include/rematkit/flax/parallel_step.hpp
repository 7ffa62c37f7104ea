// A model's training step written for a mesh of devices, as a JAX user writes it with shard_map
// (jax/_src/shard_map.py): data parallelism over 'data', FSDP over 'fsdp', Megatron tensor
// parallelism over 'tensor'. Each device runs the model on its rows of the batch (split over data
// and fsdp; the devices along 'tensor' share rows). Under FSDP each param is split along its
// first dim over 'fsdp' and gathered where it is used: inside the checkpoint of the layer that
// uses it, named `gathered_<param>` (checkpoint_name), so that a policy keeps the gathered weights
// or gathers them again in the backward pass. Under tensor parallelism each device runs its share
// of the model (GptConfig::tensor), its params its pieces of the whole's (Model::tensor_splits). The
// loss is the mean over the devices' rows (a psum). The params' gradients are summed over the
// devices that share them by the transposes of the split, the gathers and the psums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

struct ParallelConfig {
  int64_t data = 1, fsdp = 1, tensor = 1;
  int64_t batch_shards() const { return data * fsdp; }  // the devices with rows of their own
  int64_t devices() const { return data * fsdp * tensor; }
};

// `per_device`: the model traced at one device's batch (and, with p.tensor > 1, as its share of
// the tensor-parallel model, whose `tensor_splits` say how each whole argument splits); `whole`:
// the same model at the whole batch (the step's arguments: each either a param, the same in both
// but for its tensor split, or data whose leading dim is the devices' rows put together). Under
// FSDP its per-layer checkpoints must be flat (layers unrolled, not scanned). A bad-input error
// naming the model otherwise, or where a size does not divide.
// A param the device's share takes in parts (Model::tensor_splits: the fused q, k, v kernel, [D, 3D]
// whole) is the step's argument seen in those parts, [D, 3, D]: the same values in the same order,
// so that each part can split over 'tensor' (as Megatron keeps q, k and v apart).
REMATKIT_FLAX_EXPORT Program parallel_step(const Program& per_device, const Program& whole, const ParallelConfig& p,
                                           const std::string& model, const std::vector<TensorSplit>& tensor_splits = {});

// The whole model's argument values as `step` (a parallel_step) takes them: a fused param in its
// parts, the same values.
REMATKIT_FLAX_EXPORT std::vector<Tensor> step_arguments(std::vector<Tensor> whole, const Program& step);

}  // namespace rematkit
