// A stack of transformer blocks without normalisation (the sweep's `transformer:` model, and the
// peers' torch_transformer.py): x + attention(x), then x + W2 relu(W1 x), on x f32[batch, sequence,
// model]. Attention is written with batched dot_general over (batch, head), so dots_saveable and
// dots_with_no_batch_dims_saveable differ; the loss is sum(output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/remat_placement.hpp"

namespace rematkit {

struct TransformerConfig {
  int64_t layers = 2;
  int64_t batch = 2;
  int64_t sequence = 16;
  int64_t model = 32;  // a multiple of heads
  int64_t heads = 4;
  int64_t mlp = 128;   // the MLP's hidden width
  RematPlacement remat = RematPlacement::kPerLayer;  // a checkpoint around each block
  // As GptConfig's: empty, the blocks unrolled; one length (the layers), nn.scan over the blocks
  // with their params stacked [layers, ...]; several, nn.remat_scan, whose checkpoints replace `remat`'s.
  std::vector<int64_t> scan_lengths;
};

// The model's program under `policy` (the checkpoints' policy), with its arguments: x, then per
// block Wq, Wk, Wv, Wo [model, model], W1 [model, mlp] and W2 [mlp, model], which Model::params
// lists (scanned: each weight once, stacked [lengths..., ...] in block order). x is uniform in
// [-1, 1) and the weights uniform in +-1/sqrt(fan_in), drawn in that order from one
// std::mt19937_64(seed), so a scanned model holds the unrolled one's values. With
// ModelValues::kNone, none of the values. A bad-input Error for sizes that do not fit.
REMATKIT_FLAX_EXPORT Model build_transformer(const TransformerConfig& config, const std::string& policy, uint64_t seed = 0,
                                             ModelValues values = ModelValues::kDrawn);

}  // namespace rematkit
