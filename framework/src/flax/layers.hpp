// Flax's and jax.nn's elementwise, normalization, convolution and pooling layers, traced as JAX
// traces them. Shared by ModelBuilder's layers and the gpt model. Internal to rematkit::flax.
#pragma once

#include <functional>
#include <vector>

#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/ir/program_builder.hpp"

namespace rematkit::flax {

// nn.LayerNorm over the last axis with force_float32_reductions=False (statistics in x's dtype):
// var = max(0, E[x^2] - E[x]^2), (x - E[x]) * rsqrt(var + epsilon) * scale + bias.
Atom layer_norm(ProgramBuilder& b, Atom x, Atom scale, Atom bias, double epsilon = 1e-6);
// jax.nn.gelu: approximate, x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); exact,
// 0.5 x erfc(-x sqrt(1/2)).
Atom gelu(ProgramBuilder& b, Atom x, bool approximate);
// jax.nn.silu: x * sigmoid(x).
Atom silu(ProgramBuilder& b, Atom x);
// x reduced over its last axis, broadcast back with a 1 there (jnp's keepdims).
Atom keep_last(ProgramBuilder& b, Atom reduced, const Shape& like);
// jax.nn.softmax over the last axis: custom_jvp_call of _softmax(x, initial=-inf) with the body JAX
// 0.11 prints, max(reduce_max x, initial), exp(x - max), over its sum (differentiated by JAX's rule).
Atom softmax(ProgramBuilder& b, Atom x);
// nn.Dropout at `rate`: bernoulli(key folded with `site`, 1 - rate) as jax.random draws it (uniform
// from the top 23 of random_bits), then where(mask, x / (1 - rate), 0). Rate 0 returns x.
Atom dropout(ProgramBuilder& b, Atom x, Atom key, int64_t site, double rate);
// nn.Embed: jnp.take(table, ids, axis=0), a gather of rows (out-of-range ids give NaN rows, as
// jnp.take's fill mode does).
Atom embed(ProgramBuilder& b, Atom table, Atom ids);
// Causal multi-head self-attention's middle on qkv = c_attn(x), [B, S, 3D]: jnp.split into q, k, v,
// heads, q / sqrt(depth), q.k over the head dim, the causal mask from iota (finfo.min where
// masked), softmax, `on_weights` (dropout), weights.v; the heads merged back to [B, S, D].
Atom causal_attention(ProgramBuilder& b, Atom qkv, int64_t heads, const std::function<Atom(Atom)>& on_weights);
// The same from q [B, S, H, Dh] (already scaled by 1 / sqrt(Dh)) and k, v [B, S, K, Dh], K dividing
// H: grouped-query attention, each k and v head repeated for H / K query heads (jnp.repeat on the
// heads axis). Gives [B, S, H * Dh].
Atom causal_attention_heads(ProgramBuilder& b, Atom q, Atom k, Atom v, const std::function<Atom(Atom)>& on_weights);
// Output `output` of jnp.split(x, sizes, axis) (an equation for each output, as rematkit writes split).
Atom split_part(ProgramBuilder& b, Atom x, const std::vector<int64_t>& sizes, int64_t axis, int64_t output);
// nn.RMSNorm over the last axis (statistics in x's dtype): x * (rsqrt(E[x^2] + epsilon) * scale).
Atom rms_norm(ProgramBuilder& b, Atom x, Atom scale, double epsilon = 1e-6);
// Rotary position embeddings on x [B, S, H, Dh] at positions 0..S-1, as MaxText's embed_rotary
// (the split-halves form): timescale_i = max_timescale ** (2i / Dh), angle = position / timescale
// (computed in f32, then cast to x's dtype); with x = [x1, x2] split in halves, the result is
// [x1 cos - x2 sin, x2 cos + x1 sin].
Atom rotary(ProgramBuilder& b, Atom x, double max_timescale = 10000.0);

// padding='SAME' as lax.padtype_to_pads resolves it for `in` elements, a `window` and a `stride`:
// ceil(in / stride) outputs, the padding they need split with the odd element at the end.
PadPair same_padding(int64_t in, int64_t window, int64_t stride);
// nn.Conv's apply on x [batch, spatial..., features] (NHWC): conv_general_dilated with
// dimension_numbers lhs NHWC, rhs HWIO, out NHWC (flax's _conv_dimension_numbers), padding 'SAME'
// as the explicit pairs JAX prints, `stride` in every spatial dim, then + bias reshaped to rank.
Atom conv(ProgramBuilder& b, Atom x, Atom kernel, Atom bias, int64_t stride);
// jnp.mean over the spatial dims of [batch, spatial..., features]: reduce_sum, then a divide by
// their size (global average pooling, as Flax's ResNet ends).
Atom spatial_mean(ProgramBuilder& b, Atom x);

}  // namespace rematkit::flax
