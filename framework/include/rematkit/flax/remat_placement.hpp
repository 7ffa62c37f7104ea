// Where a model's checkpoints go, for every model the Flax builders and the sweep build.
#pragma once

namespace rematkit {

// nn.remat around each layer (a Dense and its activation, a ResNet block, a transformer block),
// around all of them at once, or nowhere. Under nn.scan, kPerLayer puts the checkpoint inside the
// scan's body (nn.scan(nn.remat(layer))) and kWhole around the scan.
enum class RematPlacement { kNone, kPerLayer, kWhole };

}  // namespace rematkit
