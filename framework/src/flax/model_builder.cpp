#include "rematkit/flax/model_builder.hpp"

#include <random>

#include "rematkit/error.hpp"
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

Model ModelBuilder::build(int64_t batch, int64_t features, uint64_t seed, Loss loss) const {
  if (layers_.empty()) fail("a model needs at least one layer");
  if (batch < 1 || features < 1)
    fail("a model's input needs a batch and features of at least 1, not (" + std::to_string(batch) + ", " +
         std::to_string(features) + ")");
  const Type x_type{DType::kF32, {batch, features}, MemorySpace::kDevice};
  std::vector<std::shared_ptr<const flax::Module>> layers = layers_;
  if (loss == Loss::kSumOfSquares) layers.push_back(std::make_shared<Activation>(Prim::kSquare));
  flax::InitializedModule init =
      flax::init_module(Sequential(std::move(layers)), random::prng_key(seed), x_type, flax::RngOptions{}, /*sum_output=*/true);
  Model model;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x{x_type, std::vector<double>(static_cast<size_t>(x_type.num_elements()))};
  for (double& v : x.data) v = uniform(rng);
  model.arguments.push_back(std::move(x));
  for (size_t index : init.argument_params) {
    const flax::Variable& v = init.params[index];
    model.params.push_back(model.arguments.size());
    model.arguments.push_back(Tensor{v.type, std::vector<double>(v.value.begin(), v.value.end())});
  }
  model.program = std::move(init.apply);
  return model;
}

}  // namespace rematkit
