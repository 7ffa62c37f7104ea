// A GPT-2 style language model traced as JAX traces its Flax definition: token embedding (a
// gather), learned positions, pre-LayerNorm blocks of causal multi-head attention (jax.nn.softmax's
// custom_jvp_call, the mask from iota) and a tanh-GELU MLP, optional dropout, the output projection
// tied to the embedding, and cross-entropy on integer targets; f32 or bf16 compute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/remat_placement.hpp"

namespace rematkit {

struct GptConfig {
  int64_t vocab = 64;
  int64_t sequence = 16;  // also the number of learned positions
  int64_t model = 32;     // embedding width; a multiple of heads
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t mlp = 128;      // the MLP's hidden width (4 x model in GPT-2)
  int64_t batch = 2;
  double dropout = 0.0;   // the rate of every dropout (embeddings, attention weights, residual branches)
  // f32 or bf16: the params (Flax's param_dtype) and every activation, LayerNorm's statistics and
  // the loss included (force_float32_reductions=False); the loss's mean is taken in f32.
  DType dtype = DType::kF32;
  RematPlacement remat = RematPlacement::kPerLayer;  // a checkpoint around each block
  // Empty: the blocks unrolled. One length (the layers): nn.scan over the blocks, their params
  // stacked [layers, ...] (`remat` puts the checkpoint inside the scan's body, or around the scan).
  // Several: nn.remat_scan(lengths=...), whose checkpoints replace `remat`'s. Not with dropout
  // (Flax's scan splits the dropout stream per block).
  std::vector<int64_t> scan_lengths;
  // Above 1: one device's share of the model split Megatron-style over `tensor` devices on a mesh
  // axis 'tensor', the body of parallel_step's shard_map: heads / tensor heads (their q, k and v
  // columns of c_attn) and mlp / tensor hidden units, the products back to the model's width
  // row-parallel, summed by a psum over 'tensor' before their biases and named attention_summed
  // and mlp_summed (checkpoint_name). Model::tensor_splits says how the whole model's params split.
  int64_t tensor = 1;
};

// The model's program under `policy` (the checkpoints' policy), with its arguments: token ids
// i32[batch, sequence], targets i32[batch, sequence], the dropout key (key<fry>[], only with
// dropout), then the params (normal(0.02) embeddings and kernels, zero biases, LayerNorm ones and
// zeros, drawn in f32 and rounded to the dtype), which Model::params lists; with ModelValues::kNone,
// none of the values. A bad-input Error for sizes that do not fit.
REMATKIT_FLAX_EXPORT Model build_gpt(const GptConfig& config, const std::string& policy, uint64_t seed = 0,
                                     ModelValues values = ModelValues::kDrawn);

}  // namespace rematkit
