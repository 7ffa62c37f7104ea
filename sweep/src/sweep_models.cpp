#include "rematkit/sweep/sweep_models.hpp"

#include <memory>
#include <random>

#include "rematkit/flax/module.hpp"
#include "rematkit/parser.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit::sweep {
namespace {

// Dense(features) followed by the activation, or by nothing for the last layer.
class Layer final : public flax::Module {
 public:
  Layer(int64_t features, Prim activation, bool last) : features_(features), activation_(activation), last_(last) {}
  std::string class_name() const override { return "Layer"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    flax::ModuleContext dense = ctx.child("Dense");
    const Atom y = flax::Dense(features_).call(dense, x);
    return last_ ? y : ctx.builder().emit1(activation_, {y});
  }

 private:
  int64_t features_;
  Prim activation_;
  bool last_;
};

class Stack final : public flax::Module {
 public:
  explicit Stack(std::vector<std::shared_ptr<const flax::Module>> layers) : layers_(std::move(layers)) {}
  std::string class_name() const override { return "Stack"; }
  Atom call(flax::ModuleContext& ctx, Atom x) const override {
    for (const auto& layer : layers_) x = layer->call(ctx, x);
    return x;
  }

 private:
  std::vector<std::shared_ptr<const flax::Module>> layers_;
};

Tensor uniform(const Type& type, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t{type, std::vector<double>(static_cast<size_t>(type.num_elements()))};
  if (type.dtype == DType::kF32)  // integer and bool inputs stay zero
    for (double& v : t.data) v = dist(rng);
  return t;
}

ModelInstance mlp_instance(const MlpModel& mlp, const std::string& policy, uint64_t seed) {
  const Prim activation = mlp.activation == "tanh" ? Prim::kTanh : Prim::kRelu;
  std::vector<std::shared_ptr<const flax::Module>> layers;
  for (size_t i = 0; i < mlp.widths.size(); ++i) {
    auto layer = std::make_shared<Layer>(mlp.widths[i], activation, i + 1 == mlp.widths.size());
    if (mlp.remat == Remat::kPerLayer) layers.push_back(std::make_shared<flax::Remat>(layer, policy));
    else layers.push_back(layer);
  }
  std::shared_ptr<const flax::Module> model = std::make_shared<Stack>(std::move(layers));
  if (mlp.remat == Remat::kWhole) model = std::make_shared<flax::Remat>(model, policy);

  const Type x_type{DType::kF32, {mlp.batch, mlp.input}, MemorySpace::kDevice};
  flax::InitializedModule init = flax::init_module(*model, random::prng_key(seed), x_type, flax::RngOptions{}, true);
  ModelInstance instance;
  std::mt19937_64 rng(seed);
  instance.arguments.push_back(uniform(x_type, rng));
  for (size_t index : init.argument_params) {
    const flax::Variable& v = init.params[index];
    instance.trained.push_back(instance.arguments.size());
    instance.arguments.push_back(Tensor{v.type, std::vector<double>(v.value.begin(), v.value.end())});
  }
  instance.program = std::move(init.apply);
  return instance;
}

}  // namespace

ModelInstance instantiate(const ModelSpec& model, const std::string& policy, uint64_t seed) {
  if (model.kind == ModelSpec::Kind::kMlp) return mlp_instance(model.mlp, policy, seed);
  ModelInstance instance;
  instance.program = load_program(model.program.file);
  instance.whole_program_policy = policy;
  std::mt19937_64 rng(seed);
  for (int v : instance.program.constvars) instance.constants.push_back(uniform(instance.program.vars[v].type, rng));
  for (int v : instance.program.invars) {
    if (instance.program.vars[v].type.dtype == DType::kF32) instance.trained.push_back(instance.arguments.size());
    instance.arguments.push_back(uniform(instance.program.vars[v].type, rng));
  }
  return instance;
}

}  // namespace rematkit::sweep
