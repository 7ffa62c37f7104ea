// What step_timing times: the peers' MLP at their four sizes, the sweep's transformer, gpt or CNN,
// each with the nominal flops the peers would count and, where one product stands for the model, the
// plain GEMM set beside it as a yardstick.
#pragma once
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rematkit/sweep/sweep_config.hpp"

namespace rematkit::bench {

struct Workload {
  std::string label;  // "(B, D, F)" or "transformer (L, B, S, D, H, M)", for the table
  nlohmann::json keys;  // the same as JSON fields, first in every row
  sweep::ModelSpec model;
  // Nominal flops of a step, 3 x the forward's products (backward = 2 x forward), as the peers
  // count them: more than a step runs, since the data gets no gradient, but the same for every
  // policy and every peer.
  double flops = 0;
  int64_t gemm_m = 0, gemm_k = 0, gemm_n = 0;  // the yardstick (m x k)(k x n); all 0: none
  // The same computation written another way, timed beside `model` (each policy named
  // "POLICY, <first>"): the scanned MLP beside the unrolled one.
  std::vector<std::pair<std::string, sweep::ModelSpec>> also;
  bool has_gemm() const { return gemm_m > 0 && gemm_k > 0 && gemm_n > 0; }
};

// The peers' sizes (../shared/peers, training_step_bench.cpp), by index 0 to 3: Dense(D,F) -> relu
// -> Dense(F,F) -> relu -> Dense(F,F) on x f32[B,D], a checkpoint per layer; the yardstick is the
// first layer's (B x D)(D x F).
inline Workload mlp_workload(int index) {
  static const int64_t kSizes[][3] = {{1, 64, 64}, {32, 512, 512}, {256, 1024, 1024}, {1024, 2048, 2048}};
  if (index < 0 || index > 3) throw std::invalid_argument("MLP sizes are 0 to 3");
  const int64_t b = kSizes[index][0], d = kSizes[index][1], f = kSizes[index][2];
  Workload w;
  w.label = "(" + std::to_string(b) + ", " + std::to_string(d) + ", " + std::to_string(f) + ")";
  w.keys = {{"model", "mlp"}, {"B", b}, {"D", d}, {"F", f}};
  w.model.name = "mlp";
  w.model.mlp = sweep::MlpModel{d, {f, f, f}, b, "relu", RematPlacement::kPerLayer, {}};
  w.flops = 6.0 * static_cast<double>(b) * static_cast<double>(d * f + 2 * f * f);
  w.gemm_m = b, w.gemm_k = d, w.gemm_n = f;
  return w;
}

// sqrt_n_sweep.yaml's MLP: `depth` Dense(W,W) -> tanh layers on x f32[B,W], no checkpoint,
// unrolled and (beside it) scanned as nn.scan writes it; what the scan's rows cost. The yardstick is
// a layer's (B x W)(W x W).
inline Workload scanned_mlp_workload(const std::vector<int64_t>& c) {
  if (c.size() != 3 || c[0] < 1 || c[1] < 1 || c[2] < 1) throw std::invalid_argument("--scanned-mlp takes DEPTH,WIDTH,BATCH (positive)");
  const int64_t depth = c[0], width = c[1], batch = c[2];
  Workload w;
  w.label = "mlp (" + std::to_string(depth) + ", " + std::to_string(width) + ", " + std::to_string(batch) + ")";
  w.keys = {{"model", "mlp"}, {"depth", depth}, {"W", width}, {"B", batch}};
  w.model.name = "mlp";
  w.model.mlp = sweep::MlpModel{width, std::vector<int64_t>(static_cast<size_t>(depth), width), batch, "tanh", RematPlacement::kNone, {}};
  sweep::ModelSpec scanned = w.model;
  scanned.mlp.loop.kind = sweep::LayerLoop::Kind::kScan;
  w.also.emplace_back("scanned", scanned);
  w.flops = 6.0 * static_cast<double>(batch * depth * width * width);
  w.gemm_m = batch, w.gemm_k = width, w.gemm_n = width;
  return w;
}

// The sweep's `transformer:` model (blocks of x + attention(x), x + W2 relu(W1 x); the peers'
// torch_transformer.py) from L,B,S,D,H,M; the yardstick is a block's (B*S x D)(D x M).
inline Workload transformer_workload(const std::vector<int64_t>& c) {
  if (c.size() != 6) throw std::invalid_argument("--transformer takes L,B,S,D,H,M");
  const int64_t l = c[0], b = c[1], s = c[2], d = c[3], h = c[4], m = c[5];
  if (h <= 0 || d % h) throw std::invalid_argument("--transformer: D must be a multiple of H");
  Workload w;
  w.label = "transformer (" + std::to_string(l) + ", " + std::to_string(b) + ", " + std::to_string(s) + ", " +
            std::to_string(d) + ", " + std::to_string(h) + ", " + std::to_string(m) + ")";
  w.keys = {{"model", "transformer"}, {"L", l}, {"B", b}, {"S", s}, {"D", d}, {"H", h}, {"M", m}};
  w.model.name = "transformer";
  w.model.kind = sweep::ModelSpec::Kind::kTransformer;
  w.model.transformer.layers = l, w.model.transformer.batch = b, w.model.transformer.sequence = s;
  w.model.transformer.model = d, w.model.transformer.heads = h, w.model.transformer.mlp = m;
  w.model.transformer.remat = RematPlacement::kPerLayer;
  // Per block: four D x D projections, q k^T and p v over (B, H), the two MLP products.
  const double forward = static_cast<double>(l * b * s) * (8.0 * d * d + 4.0 * s * d + 4.0 * d * m);
  w.flops = 3 * forward;
  w.gemm_m = b * s, w.gemm_k = d, w.gemm_n = m;
  return w;
}

// A field of a model's spec as a count of at least 0; `usage` is the error otherwise.
inline int64_t spec_count(const std::string& field, const std::string& usage) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(field, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(usage);
  }
  if (used != field.size() || v < 0) throw std::invalid_argument(usage);
  return v;
}

// sweep/default_sweep.yaml's gpt-small, and bench/peers/torch_gpt.py's default config (its
// dropout, 0.1, is the default sweep's too).
inline constexpr const char* kDefaultGpt = "2,2,32,64,4,128";
inline constexpr double kGptDropout = 0.1;

// The sweep's `gpt:` model (flax/gpt.hpp's GPT-2: embeddings, pre-LayerNorm blocks of causal
// attention and a gelu MLP, the head tied to the embedding, mean cross-entropy; dropout 0.1 at
// the embeddings, the attention weights and both residual branches; a checkpoint per block) from
// torch_gpt.py's L,B,S,D,H,V[,M] (M: 4*D when left out, as the sweep's `mlp:` default), or
// "default". The yardstick is a block's (B*S x D)(D x M).
inline Workload gpt_workload(const std::string& spec) {
  const std::string text = spec == "default" ? kDefaultGpt : spec;
  const std::string usage = "--gpt takes L,B,S,D,H,V[,M] (positive integers, H dividing D) or 'default', not '" + spec + "'";
  std::vector<int64_t> c;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');) {
    c.push_back(spec_count(f, usage));
    if (c.back() < 1) throw std::invalid_argument(usage);
  }
  if ((c.size() != 6 && c.size() != 7) || text.back() == ',' || c[3] % c[4] != 0) throw std::invalid_argument(usage);
  const int64_t l = c[0], b = c[1], s = c[2], d = c[3], h = c[4], v = c[5], m = c.size() == 7 ? c[6] : 4 * d;
  Workload w;
  w.label = "gpt (" + std::to_string(l) + ", " + std::to_string(b) + ", " + std::to_string(s) + ", " + std::to_string(d) +
            ", " + std::to_string(h) + ", " + std::to_string(v) + ", " + std::to_string(m) + ")";
  w.keys = {{"model", "gpt"}, {"L", l}, {"B", b}, {"S", s}, {"D", d}, {"H", h}, {"V", v}, {"M", m}, {"dropout", kGptDropout}};
  w.model.name = "gpt";
  w.model.kind = sweep::ModelSpec::Kind::kGpt;
  sweep::GptModel& g = w.model.gpt;
  g.layers = l, g.batch = b, g.sequence = s, g.model = d, g.heads = h, g.mlp = m, g.vocab = v;
  g.dropout = kGptDropout;
  g.remat = RematPlacement::kPerLayer;
  // The products torch_gpt.py counts: per block the fused qkv projection (3 D^2), the output
  // projection (D^2), q k^T and p v, the two MLP products; then the tied head (D x V) per token.
  const double tokens = static_cast<double>(b * s);
  const double forward = tokens * (static_cast<double>(l) * (8.0 * d * d + 4.0 * s * d + 4.0 * d * m) + 2.0 * d * v);
  w.flops = 3 * forward;
  w.gemm_m = b * s, w.gemm_k = d, w.gemm_n = m;
  return w;
}

// bench/peers/torch_llama.py's default config: the sweep's small sizes, 2 kv heads.
inline constexpr const char* kDefaultLlama = "2,2,32,64,4,2,128";

// The sweep's `llama:` model (flax/llama.hpp: RMSNorm, rotary embeddings, grouped-query attention,
// SwiGLU, an untied head; a checkpoint per block; no dropout) from torch_llama.py's
// L,B,S,D,H,K,V[,M] (M: the sweep's default, 8/3 x D rounded up to a multiple of 8), or "default".
// The yardstick is a block's (B*S x D)(D x M).
inline Workload llama_workload(const std::string& spec) {
  const std::string text = spec == "default" ? kDefaultLlama : spec;
  const std::string usage = "--llama takes L,B,S,D,H,K,V[,M] (positive integers, D = H x an even width, K dividing H) or "
                            "'default', not '" + spec + "'";
  std::vector<int64_t> c;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');) {
    c.push_back(spec_count(f, usage));
    if (c.back() < 1) throw std::invalid_argument(usage);
  }
  if ((c.size() != 7 && c.size() != 8) || text.back() == ',' || c[3] % c[4] != 0 || (c[3] / c[4]) % 2 != 0 || c[4] % c[5] != 0)
    throw std::invalid_argument(usage);
  const int64_t l = c[0], b = c[1], s = c[2], d = c[3], h = c[4], k = c[5], v = c[6];
  const int64_t m = c.size() == 8 ? c[7] : (8 * d / 3 + 7) / 8 * 8;
  Workload w;
  w.label = "llama (" + std::to_string(l) + ", " + std::to_string(b) + ", " + std::to_string(s) + ", " + std::to_string(d) +
            ", " + std::to_string(h) + ", " + std::to_string(k) + ", " + std::to_string(v) + ", " + std::to_string(m) + ")";
  w.keys = {{"model", "llama"}, {"L", l}, {"B", b}, {"S", s}, {"D", d}, {"H", h}, {"K", k}, {"V", v}, {"M", m}};
  w.model.name = "llama";
  w.model.kind = sweep::ModelSpec::Kind::kLlama;
  sweep::LlamaModel& g = w.model.llama;
  g.layers = l, g.batch = b, g.sequence = s, g.model = d, g.heads = h, g.kv_heads = k, g.mlp = m, g.vocab = v;
  g.remat = RematPlacement::kPerLayer;
  // Per block: q and o (D^2 each), k and v (D x K*Dh each), q k^T and p v, the three MLP
  // products; then the head (D x V) per token.
  const double kd = static_cast<double>(k * (d / h));
  const double tokens = static_cast<double>(b * s);
  const double forward = tokens * (static_cast<double>(l) * (4.0 * d * d + 4.0 * d * kd + 4.0 * s * d + 6.0 * d * m) + 2.0 * d * v);
  w.flops = 3 * forward;
  w.gemm_m = b * s, w.gemm_k = d, w.gemm_n = m;
  return w;
}

// examples/cnn_sweep.yaml's model, and bench/peers/torch_cnn.py's default config.
inline constexpr const char* kDefaultCnn = "8,16,3,16/32,1,10";

// The sweep's `cnn:` model (sweep_models.cpp's cnn_instance: a ModelBuilder resnet_block per width,
// each after the first at stride 2 when downsampling, global average pooling, Dense(K), loss
// sum(y^2), a checkpoint per block) from torch_cnn.py's B,I,C,W1/W2/..,D,K (batch, image size,
// channels, block widths, downsample 0 or 1, classes), or "default". No yardstick: no one product
// stands for the model (its convolutions are not GEMMs on every backend).
inline Workload cnn_workload(const std::string& spec) {
  const std::string text = spec == "default" ? kDefaultCnn : spec;
  const std::string usage = "--cnn takes B,I,C,W1/W2/..,D,K (D: downsample 0 or 1) or 'default', not '" + spec + "'";
  std::vector<std::string> fields;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  if (fields.size() != 6) throw std::invalid_argument(usage);
  auto number = [&](const std::string& f) { return spec_count(f, usage); };
  const int64_t b = number(fields[0]), image = number(fields[1]), c = number(fields[2]), k = number(fields[5]);
  const int64_t d = number(fields[4]);
  std::vector<int64_t> widths;
  std::stringstream ws(fields[3]);
  for (std::string f; std::getline(ws, f, '/');) widths.push_back(number(f));
  if (b < 1 || image < 1 || c < 1 || k < 1 || d > 1 || widths.empty() ||
      std::find(widths.begin(), widths.end(), 0) != widths.end() || fields[3].back() == '/')
    throw std::invalid_argument(usage);

  Workload w;
  std::string widths_text;
  for (int64_t v : widths) widths_text += (widths_text.empty() ? "" : "/") + std::to_string(v);
  w.label = "cnn (" + std::to_string(b) + ", " + std::to_string(image) + ", " + std::to_string(c) + ", " + widths_text + ", " +
            std::to_string(d) + ", " + std::to_string(k) + ")";
  w.keys = {{"model", "cnn"}, {"B", b}, {"I", image}, {"C", c}, {"widths", widths}, {"downsample", d == 1}, {"K", k}};
  w.model.name = "cnn";
  w.model.kind = sweep::ModelSpec::Kind::kCnn;
  w.model.cnn = sweep::CnnModel{b, image, c, k, widths, d == 1, RematPlacement::kPerLayer};
  // Multiply-adds of the forward, as torch_cnn.py's conv_flops counts them: per block two 3x3 convs
  // (the first at the block's stride) and a 1x1 projection where the shape changes; SAME padding,
  // so a stride-2 output is ceil(size / 2); then the head's (B x W)(W x K). Biases, relus, the mean
  // and the loss left out.
  double macs = 0;
  int64_t size = image, in_channels = c;
  for (size_t i = 0; i < widths.size(); ++i) {
    const int64_t stride = d == 1 && i > 0 ? 2 : 1, width = widths[i];
    const int64_t out = (size + stride - 1) / stride;
    const double pixels = static_cast<double>(b * out * out);
    macs += pixels * 9.0 * static_cast<double>(in_channels * width + width * width);
    if (stride != 1 || in_channels != width) macs += pixels * static_cast<double>(in_channels * width);
    size = out, in_channels = width;
  }
  macs += static_cast<double>(b * in_channels * k);
  w.flops = 3 * 2 * macs;
  return w;
}

}  // namespace rematkit::bench
