// A model's training step written for a mesh of devices, as a JAX user writes it with shard_map
// (jax/_src/shard_map.py): data parallelism over 'data', FSDP over 'fsdp'. Each device runs the
// model on its rows of the batch (split over both axes); under FSDP each param is split along its
// first dim over 'fsdp' and gathered whole where it is used: inside the checkpoint of the layer
// that uses it, named `gathered_<param>` (checkpoint_name), so that a policy keeps the gathered
// weights or gathers them again in the backward pass; the loss is the mean over the devices (a
// psum). The params' gradients are summed over the devices that share them by the transposes of
// the split and of the gathers (psum, psum_scatter).
#pragma once

#include <cstdint>

#include "rematkit/flax/export.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

struct ParallelConfig {
  int64_t data = 1, fsdp = 1;
  int64_t devices() const { return data * fsdp; }
};

// `per_device`: the model traced at one device's batch; `whole`: the same model at the whole
// batch (the step's arguments: each either a param, the same in both, or data whose leading dim
// is the devices' rows put together). Its per-layer checkpoints must be flat (layers unrolled,
// not scanned). A bad-input error naming the model otherwise, or where a size does not divide.
REMATKIT_FLAX_EXPORT Program parallel_step(const Program& per_device, const Program& whole, const ParallelConfig& p,
                                           const std::string& model);

}  // namespace rematkit
