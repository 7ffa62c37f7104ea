#include "rematkit/flax/transformer.hpp"

#include <cmath>
#include <random>

#include "rematkit/flax/layer_scan.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/program_builder.hpp"

namespace rematkit {
namespace {

// A block's weights in the order they are arguments: Wq, Wk, Wv, Wo (D x D), W1 (D x F), W2 (F x D).
constexpr size_t kParamsPerBlock = 6;

std::vector<Type> block_types(const TransformerConfig& t) {
  auto matrix = [](int64_t rows, int64_t cols) { return Type{DType::kF32, {rows, cols}, MemorySpace::kDevice}; };
  return {matrix(t.model, t.model), matrix(t.model, t.model), matrix(t.model, t.model),
          matrix(t.model, t.model), matrix(t.model, t.mlp),   matrix(t.mlp, t.model)};
}

Type input_type(const TransformerConfig& t) { return Type{DType::kF32, {t.batch, t.sequence, t.model}, MemorySpace::kDevice}; }

// dot_general with these contracting (and batch) dims.
Params dot(std::vector<int64_t> lhs_contract, std::vector<int64_t> rhs_contract, std::vector<int64_t> lhs_batch = {},
           std::vector<int64_t> rhs_batch = {}) {
  return dot_general_params(DotDims{std::move(lhs_contract), std::move(rhs_contract), std::move(lhs_batch), std::move(rhs_batch)});
}

// x + attention(x), then x + W2 relu(W1 x), on x:f32[B,S,D] with `w` the block's weights.
Atom transformer_block(ProgramBuilder& b, const TransformerConfig& t, Atom x, const std::vector<Atom>& w) {
  const int64_t head_dim = t.model / t.heads;
  auto heads = [&](Atom projected) {  // [B,S,D] -> [B,H,S,Dh]
    const Atom split = b.emit1(Prim::kReshape, {projected}, reshape_params({t.batch, t.sequence, t.heads, head_dim}));
    return b.emit1(Prim::kTranspose, {split}, transpose_params({0, 2, 1, 3}));
  };
  const Atom q = heads(b.emit1(Prim::kDotGeneral, {x, w[0]}, dot({2}, {0})));
  const Atom k = heads(b.emit1(Prim::kDotGeneral, {x, w[1]}, dot({2}, {0})));
  const Atom v = heads(b.emit1(Prim::kDotGeneral, {x, w[2]}, dot({2}, {0})));
  const Atom scores = b.emit1(Prim::kMul, {b.emit1(Prim::kDotGeneral, {q, k}, dot({3}, {3}, {0, 1}, {0, 1})),
                                           ProgramBuilder::literal(1.0 / std::sqrt(static_cast<double>(head_dim)))});
  const Atom probs = b.emit1(Prim::kSoftmax, {scores}, softmax_params(3));
  const Atom context = b.emit1(Prim::kDotGeneral, {probs, v}, dot({3}, {2}, {0, 1}, {0, 1}));  // [B,H,S,Dh]
  const Atom merged = b.emit1(Prim::kReshape, {b.emit1(Prim::kTranspose, {context}, transpose_params({0, 2, 1, 3}))},
                              reshape_params({t.batch, t.sequence, t.model}));
  const Atom x1 = b.emit1(Prim::kAdd, {x, b.emit1(Prim::kDotGeneral, {merged, w[3]}, dot({2}, {0}))});
  const Atom hidden = b.emit1(Prim::kRelu, {b.emit1(Prim::kDotGeneral, {x1, w[4]}, dot({2}, {0}))});
  return b.emit1(Prim::kAdd, {x1, b.emit1(Prim::kDotGeneral, {hidden, w[5]}, dot({2}, {0}))});
}

// The name of block l's weight i, in the program and in a checkpoint's body.
std::string weight_name(int64_t l, size_t i) { return "w" + std::to_string(l) + "_" + std::to_string(i); }

// Blocks [first, last) traced into `b` on x, their weights `w` (those blocks' own, in order).
Atom blocks(ProgramBuilder& b, const TransformerConfig& t, Atom x, const std::vector<Atom>& w, int64_t first, int64_t last) {
  for (int64_t l = first; l < last; ++l) {
    const auto begin = w.begin() + (l - first) * static_cast<int64_t>(kParamsPerBlock);
    x = transformer_block(b, t, x, std::vector<Atom>(begin, begin + static_cast<int64_t>(kParamsPerBlock)));
  }
  return x;
}

// A checkpoint over blocks [first, last), as jax.checkpoint(f, policy=...) stages it: x and the
// blocks' weights its operands, named in its body as they are named outside.
Atom checkpointed(ProgramBuilder& outer, const TransformerConfig& t, const std::string& policy, Atom x,
                  const std::vector<Atom>& w, int64_t first, int64_t last) {
  ProgramBuilder inner;
  const Atom inner_x = inner.argument("x", input_type(t));
  const std::vector<Type> types = block_types(t);
  std::vector<Atom> inner_w;
  for (int64_t l = first; l < last; ++l)
    for (size_t i = 0; i < kParamsPerBlock; ++i) inner_w.push_back(inner.argument(weight_name(l, i), types[i]));
  const Atom out = blocks(inner, t, inner_x, inner_w, first, last);
  Params params;
  params.set("policy", parse_param_value(policy, "policy"));
  params.set("prevent_cse", ParamValue::of_bool(true));
  std::vector<Atom> operands{x};
  operands.insert(operands.end(), w.begin(), w.end());
  return outer.call(Prim::kCheckpoint, inner.finish({out}), operands, params).at(0);
}

// x uniform in [-1, 1), then every block's weights in block order, uniform in +-1/sqrt(fan_in) so
// that activations stay O(1); all from one generator.
std::vector<Tensor> draw_values(const TransformerConfig& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto uniform = [&](const Type& type) {
    Tensor value{type, std::vector<double>(static_cast<size_t>(type.num_elements()))};
    for (double& v : value.data) v = dist(rng);
    return value;
  };
  std::vector<Tensor> values{uniform(input_type(t))};
  const std::vector<Type> types = block_types(t);
  for (int64_t l = 0; l < t.layers; ++l)
    for (const Type& type : types) {
      Tensor weight = uniform(type);
      const double fan_in = static_cast<double>(type.shape[0]);
      for (double& v : weight.data) v = static_cast<float>(v / std::sqrt(fan_in));
      values.push_back(std::move(weight));
    }
  return values;
}

// The blocks unrolled: x, then each block's weights as arguments of their own.
Model unrolled(const TransformerConfig& t, const std::string& policy) {
  Model model;
  ProgramBuilder b;
  const Atom x = b.argument("x", input_type(t));
  const std::vector<Type> types = block_types(t);
  std::vector<Atom> w;
  for (int64_t l = 0; l < t.layers; ++l)
    for (size_t i = 0; i < kParamsPerBlock; ++i) {
      w.push_back(b.argument(weight_name(l, i), types[i]));
      model.params.push_back(w.size());  // after x
    }
  Atom y = x;
  if (t.remat == RematPlacement::kNone) {
    y = blocks(b, t, x, w, 0, t.layers);
  } else if (t.remat == RematPlacement::kWhole) {
    y = checkpointed(b, t, policy, x, w, 0, t.layers);
  } else {
    const auto per_block = static_cast<int64_t>(kParamsPerBlock);
    for (int64_t l = 0; l < t.layers; ++l)
      y = checkpointed(b, t, policy, y, std::vector<Atom>(w.begin() + l * per_block, w.begin() + (l + 1) * per_block), l, l + 1);
  }
  model.program = b.finish({b.emit1(Prim::kReduceSum, {y}, reduce_params({0, 1, 2}))});
  return model;
}

// The blocks scanned: x, then each weight once, stacked [lengths..., ...] in block order.
Model scanned(const TransformerConfig& t, const std::string& policy) {
  Model model;
  ProgramBuilder b;
  const Atom x = b.argument("x", input_type(t));
  const std::vector<Type> types = block_types(t);
  std::vector<Atom> stacked;
  for (size_t i = 0; i < kParamsPerBlock; ++i) {
    Type type = types[i];
    type.shape.insert(type.shape.begin(), t.scan_lengths.begin(), t.scan_lengths.end());
    stacked.push_back(b.argument("w_" + std::to_string(i), type));
    model.params.push_back(1 + i);  // after x
  }
  const LayerFn block = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) { return transformer_block(into, t, h, p); };
  const Atom out = scan_with_remat(b, x, stacked, t.scan_lengths, policy, t.remat, block);
  model.program = b.finish({b.emit1(Prim::kReduceSum, {out}, reduce_params({0, 1, 2}))});
  return model;
}

// The unrolled values stacked as `scanned` takes them: x, then weight i of every block in turn.
std::vector<Tensor> stacked_values(const TransformerConfig& t, std::vector<Tensor> values) {
  std::vector<Tensor> stacked{std::move(values[0])};
  for (size_t i = 0; i < kParamsPerBlock; ++i) {
    Type type = values[1 + i].type;
    type.shape.insert(type.shape.begin(), t.scan_lengths.begin(), t.scan_lengths.end());
    Tensor weight{type, {}};
    for (int64_t l = 0; l < t.layers; ++l) {
      const Tensor& layer_weight = values[1 + static_cast<size_t>(l) * kParamsPerBlock + i];
      weight.data.insert(weight.data.end(), layer_weight.data.begin(), layer_weight.data.end());
    }
    stacked.push_back(std::move(weight));
  }
  return stacked;
}

void check_sizes(const TransformerConfig& t) {
  if (t.layers < 1 || t.batch < 1 || t.sequence < 1 || t.model < 1 || t.heads < 1 || t.mlp < 1)
    fail("transformer: layers, batch, sequence, model, heads and mlp must all be at least 1");
  if (t.model % t.heads != 0)
    fail("transformer: model (" + std::to_string(t.model) + ") must be a multiple of heads (" + std::to_string(t.heads) + ")");
  if (t.scan_lengths.empty()) return;
  int64_t product = 1;
  for (int64_t l : t.scan_lengths) product *= l;
  if (product != t.layers)
    fail("transformer: the scan lengths multiply to " + std::to_string(product) + ", not the " + std::to_string(t.layers) +
         " layers");
}

}  // namespace

Model build_transformer(const TransformerConfig& t, const std::string& policy, uint64_t seed, ModelValues values) {
  check_sizes(t);
  const bool scan = !t.scan_lengths.empty();
  Model model = scan ? scanned(t, policy) : unrolled(t, policy);
  if (values == ModelValues::kDrawn)
    model.arguments = scan ? stacked_values(t, draw_values(t, seed)) : draw_values(t, seed);
  return model;
}

}  // namespace rematkit
