#include "rematkit/flax/llama.hpp"

#include <cmath>

#include "language_model.hpp"
#include "layers.hpp"

#include "rematkit/ir/error.hpp"
#include "rematkit/flax/layer_scan.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"

namespace rematkit {
namespace {

// attention_norm scale, q, k, v, o kernels; mlp_norm scale, gate, up, down kernels.
constexpr size_t kParamsPerBlock = 9;

class LlamaTracer {
 public:
  LlamaTracer(ProgramBuilder& b, const LlamaConfig& c) : b_(b), c_(c) {}

  Atom emit(Prim prim, std::vector<Atom> in, Params p = {}) { return b_.emit1(prim, std::move(in), std::move(p)); }
  const Shape& shape(Atom a) const { return b_.type_of(a).shape; }

  // nn.Dense without a bias: x's last dim contracted with the kernel's first.
  Atom dense(Atom x, Atom kernel) {
    const int64_t last = static_cast<int64_t>(shape(x).size()) - 1;
    return emit(Prim::kDotGeneral, {x, kernel}, dot_general_params({{last}, {0}, {}, {}}));
  }

  // A row-parallel dense of a tensor-parallel share: the devices' products summed over 'tensor',
  // the sum named `summed` (checkpoint_name) for a policy to keep.
  Atom row_dense(Atom x, Atom kernel, const char* summed) {
    const Atom y = dense(x, kernel);
    if (c_.tensor == 1) return y;
    Params name;
    name.set("name", ParamValue::of_ident(summed));
    return emit(Prim::kName, {emit(Prim::kPsum, {y}, psum_params({"tensor"}))}, std::move(name));
  }

  // Self-attention: q, k, v projections split into heads, rotary positions on q and k, q scaled by
  // 1 / sqrt(head width), causal grouped-query attention, then the o projection.
  Atom attention(Atom x, const Atom* w) {
    const int64_t B = shape(x)[0], S = shape(x)[1], Dh = c_.model / c_.heads;
    auto heads = [&](Atom a, int64_t n) { return emit(Prim::kReshape, {a}, reshape_params({B, S, n, Dh})); };
    const Atom q = flax::rotary(b_, heads(dense(x, w[1]), c_.heads / c_.tensor));
    const Atom k = flax::rotary(b_, heads(dense(x, w[2]), c_.kv_heads / c_.tensor));
    const Atom v = heads(dense(x, w[3]), c_.kv_heads / c_.tensor);
    const Atom scaled = emit(Prim::kDiv, {q, ProgramBuilder::literal(std::sqrt(static_cast<double>(Dh)), c_.dtype)});
    return row_dense(flax::causal_attention_heads(b_, scaled, k, v, [](Atom weights) { return weights; }), w[4], "attention_summed");
  }

  // The SwiGLU MLP: down(silu(gate x) * up x).
  Atom mlp(Atom x, const Atom* w) {
    const Atom gate = flax::silu(b_, dense(x, w[6]));
    const Atom up = dense(x, w[7]);
    return row_dense(emit(Prim::kMul, {gate, up}), w[8], "mlp_summed");
  }

  // A pre-RMSNorm block: x + attention(norm x), then x + mlp(norm x).
  Atom block(Atom x, const Atom* w) {
    x = emit(Prim::kAdd, {x, attention(flax::rms_norm(b_, x, w[0]), w)});
    return emit(Prim::kAdd, {x, mlp(flax::rms_norm(b_, x, w[5]), w)});
  }

 private:
  ProgramBuilder& b_;
  const LlamaConfig& c_;
};

}  // namespace

Model build_llama(const LlamaConfig& c, const std::string& policy, uint64_t seed, ModelValues values) {
  if (c.vocab < 1 || c.sequence < 1 || c.model < 1 || c.heads < 1 || c.kv_heads < 1 || c.layers < 1 || c.mlp < 1 ||
      c.batch < 1)
    fail("llama: vocab, sequence, model, heads, kv_heads, layers, mlp and batch must all be at least 1");
  if (c.model % c.heads != 0 || (c.model / c.heads) % 2 != 0)
    fail("llama: model (" + std::to_string(c.model) + ") must be heads (" + std::to_string(c.heads) +
         ") times an even head width (rotary embeddings rotate pairs)");
  if (c.heads % c.kv_heads != 0)
    fail("llama: kv_heads (" + std::to_string(c.kv_heads) + ") must divide heads (" + std::to_string(c.heads) + ")");
  if (c.dtype != DType::kF32 && c.dtype != DType::kBF16)
    fail("llama: dtype must be f32 or bf16, not " + std::string(dtype_name(c.dtype)));
  if (!c.scan_lengths.empty()) {
    int64_t product = 1;
    for (int64_t l : c.scan_lengths) product *= l;
    if (product != c.layers)
      fail("llama: the scan lengths multiply to " + std::to_string(product) + ", not the " + std::to_string(c.layers) + " layers");
  }
  if (c.tensor < 1 || c.kv_heads % c.tensor != 0 || c.mlp % c.tensor != 0)
    fail("llama: tensor (" + std::to_string(c.tensor) + ") must divide kv_heads (" + std::to_string(c.kv_heads) +
         ") and mlp (" + std::to_string(c.mlp) + ")");
  // A device's widths: Q of the queries, KD of the keys and values, M of the MLP.
  const int64_t D = c.model, Dh = D / c.heads, Q = D / c.tensor, KD = c.kv_heads * Dh / c.tensor, M = c.mlp / c.tensor;
  const TensorSplit columns{1, 1}, rows{0, 1};

  flax::TokenModelParams params;
  params.leading = 1;
  params.per_block = kParamsPerBlock;
  std::vector<flax::ParamSpec>& specs = params.specs;
  specs.push_back({"embedding", {c.vocab, D}, flax::normal(0.02f)});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string h = "layers_" + std::to_string(l) + "_";
    for (const flax::ParamSpec& s : std::vector<flax::ParamSpec>{
             {h + "attention_norm_scale", {D}, flax::ones()},
             {h + "attention_q_kernel", {D, Q}, flax::normal(0.02f), columns},
             {h + "attention_k_kernel", {D, KD}, flax::normal(0.02f), columns},
             {h + "attention_v_kernel", {D, KD}, flax::normal(0.02f), columns},
             {h + "attention_o_kernel", {Q, D}, flax::normal(0.02f), rows},
             {h + "mlp_norm_scale", {D}, flax::ones()},
             {h + "mlp_gate_kernel", {D, M}, flax::normal(0.02f), columns},
             {h + "mlp_up_kernel", {D, M}, flax::normal(0.02f), columns},
             {h + "mlp_down_kernel", {M, D}, flax::normal(0.02f), rows}})
      specs.push_back(s);
  }
  specs.push_back({"norm_scale", {D}, flax::ones()});
  specs.push_back({"lm_head_kernel", {D, c.vocab}, flax::normal(0.02f)});

  Model model;
  ProgramBuilder b;
  flax::TokenModelArguments args(b, model, values);
  const auto [ids, targets] = flax::token_arguments(args, c.batch, c.sequence, c.vocab, seed);
  const std::vector<Atom> w = flax::add_token_model_params(args, params, c.dtype, c.layers, c.scan_lengths, seed);

  Atom x = flax::embed(b, w[0], ids);
  const std::vector<Atom> block_params(w.begin() + 1, w.end() - 2);
  const LayerFn block = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) { return LlamaTracer(into, c).block(h, p.data()); };
  // Blocks [first, last) traced into `into`, their params from `p` (the blocks' own, in order).
  auto blocks = [&](int64_t first, int64_t last) -> LayerFn {
    return [&, first, last](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) {
      for (int64_t l = first; l < last; ++l) h = LlamaTracer(into, c).block(h, &p[static_cast<size_t>(l - first) * kParamsPerBlock]);
      return h;
    };
  };
  auto params_of = [&](int64_t first, int64_t last) {
    return std::vector<Atom>(block_params.begin() + first * static_cast<int64_t>(kParamsPerBlock),
                             block_params.begin() + last * static_cast<int64_t>(kParamsPerBlock));
  };
  if (!c.scan_lengths.empty()) {
    x = scan_with_remat(b, x, block_params, c.scan_lengths, policy, c.remat, block);
  } else if (c.remat == RematPlacement::kNone) {
    x = blocks(0, c.layers)(b, x, block_params);
  } else if (c.remat == RematPlacement::kWhole) {
    x = checkpoint_over(b, x, block_params, policy, true, blocks(0, c.layers));
  } else {
    for (int64_t l = 0; l < c.layers; ++l) x = checkpoint_over(b, x, params_of(l, l + 1), policy, true, blocks(l, l + 1));
  }
  x = flax::rms_norm(b, x, w[w.size() - 2]);
  const Atom logits = LlamaTracer(b, c).dense(x, w.back());
  const Atom loss = flax::mean_cross_entropy(b, logits, targets);
  // Printed and read back, so every equation has a line a residual report can point at; a
  // tensor-parallel share is read back inside parallel_step's shard_map, which binds 'tensor'.
  model.program = c.tensor > 1 ? b.finish({loss}) : parse_program(print_program(b.finish({loss})), "<llama>");
  return model;
}

}  // namespace rematkit
