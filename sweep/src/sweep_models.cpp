#include "rematkit/sweep/sweep_models.hpp"

#include <cstdint>
#include <memory>
#include <random>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/parallel_step.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/transformer.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/runtime/memory_limit.hpp"

namespace rematkit::sweep {
namespace {

Tensor uniform(const Type& type, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t{type, std::vector<double>(static_cast<size_t>(type.num_elements()))};
  if (is_floating(type.dtype))  // integer and bool inputs stay zero
    for (double& v : t.data) v = round_to_dtype(dist(rng), type.dtype, Arithmetic::kFloat32);
  return t;
}

// A built model's program, inputs (none, built with ModelValues::kNone) and params, as a sweep runs them.
ModelInstance instance_of(Model m) {
  ModelInstance instance;
  instance.program = std::move(m.program);
  instance.arguments = std::move(m.arguments);
  instance.trained = std::move(m.params);
  return instance;
}

// A scanned MLP: Dense and the activation, `n` times, as nn.scan / nn.remat_scan trace them.
void scanned_mlp(ModelBuilder& builder, const MlpModel& mlp, const std::string& policy) {
  auto layer = [&](ModelBuilder& l) {
    l.dense(mlp.input);
    if (mlp.activation == "tanh") l.tanh();
    else l.relu();
  };
  const int64_t n = static_cast<int64_t>(mlp.widths.size());
  if (mlp.loop.kind == LayerLoop::Kind::kRematScan) {
    builder.remat_scan(mlp.loop.lengths, policy, layer);
  } else if (mlp.remat == RematPlacement::kPerLayer) {
    builder.scan(n, [&](ModelBuilder& body) { body.checkpoint(policy, layer); });
  } else if (mlp.remat == RematPlacement::kWhole) {
    builder.checkpoint(policy, [&](ModelBuilder& whole) { whole.scan(n, layer); });
  } else {
    builder.scan(n, layer);
  }
}

ModelInstance mlp_instance(const MlpModel& mlp, const std::string& policy, uint64_t seed, ModelValues values) {
  // Dense, then the activation after every layer but the last; checkpoints as `remat` says.
  auto layers = [&](ModelBuilder& model) {
    for (size_t i = 0; i < mlp.widths.size(); ++i) {
      auto layer = [&](ModelBuilder& l) {
        l.dense(mlp.widths[i]);
        if (i + 1 < mlp.widths.size()) {
          if (mlp.activation == "tanh") l.tanh();
          else l.relu();
        }
      };
      if (mlp.remat == RematPlacement::kPerLayer) model.checkpoint(policy, layer);
      else layer(model);
    }
  };
  ModelBuilder builder;
  if (mlp.loop.kind != LayerLoop::Kind::kUnrolled) scanned_mlp(builder, mlp, policy);
  else if (mlp.remat == RematPlacement::kWhole) builder.checkpoint(policy, layers);
  else layers(builder);
  return instance_of(builder.build(mlp.batch, mlp.input, seed, Loss::kSum, values));
}

// The whole model's step written for its mesh (parallel_step.hpp): the whole model's arguments
// and their values, each device running `one_device`.
Model on_mesh(const Model& one_device, Model whole, const ModelParallel& parallel, const std::string& what) {
  whole.program = parallel_step(one_device.program, whole.program, ParallelConfig{parallel.data, parallel.fsdp, parallel.tensor},
                                what, one_device.tensor_splits);
  if (!whole.arguments.empty()) whole.arguments = step_arguments(std::move(whole.arguments), whole.program);
  return whole;
}

ModelInstance gpt_instance(const GptModel& g, const std::string& policy, uint64_t seed, ModelValues values) {
  if (g.parallel.devices() == 1) return instance_of(build_gpt(g, policy, seed, values));
  GptConfig one_device = g;
  one_device.batch = g.batch / g.parallel.batch_shards();
  one_device.tensor = g.parallel.tensor;
  return instance_of(on_mesh(build_gpt(one_device, policy, seed, ModelValues::kNone), build_gpt(g, policy, seed, values),
                             g.parallel, "gpt"));
}

ModelInstance llama_instance(const LlamaModel& l, const std::string& policy, uint64_t seed, ModelValues values) {
  if (l.parallel.devices() == 1) return instance_of(build_llama(l, policy, seed, values));
  LlamaConfig one_device = l;
  one_device.batch = l.batch / l.parallel.batch_shards();
  one_device.tensor = l.parallel.tensor;
  return instance_of(on_mesh(build_llama(one_device, policy, seed, ModelValues::kNone), build_llama(l, policy, seed, values),
                             l.parallel, "llama"));
}

// ResNet blocks, each in a checkpoint with the policy (per_layer), all in one (whole) or none;
// then the pool and the head outside them, as the mlp keeps its last layer's loss outside.
ModelInstance cnn_instance(const CnnModel& cnn, const std::string& policy, uint64_t seed, ModelValues values) {
  auto blocks = [&](ModelBuilder& model) {
    for (size_t i = 0; i < cnn.widths.size(); ++i) {
      const int64_t stride = cnn.downsample && i > 0 ? 2 : 1;
      auto block = [&](ModelBuilder& b) { b.resnet_block(cnn.widths[i], stride); };
      if (cnn.remat == RematPlacement::kPerLayer) model.checkpoint(policy, block);
      else block(model);
    }
  };
  ModelBuilder builder;
  builder.dtype(cnn.dtype);
  if (cnn.remat == RematPlacement::kWhole) builder.checkpoint(policy, blocks);
  else blocks(builder);
  builder.global_average_pool().dense(cnn.classes);
  return instance_of(builder.build(Shape{cnn.batch, cnn.image, cnn.image, cnn.channels}, seed, Loss::kSumOfSquares, values));
}

// Every floating argument of `program`: what a program model trains when no `wrt` names them.
std::vector<size_t> floating_arguments(const Program& program) {
  std::vector<size_t> floating;
  for (size_t i = 0; i < program.invars.size(); ++i)
    if (is_floating(program.vars[program.invars[i]].type.dtype)) floating.push_back(i);
  return floating;
}

// `model` with `policy` in its checkpoints, its inputs drawn from `seed` unless `values` is kNone.
ModelInstance built(const ModelSpec& model, const std::string& policy, uint64_t seed, std::optional<int64_t> max_memory,
                    ModelValues values) {
  if (model.kind == ModelSpec::Kind::kMlp) return mlp_instance(model.mlp, policy, seed, values);
  if (model.kind == ModelSpec::Kind::kGpt) return gpt_instance(model.gpt, policy, seed, values);
  if (model.kind == ModelSpec::Kind::kLlama) return llama_instance(model.llama, policy, seed, values);
  if (model.kind == ModelSpec::Kind::kCnn) return cnn_instance(model.cnn, policy, seed, values);
  if (model.kind == ModelSpec::Kind::kTransformer) return instance_of(build_transformer(model.transformer, policy, seed, values));
  Program program = load_program(model.program.file);
  if (model.program.retarget) program = retarget_checkpoint_policies(program, policy, model.name + "'s retarget");
  ModelInstance instance;
  if (values == ModelValues::kDrawn) {
    instance = program_instance(std::move(program), seed, max_memory);
  } else {
    instance.trained = floating_arguments(program);
    instance.program = std::move(program);
  }
  if (!model.program.retarget) instance.whole_program_policy = policy;
  if (!model.program.wrt.empty()) {
    try {
      instance.trained = argument_indices(instance.program, model.program.wrt, "wrt");
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      fail_at(model.program.wrt_where, e.what());
    }
  }
  return instance;
}

}  // namespace

ModelInstance program_instance(Program program, uint64_t seed, std::optional<int64_t> max_memory) {
  // Drawn as doubles (Tensor's element type), before any step is planned: checked first.
  int64_t bytes = 0;
  for (const std::vector<int>* vars : {&program.constvars, &program.invars})
    for (int v : *vars) {
      int64_t these = 0;
      if (__builtin_mul_overflow(program.vars[v].type.num_elements(), int64_t{sizeof(double)}, &these) ||
          __builtin_add_overflow(bytes, these, &bytes))
        bytes = INT64_MAX;
    }
  check_memory_limit(bytes, max_memory, "the program's inputs");
  ModelInstance instance;
  instance.program = std::move(program);
  instance.trained = floating_arguments(instance.program);
  std::mt19937_64 rng(seed);
  for (int v : instance.program.constvars) instance.constants.push_back(uniform(instance.program.vars[v].type, rng));
  for (int v : instance.program.invars) instance.arguments.push_back(uniform(instance.program.vars[v].type, rng));
  return instance;
}

ModelInstance instantiate(const ModelSpec& model, const std::string& policy, uint64_t seed,
                          std::optional<int64_t> max_memory) {
  return built(model, policy, seed, max_memory, ModelValues::kDrawn);
}

ModelProgram model_program(const ModelSpec& model, const std::string& policy) {
  // The seed draws values alone: the program is the same for every seed.
  return built(model, policy, 0, std::nullopt, ModelValues::kNone);
}

}  // namespace rematkit::sweep
