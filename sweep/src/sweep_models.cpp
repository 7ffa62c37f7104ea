#include "rematkit/sweep/sweep_models.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/parallel_step.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/layer_scan.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/ir/program_builder.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/runtime/memory_limit.hpp"
#include "rematkit/ir/primitive_params.hpp"

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
  } else if (mlp.remat == Remat::kPerLayer) {
    builder.scan(n, [&](ModelBuilder& body) { body.checkpoint(policy, layer); });
  } else if (mlp.remat == Remat::kWhole) {
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
      if (mlp.remat == Remat::kPerLayer) model.checkpoint(policy, layer);
      else layer(model);
    }
  };
  ModelBuilder builder;
  if (mlp.loop.kind != LayerLoop::Kind::kUnrolled) scanned_mlp(builder, mlp, policy);
  else if (mlp.remat == Remat::kWhole) builder.checkpoint(policy, layers);
  else layers(builder);
  return instance_of(builder.build(mlp.batch, mlp.input, seed, Loss::kSum, values));
}

// dot_general with these contracting (and batch) dims.
Params dot(std::vector<int64_t> lhs_contract, std::vector<int64_t> rhs_contract, std::vector<int64_t> lhs_batch = {},
           std::vector<int64_t> rhs_batch = {}) {
  return dot_general_params(DotDims{std::move(lhs_contract), std::move(rhs_contract), std::move(lhs_batch), std::move(rhs_batch)});
}

// One block's params in the order they are arguments: Wq, Wk, Wv, Wo (D x D), W1 (D x F), W2 (F x D).
constexpr size_t kParamsPerBlock = 6;

// x + attention(x), then x + W2 relu(W1 x), on x:f32[B,S,D] with `w` the block's params.
Atom transformer_block(ProgramBuilder& b, const TransformerModel& t, Atom x, const std::vector<Atom>& w) {
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

ModelInstance transformer_instance(const TransformerModel& t, const std::string& policy, uint64_t seed, ModelValues values) {
  const Type x_type{DType::kF32, {t.batch, t.sequence, t.model}, MemorySpace::kDevice};
  auto square = [](int64_t rows, int64_t cols) { return Type{DType::kF32, {rows, cols}, MemorySpace::kDevice}; };
  const std::vector<Type> block_types = {square(t.model, t.model), square(t.model, t.model), square(t.model, t.model),
                                         square(t.model, t.model), square(t.model, t.mlp),   square(t.mlp, t.model)};
  // Blocks [first, last) traced into `b` on x with the params `w` (all blocks' params, in order).
  auto blocks = [&](ProgramBuilder& b, Atom x, const std::vector<Atom>& w, int64_t first, int64_t last) {
    for (int64_t l = first; l < last; ++l)
      x = transformer_block(b, t, x, std::vector<Atom>(w.begin() + (l - first) * kParamsPerBlock,
                                                       w.begin() + (l - first + 1) * kParamsPerBlock));
    return x;
  };
  // A checkpoint over blocks [first, last), as jax.checkpoint(f, policy=...) stages it.
  auto checkpointed = [&](ProgramBuilder& outer, Atom x, const std::vector<Atom>& w, int64_t first, int64_t last) {
    ProgramBuilder inner;
    const Atom inner_x = inner.argument("x", x_type);
    std::vector<Atom> inner_w;
    for (int64_t l = first; l < last; ++l)
      for (size_t i = 0; i < kParamsPerBlock; ++i)
        inner_w.push_back(inner.argument("w" + std::to_string(l) + "_" + std::to_string(i), block_types[i]));
    const Atom out = blocks(inner, inner_x, inner_w, first, last);
    Params params;
    params.set("policy", parse_param_value(policy, "policy"));
    params.set("prevent_cse", ParamValue::of_bool(true));
    std::vector<Atom> operands{x};
    operands.insert(operands.end(), w.begin(), w.end());
    return outer.call(Prim::kCheckpoint, inner.finish({out}), operands, params).at(0);
  };

  ProgramBuilder b;
  ModelInstance instance;
  const bool draw = values == ModelValues::kDrawn;
  std::mt19937_64 rng(seed);
  const Atom x = b.argument("x", x_type);
  if (draw) instance.arguments.push_back(uniform(x_type, rng));
  std::vector<Atom> w;
  for (int64_t l = 0; l < t.layers; ++l)
    for (size_t i = 0; i < kParamsPerBlock; ++i) {
      w.push_back(b.argument("w" + std::to_string(l) + "_" + std::to_string(i), block_types[i]));
      instance.trained.push_back(w.size());  // after x
      if (!draw) continue;
      Tensor param = uniform(block_types[i], rng);  // scaled to 1/sqrt(fan_in) so activations stay O(1)
      for (double& value : param.data) value = static_cast<float>(value / std::sqrt(static_cast<double>(block_types[i].shape[0])));
      instance.arguments.push_back(std::move(param));
    }
  Atom y = x;
  if (t.loop.kind != LayerLoop::Kind::kUnrolled) {
    // The same params, stacked [lengths..., ...] in layer order, as scan xs.
    std::vector<int64_t> lengths = t.loop.kind == LayerLoop::Kind::kRematScan ? t.loop.lengths : std::vector<int64_t>{t.layers};
    ProgramBuilder stacked_b;
    const Atom sx = stacked_b.argument("x", x_type);
    std::vector<Atom> stacked_w;
    std::vector<Tensor> stacked_values;
    for (size_t i = 0; i < kParamsPerBlock; ++i) {
      Type type = block_types[i];
      type.shape.insert(type.shape.begin(), lengths.begin(), lengths.end());
      stacked_w.push_back(stacked_b.argument("w_" + std::to_string(i), type));
      if (!draw) continue;
      Tensor value{type, {}};
      for (int64_t l = 0; l < t.layers; ++l) {
        const Tensor& layer_param = instance.arguments[1 + static_cast<size_t>(l) * kParamsPerBlock + i];
        value.data.insert(value.data.end(), layer_param.data.begin(), layer_param.data.end());
      }
      stacked_values.push_back(std::move(value));
    }
    const bool per_block = t.loop.kind == LayerLoop::Kind::kScan && t.remat == Remat::kPerLayer;
    const bool whole = t.loop.kind == LayerLoop::Kind::kScan && t.remat == Remat::kWhole;
    const LayerFn block = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) { return transformer_block(into, t, h, p); };
    const LayerFn scanned_blocks = [&](ProgramBuilder& into, Atom h, const std::vector<Atom>& p) {
      return scan_layers(into, h, p, lengths, policy, per_block, block);
    };
    const Atom out = whole ? checkpoint_over(stacked_b, sx, stacked_w, policy, true, scanned_blocks)
                           : scanned_blocks(stacked_b, sx, stacked_w);
    const Atom stacked_loss = stacked_b.emit1(Prim::kReduceSum, {out}, reduce_params({0, 1, 2}));
    ModelInstance scanned;
    scanned.program = stacked_b.finish({stacked_loss});
    for (size_t i = 0; i < kParamsPerBlock; ++i) scanned.trained.push_back(1 + i);  // after x
    if (draw) {
      scanned.arguments.push_back(std::move(instance.arguments[0]));
      for (Tensor& v : stacked_values) scanned.arguments.push_back(std::move(v));
    }
    return scanned;
  }
  if (t.remat == Remat::kNone) {
    y = blocks(b, x, w, 0, t.layers);
  } else if (t.remat == Remat::kWhole) {
    y = checkpointed(b, x, w, 0, t.layers);
  } else {
    for (int64_t l = 0; l < t.layers; ++l)
      y = checkpointed(b, y, std::vector<Atom>(w.begin() + l * kParamsPerBlock, w.begin() + (l + 1) * kParamsPerBlock), l, l + 1);
  }
  const Atom loss = b.emit1(Prim::kReduceSum, {y}, reduce_params({0, 1, 2}));
  instance.program = b.finish({loss});
  return instance;
}

// The scan lengths of a model's `loop:` over its `layers` (none: unrolled).
std::vector<int64_t> scan_lengths(const LayerLoop& loop, int64_t layers) {
  if (loop.kind == LayerLoop::Kind::kScan) return {layers};
  if (loop.kind == LayerLoop::Kind::kRematScan) return loop.lengths;
  return {};
}

// The whole model's step written for its mesh (parallel_step.hpp): the whole model's arguments
// and their values, each device running `one_device`.
Model on_mesh(const Model& one_device, Model whole, const ModelParallel& parallel, const std::string& what) {
  whole.program = parallel_step(one_device.program, whole.program, ParallelConfig{parallel.data, parallel.fsdp, parallel.tensor},
                                what, one_device.tensor_splits);
  if (!whole.arguments.empty()) whole.arguments = step_arguments(std::move(whole.arguments), whole.program);
  return whole;
}

GptRemat block_remat(Remat r) { return r == Remat::kNone ? GptRemat::kNone : r == Remat::kWhole ? GptRemat::kWhole : GptRemat::kEachBlock; }

ModelInstance gpt_instance(const GptModel& g, const std::string& policy, uint64_t seed, ModelValues values) {
  GptConfig c;
  c.layers = g.layers;
  c.batch = g.batch;
  c.sequence = g.sequence;
  c.model = g.model;
  c.heads = g.heads;
  c.mlp = g.mlp;
  c.vocab = g.vocab;
  c.dropout = g.dropout;
  c.dtype = g.dtype == "bf16" ? DType::kBF16 : DType::kF32;
  c.remat = block_remat(g.remat);
  c.scan_lengths = scan_lengths(g.loop, g.layers);
  if (g.parallel.devices() == 1) return instance_of(build_gpt(c, policy, seed, values));
  GptConfig one_device = c;
  one_device.batch = c.batch / g.parallel.batch_shards();
  one_device.tensor = g.parallel.tensor;
  return instance_of(on_mesh(build_gpt(one_device, policy, seed, ModelValues::kNone), build_gpt(c, policy, seed, values),
                             g.parallel, "gpt"));
}

ModelInstance llama_instance(const LlamaModel& l, const std::string& policy, uint64_t seed, ModelValues values) {
  LlamaConfig c;
  c.layers = l.layers;
  c.batch = l.batch;
  c.sequence = l.sequence;
  c.model = l.model;
  c.heads = l.heads;
  c.kv_heads = l.kv_heads;
  c.mlp = l.mlp;
  c.vocab = l.vocab;
  c.dtype = l.dtype == "bf16" ? DType::kBF16 : DType::kF32;
  c.remat = block_remat(l.remat);
  c.scan_lengths = scan_lengths(l.loop, l.layers);
  if (l.parallel.devices() == 1) return instance_of(build_llama(c, policy, seed, values));
  LlamaConfig one_device = c;
  one_device.batch = c.batch / l.parallel.batch_shards();
  one_device.tensor = l.parallel.tensor;
  return instance_of(on_mesh(build_llama(one_device, policy, seed, ModelValues::kNone), build_llama(c, policy, seed, values),
                             l.parallel, "llama"));
}

// ResNet blocks, each in a checkpoint with the policy (per_layer), all in one (whole) or none;
// then the pool and the head outside them, as the mlp keeps its last layer's loss outside.
ModelInstance cnn_instance(const CnnModel& cnn, const std::string& policy, uint64_t seed, ModelValues values) {
  auto blocks = [&](ModelBuilder& model) {
    for (size_t i = 0; i < cnn.widths.size(); ++i) {
      const int64_t stride = cnn.downsample && i > 0 ? 2 : 1;
      auto block = [&](ModelBuilder& b) { b.resnet_block(cnn.widths[i], stride); };
      if (cnn.remat == Remat::kPerLayer) model.checkpoint(policy, block);
      else block(model);
    }
  };
  ModelBuilder builder;
  if (cnn.remat == Remat::kWhole) builder.checkpoint(policy, blocks);
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
  if (model.kind == ModelSpec::Kind::kTransformer) return transformer_instance(model.transformer, policy, seed, values);
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
