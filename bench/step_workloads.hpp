// What step_timing times: the peers' MLP at their four sizes, or the sweep's transformer, each with
// the nominal flops the peers would count and the plain GEMM set beside it as a yardstick.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
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
  int64_t gemm_m = 0, gemm_k = 0, gemm_n = 0;  // the yardstick (m x k)(k x n)
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
  w.model.mlp = sweep::MlpModel{d, {f, f, f}, b, "relu", sweep::Remat::kPerLayer, {}};
  w.flops = 6.0 * static_cast<double>(b) * static_cast<double>(d * f + 2 * f * f);
  w.gemm_m = b, w.gemm_k = d, w.gemm_n = f;
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
  w.model.transformer.remat = sweep::Remat::kPerLayer;
  // Per block: four D x D projections, q k^T and p v over (B, H), the two MLP products.
  const double forward = static_cast<double>(l * b * s) * (8.0 * d * d + 4.0 * s * d + 4.0 * d * m);
  w.flops = 3 * forward;
  w.gemm_m = b * s, w.gemm_k = d, w.gemm_n = m;
  return w;
}

}  // namespace rematkit::bench
