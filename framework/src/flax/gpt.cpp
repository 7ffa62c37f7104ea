#include "rematkit/flax/gpt.hpp"

#include "language_model.hpp"
#include "layers.hpp"

#include "rematkit/ir/error.hpp"
#include "rematkit/flax/initializers.hpp"
#include "rematkit/flax/layer_scan.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/ir/program_builder.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit {
namespace {

constexpr size_t kParamsPerBlock = 12;  // ln_1, c_attn, c_proj, ln_2, c_fc, mlp c_proj: a scale or kernel and a bias each

// Traces the model's pieces into one program (the top level or a checkpoint's body).
class GptTracer {
 public:
  GptTracer(ProgramBuilder& b, const GptConfig& c) : b_(b), c_(c) {}

  Atom emit(Prim prim, std::vector<Atom> in, Params p = {}) { return b_.emit1(prim, std::move(in), std::move(p)); }
  const Shape& shape(Atom a) const { return b_.type_of(a).shape; }
  DType dtype(Atom a) const { return b_.type_of(a).dtype; }

  // Flax's promote_dtype: a value cast to the compute dtype where it is used (a no-op for params,
  // whose param_dtype is the model's dtype; the one-hot's bools and the loss's f32 are real casts).
  Atom cast(Atom a, DType to) {
    if (dtype(a) == to) return a;
    Params p = convert_element_type_params(to);
    p.set("weak_type", ParamValue::of_bool(false));
    return emit(Prim::kConvertElementType, {a}, std::move(p));
  }

  int64_t last_axis(Atom a) const { return static_cast<int64_t>(shape(a).size()) - 1; }

  // nn.Dense: x's last dim contracted with the kernel's first, plus the bias reshaped to rank.
  Atom dense(Atom x, Atom kernel, Atom bias) {
    const DType dt = c_.dtype;
    Atom y = emit(Prim::kDotGeneral, {cast(x, dt), cast(kernel, dt)}, dot_general_params({{last_axis(x)}, {0}, {}, {}}));
    Shape ones(shape(x).size() - 1, 1);
    ones.push_back(shape(bias)[0]);
    return emit(Prim::kAdd, {y, emit(Prim::kReshape, {cast(bias, dt)}, reshape_params(ones))});
  }

  // nn.LayerNorm (epsilon 1e-6) with force_float32_reductions=False: statistics in the compute dtype.
  Atom layer_norm(Atom x, Atom scale, Atom bias) { return flax::layer_norm(b_, x, cast(scale, dtype(x)), cast(bias, dtype(x))); }
  Atom gelu(Atom x) { return flax::gelu(b_, x, /*approximate=*/true); }  // Flax's GPT-2 MLP: nn.gelu

  Atom dropout(Atom x, Atom key, int64_t site) { return flax::dropout(b_, x, key, site, c_.dropout); }

  // A row-parallel nn.Dense of a tensor-parallel share: each device's product over its part of the
  // inner width, summed over 'tensor' before the (replicated) bias, the sum named `summed`
  // (checkpoint_name) so that a policy can keep it rather than sum again; a plain dense otherwise.
  Atom row_dense(Atom x, Atom kernel, Atom bias, const char* summed) {
    if (c_.tensor == 1) return dense(x, kernel, bias);
    Atom y = emit(Prim::kDotGeneral, {cast(x, c_.dtype), cast(kernel, c_.dtype)}, dot_general_params({{last_axis(x)}, {0}, {}, {}}));
    Params name;
    name.set("name", ParamValue::of_ident(summed));
    y = emit(Prim::kName, {emit(Prim::kPsum, {y}, psum_params({"tensor"}))}, std::move(name));
    Shape ones(shape(x).size() - 1, 1);
    ones.push_back(shape(bias)[0]);
    return emit(Prim::kAdd, {y, emit(Prim::kReshape, {cast(bias, c_.dtype)}, reshape_params(ones))});
  }

  // Causal self-attention (flax's dot_product_attention) between c_attn and c_proj, dropout on
  // the attention weights.
  Atom attention(Atom x, const Atom* w, Atom key, int64_t site) {
    const Atom merged = flax::causal_attention(b_, dense(x, w[2], w[3]), c_.heads / c_.tensor,
                                               [&](Atom weights) { return dropout(weights, key, site); });
    return row_dense(merged, w[4], w[5], "attention_summed");
  }

  // A pre-LayerNorm block: x + drop(attn(ln_1 x)), then x + drop(c_proj gelu(c_fc ln_2 x)).
  // `w`: ln_1 scale, bias; c_attn kernel, bias; c_proj kernel, bias; ln_2 scale, bias; c_fc
  // kernel, bias; mlp c_proj kernel, bias.
  Atom block(Atom x, const Atom* w, Atom key, int64_t layer) {
    const int64_t site = 1 + 3 * layer;  // site 0 is the embeddings'
    x = emit(Prim::kAdd, {x, dropout(attention(layer_norm(x, w[0], w[1]), w, key, site), key, site + 1)});
    const Atom hidden = gelu(dense(layer_norm(x, w[6], w[7]), w[8], w[9]));
    return emit(Prim::kAdd, {x, dropout(row_dense(hidden, w[10], w[11], "mlp_summed"), key, site + 2)});
  }

 private:
  ProgramBuilder& b_;
  const GptConfig& c_;
};

}  // namespace

Model build_gpt(const GptConfig& c, const std::string& policy, uint64_t seed, ModelValues values) {
  if (c.vocab < 1 || c.sequence < 1 || c.model < 1 || c.heads < 1 || c.layers < 1 || c.mlp < 1 || c.batch < 1)
    fail("gpt: vocab, sequence, model, heads, layers, mlp and batch must all be at least 1");
  if (c.model % c.heads != 0)
    fail("gpt: model (" + std::to_string(c.model) + ") must be a multiple of heads (" + std::to_string(c.heads) + ")");
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("gpt: dropout must be in [0, 1), not " + std::to_string(c.dropout));
  if (c.dtype != DType::kF32 && c.dtype != DType::kBF16)
    fail("gpt: dtype must be f32 or bf16, not " + std::string(dtype_name(c.dtype)));
  if (c.tensor < 1 || c.heads % c.tensor != 0 || c.mlp % c.tensor != 0)
    fail("gpt: tensor (" + std::to_string(c.tensor) + ") must divide heads (" + std::to_string(c.heads) + ") and mlp (" +
         std::to_string(c.mlp) + ")");
  const bool dropout = c.dropout > 0;
  const int64_t D = c.model, T = c.tensor, A = D / T, M = c.mlp / T;  // A, M: a device's attention and MLP widths
  const TensorSplit columns{1, 1}, rows{0, 1}, qkv_columns{1, 3}, qkv_bias{0, 3}, bias{0, 1};
  if (!c.scan_lengths.empty()) {
    int64_t product = 1;
    for (int64_t l : c.scan_lengths) product *= l;
    if (product != c.layers)
      fail("gpt: the scan lengths multiply to " + std::to_string(product) + ", not the " + std::to_string(c.layers) + " layers");
  }

  flax::TokenModelParams params;
  params.leading = 2;
  params.per_block = kParamsPerBlock;
  std::vector<flax::ParamSpec>& specs = params.specs;
  specs = {{"wte", {c.vocab, D}, flax::normal(0.02f)}, {"wpe", {c.sequence, D}, flax::normal(0.02f)}};
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string h = "h_" + std::to_string(l) + "_";
    for (const flax::ParamSpec& s : std::vector<flax::ParamSpec>{
             {h + "ln_1_scale", {D}, flax::ones()},         {h + "ln_1_bias", {D}, flax::zeros()},
             {h + "attn_c_attn_kernel", {D, 3 * A}, flax::normal(0.02f), qkv_columns},
             {h + "attn_c_attn_bias", {3 * A}, flax::zeros(), qkv_bias},
             {h + "attn_c_proj_kernel", {A, D}, flax::normal(0.02f), rows}, {h + "attn_c_proj_bias", {D}, flax::zeros()},
             {h + "ln_2_scale", {D}, flax::ones()},         {h + "ln_2_bias", {D}, flax::zeros()},
             {h + "mlp_c_fc_kernel", {D, M}, flax::normal(0.02f), columns}, {h + "mlp_c_fc_bias", {M}, flax::zeros(), bias},
             {h + "mlp_c_proj_kernel", {M, D}, flax::normal(0.02f), rows},  {h + "mlp_c_proj_bias", {D}, flax::zeros()}})
      specs.push_back(s);
  }
  specs.push_back({"ln_f_scale", {D}, flax::ones()});
  specs.push_back({"ln_f_bias", {D}, flax::zeros()});

  Model model;
  ProgramBuilder b;
  flax::TokenModelArguments args(b, model, values);
  const auto [ids, targets] = flax::token_arguments(args, c.batch, c.sequence, c.vocab, seed);
  Atom key{};
  if (dropout) {
    key = args.input("dropout_key", Type{DType::kKeyFry, {}, MemorySpace::kDevice}, [&] {
      const random::Key k = random::fold_in(random::prng_key(seed), 1);  // the 'dropout' stream's key
      return Tensor::scalar(key_element(k[0], k[1]), DType::kKeyFry);
    });
  }
  const bool scanned = !c.scan_lengths.empty();
  const std::vector<Atom> w = flax::add_token_model_params(args, params, c.dtype, c.layers, c.scan_lengths, seed);

  GptTracer top(b, c);
  // Embeddings: wte[ids] (nn.Embed's jnp.take, a gather of rows) plus the positions.
  Atom x = flax::embed(b, top.cast(w[0], c.dtype), ids);
  x = top.emit(Prim::kAdd, {x, top.emit(Prim::kBroadcastInDim, {top.cast(w[1], c.dtype)},
                                        broadcast_in_dim_params({c.batch, c.sequence, D}, {1, 2}))});
  x = top.dropout(x, key, 0);

  // Blocks [first, last), traced into `b` (the top level or a checkpoint's body).
  auto blocks = [&](ProgramBuilder& into, Atom h, Atom k, const std::vector<Atom>& params, int64_t first, int64_t last) {
    GptTracer t(into, c);
    for (int64_t l = first; l < last; ++l) h = t.block(h, &params[static_cast<size_t>((l - first)) * kParamsPerBlock], k, l);
    return h;
  };
  // nn.remat over blocks [first, last): x, the blocks' params and the dropout key are its operands.
  auto remat = [&](Atom h, int64_t first, int64_t last) {
    ProgramBuilder inner;
    const Atom inner_h = inner.argument("x", b.type_of(h));
    std::vector<Atom> operands{h}, inner_params;
    for (size_t i = 2 + static_cast<size_t>(first) * kParamsPerBlock; i < 2 + static_cast<size_t>(last) * kParamsPerBlock; ++i) {
      operands.push_back(w[i]);
      inner_params.push_back(inner.argument(specs[i].name, b.type_of(w[i])));
    }
    Atom inner_key{};
    if (dropout) {
      operands.push_back(key);
      inner_key = inner.argument("dropout_key", b.type_of(key));
    }
    const Atom out = blocks(inner, inner_h, inner_key, inner_params, first, last);
    Params p;
    p.set("policy", parse_param_value(policy, "policy"));
    p.set("prevent_cse", ParamValue::of_bool(true));
    return b.call(Prim::kCheckpoint, inner.finish({out}), operands, std::move(p)).at(0);
  };
  const std::vector<Atom> block_params(w.begin() + 2, w.end() - 2);
  if (scanned) {
    // With dropout, each block gets a key of its own split from the stream's (split_rngs), the
    // last of its operands, and numbers its sites as the first block does.
    const LayerFn block = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) {
      return GptTracer(into, c).block(h, p.data(), dropout ? p.back() : Atom{}, 0);
    };
    x = scan_with_remat(b, x, block_params, c.scan_lengths, policy, c.remat, block,
                        dropout ? std::optional<Atom>(key) : std::nullopt);
  } else if (c.remat == RematPlacement::kNone) {
    x = blocks(b, x, key, block_params, 0, c.layers);
  } else if (c.remat == RematPlacement::kWhole) {
    x = remat(x, 0, c.layers);
  } else {
    for (int64_t l = 0; l < c.layers; ++l) x = remat(x, l, l + 1);
  }
  x = top.layer_norm(x, w[w.size() - 2], w[w.size() - 1]);

  // Tied output projection, then the mean cross-entropy.
  const Atom logits = top.emit(Prim::kDotGeneral, {x, top.cast(w[0], c.dtype)}, dot_general_params({{2}, {1}, {}, {}}));
  const Atom loss = flax::mean_cross_entropy(b, logits, targets);
  // Printed and read back, so every equation has a line a residual report can point at; a
  // tensor-parallel share is read back inside parallel_step's shard_map, which binds 'tensor'.
  model.program = c.tensor > 1 ? b.finish({loss}) : parse_program(print_program(b.finish({loss})), "<gpt>");
  return model;
}

}  // namespace rematkit
