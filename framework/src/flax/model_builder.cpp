#include "rematkit/flax/model_builder.hpp"

#include <random>

#include "rematkit/ir/error.hpp"
#include "layers.hpp"
#include "rematkit/flax/module.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit {
namespace {

// nn.Dense traced in its parent's scope, so that layers are Dense_0, Dense_1, ... of the model.
class DenseLayer final : public flax::Module {
 public:
  explicit DenseLayer(int64_t features) : features_(features) {}
  std::string class_name() const override { return "Dense"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    flax::ModuleContext dense = ctx.child("Dense");
    return flax::Dense(features_).call(dense, x);
  }

 private:
  int64_t features_;
};

class Activation final : public flax::Module {
 public:
  explicit Activation(Prim prim) : prim_(prim) {}
  std::string class_name() const override { return std::string(prim_name(prim_)); }
  Atom call(flax::ModuleContext& ctx, Atom x) const override { return ctx.builder().emit1(prim_, {x}); }

 private:
  Prim prim_;
};

// jax.nn.gelu and jax.nn.silu, as they trace (layers.hpp).
class Gelu final : public flax::Module {
 public:
  explicit Gelu(bool approximate) : approximate_(approximate) {}
  std::string class_name() const override { return "gelu"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override { return flax::gelu(ctx.builder(), x, approximate_); }

 private:
  bool approximate_;
};

class Silu final : public flax::Module {
 public:
  std::string class_name() const override { return "silu"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override { return flax::silu(ctx.builder(), x); }
};

// nn.LayerNorm in its parent's scope (LayerNorm_0, ...): scale ones, bias zeros, over the features.
class LayerNormLayer final : public flax::Module {
 public:
  std::string class_name() const override { return "LayerNorm"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    flax::ModuleContext norm = ctx.child("LayerNorm");
    const int64_t features = ctx.builder().type_of(x).shape.back();
    const Atom scale = norm.param("scale", {features}, flax::ones());
    const Atom bias = norm.param("bias", {features}, flax::zeros());
    return flax::layer_norm(ctx.builder(), x, scale, bias);
  }
};

// nn.Embed(vocab, features): the table (variance_scaling(1, fan_in, normal, out_axis=0), Flax's
// default_embed_init), jnp.take'n by the ids.
class EmbedLayer final : public flax::Module {
 public:
  EmbedLayer(int64_t vocab, int64_t features) : vocab_(vocab), features_(features) {}
  std::string class_name() const override { return "Embed"; }
  Atom call(flax::ModuleContext& ctx, Atom ids) const override {
    flax::ModuleContext embed = ctx.child("Embed");
    const Atom table = embed.param("embedding", {vocab_, features_},
                                   flax::variance_scaling(1.0, flax::FanMode::kFanIn, flax::Distribution::kNormal, -2, 0));
    return flax::embed(ctx.builder(), table, ids);
  }
  int64_t vocab() const { return vocab_; }

 private:
  int64_t vocab_, features_;
};

// Causal self-attention: Dense(3 features) to q, k, v, the attention, Dense(features) back.
class AttentionLayer final : public flax::Module {
 public:
  AttentionLayer(int64_t heads, double dropout) : heads_(heads), dropout_(dropout) {}
  std::string class_name() const override { return "CausalSelfAttention"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    const Shape shape = ctx.builder().type_of(x).shape;
    if (shape.size() != 3 || shape[2] % heads_ != 0)
      fail("attention(" + std::to_string(heads_) + ") needs an input [batch, sequence, features] with features a multiple "
           "of the heads, not " + shape_str(shape));
    flax::ModuleContext attn = ctx.child("CausalSelfAttention");
    flax::ModuleContext c_attn = attn.child("Dense");
    const Atom qkv = flax::Dense(3 * shape[2]).call(c_attn, x);
    const Atom merged = flax::causal_attention(ctx.builder(), qkv, heads_, [&](Atom weights) {
      return dropout_ > 0 ? flax::dropout(ctx.builder(), weights, ctx.dropout_key(), ctx.next_dropout_site(), dropout_) : weights;
    });
    flax::ModuleContext c_proj = attn.child("Dense");
    return flax::Dense(shape[2]).call(c_proj, merged);
  }

 private:
  int64_t heads_;
  double dropout_;
};

// nn.Conv traced in `parent`'s scope (Conv_0, Conv_1, ...): kernel (k, ..., in, features)
// lecun_normal (fan_in = k^n in), bias zeros.
Atom conv_in(flax::ModuleContext& parent, Atom x, int64_t features, int64_t kernel, int64_t stride) {
  const Shape shape = parent.builder().type_of(x).shape;
  if (shape.size() < 3)
    fail("conv(" + std::to_string(features) + ") needs an input [batch, spatial..., channels], not " + shape_str(shape));
  flax::ModuleContext conv = parent.child("Conv");
  Shape kernel_shape(shape.size() - 2, kernel);
  kernel_shape.push_back(shape.back());
  kernel_shape.push_back(features);
  const Atom k = conv.param("kernel", kernel_shape, flax::lecun_normal());
  const Atom bias = conv.param("bias", {features}, flax::zeros());
  return flax::conv(parent.builder(), x, k, bias, stride);
}

class ConvLayer final : public flax::Module {
 public:
  ConvLayer(int64_t features, int64_t kernel, int64_t stride) : features_(features), kernel_(kernel), stride_(stride) {}
  std::string class_name() const override { return "Conv"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override { return conv_in(ctx, x, features_, kernel_, stride_); }

 private:
  int64_t features_, kernel_, stride_;
};

// Flax's ResNetBlock (examples/imagenet/models.py) without norms. Its projection is Conv_2 here
// (Flax's example names it conv_proj), so its init key is the one an unnamed third Conv gets.
class ResNetBlockLayer final : public flax::Module {
 public:
  ResNetBlockLayer(int64_t features, int64_t stride) : features_(features), stride_(stride) {}
  std::string class_name() const override { return "ResNetBlock"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    ProgramBuilder& b = ctx.builder();
    flax::ModuleContext block = ctx.child("ResNetBlock");
    Atom y = b.emit1(Prim::kRelu, {conv_in(block, x, features_, 3, stride_)});
    y = conv_in(block, y, features_, 3, 1);
    const Atom residual = b.type_of(x).shape == b.type_of(y).shape ? x : conv_in(block, x, features_, 1, stride_);
    return b.emit1(Prim::kRelu, {b.emit1(Prim::kAdd, {residual, y})});
  }

 private:
  int64_t features_, stride_;
};

class GlobalAveragePool final : public flax::Module {
 public:
  std::string class_name() const override { return "mean"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    if (ctx.builder().type_of(x).rank() < 3)
      fail("global_average_pool needs an input [batch, spatial..., channels], not " + shape_str(ctx.builder().type_of(x).shape));
    return flax::spatial_mean(ctx.builder(), x);
  }
};

class DropoutLayer final : public flax::Module {
 public:
  explicit DropoutLayer(double rate) : rate_(rate) {}
  std::string class_name() const override { return "Dropout"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    return flax::dropout(ctx.builder(), x, ctx.dropout_key(), ctx.next_dropout_site(), rate_);
  }

 private:
  double rate_;
};

// checkpoint_name(x, name): the `name` primitive, which policies see by its name param.
class NameTag final : public flax::Module {
 public:
  explicit NameTag(std::string name) : name_(std::move(name)) {}
  std::string class_name() const override { return "checkpoint_name"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    Params params;
    params.set("name", ParamValue::of_ident(name_));
    return ctx.builder().emit1(Prim::kName, {x}, std::move(params));
  }

 private:
  std::string name_;
};

// nn.scan of the layers inside over `length` copies.
class ScanLayers final : public flax::Module {
 public:
  ScanLayers(std::shared_ptr<const flax::Module> body, int64_t length) : body_(std::move(body)), length_(length) {}
  std::string class_name() const override { return "ScanLayers"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override { return ctx.scan(*body_, length_, x); }

 private:
  std::shared_ptr<const flax::Module> body_;
  int64_t length_;
};

// The layers in order, in the caller's scope (a compact Flax module calling them one after another).
class Sequential final : public flax::Module {
 public:
  explicit Sequential(std::vector<std::shared_ptr<const flax::Module>> layers) : layers_(std::move(layers)) {}
  std::string class_name() const override { return "Sequential"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    for (const auto& layer : layers_) x = layer->call(ctx, x);
    return x;
  }

 private:
  std::vector<std::shared_ptr<const flax::Module>> layers_;
};

}  // namespace

ModelBuilder::ModelBuilder() = default;
ModelBuilder::~ModelBuilder() = default;
ModelBuilder::ModelBuilder(const ModelBuilder&) = default;
ModelBuilder& ModelBuilder::operator=(const ModelBuilder&) = default;

ModelBuilder& ModelBuilder::dense(int64_t features) {
  if (features < 1) fail("a dense layer needs at least one feature, not " + std::to_string(features));
  layers_.push_back(std::make_shared<DenseLayer>(features));
  return *this;
}

ModelBuilder& ModelBuilder::relu() {
  layers_.push_back(std::make_shared<Activation>(Prim::kRelu));
  return *this;
}

ModelBuilder& ModelBuilder::tanh() {
  layers_.push_back(std::make_shared<Activation>(Prim::kTanh));
  return *this;
}

ModelBuilder& ModelBuilder::gelu(bool approximate) {
  layers_.push_back(std::make_shared<Gelu>(approximate));
  return *this;
}

ModelBuilder& ModelBuilder::silu() {
  layers_.push_back(std::make_shared<Silu>());
  return *this;
}

ModelBuilder& ModelBuilder::layer_norm() {
  layers_.push_back(std::make_shared<LayerNormLayer>());
  return *this;
}

ModelBuilder& ModelBuilder::embedding(int64_t vocab, int64_t features) {
  if (vocab < 1 || features < 1)
    fail("embedding(" + std::to_string(vocab) + ", " + std::to_string(features) + ") needs a vocabulary and features of at least 1");
  if (!layers_.empty()) fail("an embedding must be the first layer (its input is the model's token ids)");
  layers_.push_back(std::make_shared<EmbedLayer>(vocab, features));
  return *this;
}

ModelBuilder& ModelBuilder::attention(int64_t heads, double dropout) {
  if (heads < 1) fail("attention needs at least one head, not " + std::to_string(heads));
  if (!(dropout >= 0 && dropout < 1)) fail("attention's dropout must be in [0, 1), not " + std::to_string(dropout));
  layers_.push_back(std::make_shared<AttentionLayer>(heads, dropout));
  return *this;
}

ModelBuilder& ModelBuilder::conv(int64_t features, int64_t kernel, int64_t stride) {
  if (features < 1 || kernel < 1 || stride < 1)
    fail("conv(" + std::to_string(features) + ", " + std::to_string(kernel) + ", " + std::to_string(stride) +
         ") needs features, a kernel size and a stride of at least 1");
  layers_.push_back(std::make_shared<ConvLayer>(features, kernel, stride));
  return *this;
}

ModelBuilder& ModelBuilder::resnet_block(int64_t features, int64_t stride) {
  if (features < 1 || stride < 1)
    fail("resnet_block(" + std::to_string(features) + ", " + std::to_string(stride) + ") needs features and a stride of at least 1");
  layers_.push_back(std::make_shared<ResNetBlockLayer>(features, stride));
  return *this;
}

ModelBuilder& ModelBuilder::global_average_pool() {
  layers_.push_back(std::make_shared<GlobalAveragePool>());
  return *this;
}

ModelBuilder& ModelBuilder::dropout(double rate) {
  if (!(rate > 0 && rate < 1)) fail("dropout's rate must be in (0, 1), not " + std::to_string(rate));
  layers_.push_back(std::make_shared<DropoutLayer>(rate));
  return *this;
}

ModelBuilder& ModelBuilder::name(const std::string& name) {
  if (name.empty()) fail("name() needs a non-empty name");
  if (layers_.empty()) fail("name('" + name + "') needs a layer before it to name");
  layers_.push_back(std::make_shared<NameTag>(name));
  return *this;
}

ModelBuilder& ModelBuilder::checkpoint(const std::string& policy, const std::function<void(ModelBuilder&)>& body) {
  ModelBuilder inner;
  body(inner);
  if (inner.layers_.empty()) fail("checkpoint(" + policy + ") has no layers");
  layers_.push_back(std::make_shared<flax::Remat>(std::make_shared<Sequential>(std::move(inner.layers_)), policy));
  return *this;
}

ModelBuilder& ModelBuilder::scan(int64_t length, const std::function<void(ModelBuilder&)>& body) {
  if (length < 1) fail("scan(" + std::to_string(length) + ") needs a length of at least 1");
  ModelBuilder inner;
  body(inner);
  if (inner.layers_.empty()) fail("scan(" + std::to_string(length) + ") has no layers");
  layers_.push_back(std::make_shared<ScanLayers>(std::make_shared<Sequential>(std::move(inner.layers_)), length));
  return *this;
}

ModelBuilder& ModelBuilder::remat_scan(const std::vector<int64_t>& lengths, const std::string& policy,
                                       const std::function<void(ModelBuilder&)>& body) {
  if (lengths.empty()) fail("remat_scan needs at least one length");
  if (lengths.size() == 1) return scan(lengths[0], body);
  const std::vector<int64_t> rest(lengths.begin() + 1, lengths.end());
  return scan(lengths[0], [&](ModelBuilder& outer) {
    outer.checkpoint(policy, [&](ModelBuilder& inner) { inner.remat_scan(rest, policy, body); });
  });
}

ModelBuilder& ModelBuilder::dtype(DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    fail("a model's dtype must be f32 or bf16, not " + std::string(dtype_name(dtype)));
  dtype_ = dtype;
  return *this;
}

Model ModelBuilder::build(int64_t batch, int64_t features, uint64_t seed, Loss loss, ModelValues values) const {
  if (batch < 1 || features < 1)
    fail("a model's input needs a batch and features of at least 1, not (" + std::to_string(batch) + ", " +
         std::to_string(features) + ")");
  return build(Shape{batch, features}, seed, loss, values);
}

Model ModelBuilder::build(const Shape& input, uint64_t seed, Loss loss, ModelValues values) const {
  if (layers_.empty()) fail("a model needs at least one layer");
  for (int64_t d : input)
    if (d < 1) fail("a model's input needs every dim at least 1, not " + shape_str(input));
  const auto* embed = dynamic_cast<const EmbedLayer*>(layers_.front().get());
  const Type x_type{embed ? DType::kI32 : dtype_, input, MemorySpace::kDevice};
  std::vector<std::shared_ptr<const flax::Module>> layers = layers_;
  if (loss == Loss::kSumOfSquares) layers.push_back(std::make_shared<Activation>(Prim::kSquare));
  flax::InitializedModule init = flax::init_module(Sequential(std::move(layers)), random::prng_key(seed), x_type,
                                                   flax::RngOptions{}, /*sum_output=*/true, values, dtype_);
  Model model;
  // Argument 1 + i is variable argument_params[i]; the dropout key is an input, not a param.
  for (size_t i = 0; i < init.argument_params.size(); ++i)
    if (!init.params[init.argument_params[i]].is_dropout_key) model.params.push_back(1 + i);
  model.program = std::move(init.apply);
  if (values == ModelValues::kNone) return model;

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x{x_type, std::vector<double>(static_cast<size_t>(x_type.num_elements()))};
  std::uniform_int_distribution<int64_t> token(0, embed ? embed->vocab() - 1 : 0);
  for (double& v : x.data) v = embed ? static_cast<double>(token(rng)) : round_to_dtype(uniform(rng), dtype_, Arithmetic::kFloat32);
  model.arguments.push_back(std::move(x));
  for (size_t index : init.argument_params) {
    const flax::Variable& v = init.params[index];
    if (v.is_dropout_key) {
      model.arguments.push_back(Tensor::scalar(key_element(v.key[0], v.key[1]), DType::kKeyFry));
      continue;
    }
    Tensor param{v.type, std::vector<double>(v.value.size())};
    for (size_t i = 0; i < v.value.size(); ++i) param.data[i] = round_to_dtype(v.value[i], v.type.dtype, Arithmetic::kFloat32);
    model.arguments.push_back(std::move(param));
  }
  return model;
}

}  // namespace rematkit
