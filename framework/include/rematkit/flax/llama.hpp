// A Llama-style language model traced as JAX traces a Flax/MaxText decoder: token embedding (a
// gather), pre-RMSNorm blocks of causal grouped-query attention with rotary position embeddings and
// a SwiGLU MLP, no biases, a final RMSNorm, an untied output head, and cross-entropy on integer
// targets; f32 or bf16 compute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/remat_placement.hpp"

namespace rematkit {

struct LlamaConfig {
  int64_t vocab = 64;
  int64_t sequence = 16;
  int64_t model = 32;     // embedding width; heads x head width
  int64_t heads = 4;      // query heads
  int64_t kv_heads = 2;   // key and value heads, dividing heads (grouped-query attention; = heads: multi-head)
  int64_t layers = 2;
  int64_t mlp = 86;       // the SwiGLU's hidden width (Llama: about 8/3 x model)
  int64_t batch = 2;
  // f32 or bf16: the params and every activation (RMSNorm's statistics included); the rotary
  // angles are computed in f32 and cast; the loss's mean is taken in f32.
  DType dtype = DType::kF32;
  RematPlacement remat = RematPlacement::kPerLayer;  // a checkpoint around each block
  // As GptConfig's: empty, the blocks unrolled; one length, nn.scan over the blocks (the checkpoint
  // inside the body with kPerLayer, around the scan with kWhole); several, nn.remat_scan.
  std::vector<int64_t> scan_lengths;
  // As GptConfig's: above 1, one device's share of the model split Megatron-style over a mesh axis
  // 'tensor': heads / tensor query heads and kv_heads / tensor key and value heads (q, k, v
  // columns), mlp / tensor hidden units (gate and up columns), o and down row-parallel with a psum
  // (named attention_summed and mlp_summed).
  int64_t tensor = 1;
};

// The model's program under `policy` (the checkpoints' policy), with its arguments: token ids
// i32[batch, sequence], targets i32[batch, sequence], then the params: the embedding [vocab, model];
// per block the attention's RMSNorm scale, q, k, v and o kernels, the MLP's RMSNorm scale, gate, up
// and down kernels; the final RMSNorm scale and the head [model, vocab] (normal(0.02) embedding and
// kernels, RMSNorm ones, drawn in f32 and rounded to the dtype), which Model::params lists; with
// ModelValues::kNone, none of the values. A bad-input Error for sizes that do not fit.
REMATKIT_FLAX_EXPORT Model build_llama(const LlamaConfig& config, const std::string& policy, uint64_t seed = 0,
                                       ModelValues values = ModelValues::kDrawn);

}  // namespace rematkit
