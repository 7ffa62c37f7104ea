// Building a feed-forward model from C++ without writing jaxpr: Flax's nn.Dense and nn.Conv (with
// their init), ResNet blocks, activations, and checkpoints with a policy around any run of layers,
// as nn.remat places them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/model_values.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {
namespace flax {
class Module;
}

// The scalar a model's program returns.
enum class Loss {
  kSumOfSquares,  // sum(y^2): a loss SGD can drive down (to y = 0), as ../peers take it
  kSum,           // sum(y): the gradient JAX users take with grad(lambda p: apply(p, x).sum())
};

// How one device's share of a Megatron tensor-parallel model (GptConfig::tensor) takes an argument
// of the whole model: the whole's dim `dim` seen as `parts` equal parts (3 for a fused q, k, v
// kernel), each part split evenly over the mesh axis 'tensor', the device's pieces put together.
// dim -1: the device takes the whole argument.
struct TensorSplit {
  int64_t dim = -1;
  int64_t parts = 1;
};

// A model ready to differentiate and train.
struct Model {
  Program program;                // arguments: the input x, then the params (then a dropout key); one output: the loss
  std::vector<Tensor> arguments;  // x (uniform in [-1, 1), or token ids), then the params as Flax's init draws them;
                                  // empty when built with ModelValues::kNone (the program's arguments say their types)
  std::vector<size_t> params;     // which arguments are params (what a training step updates)
  std::vector<TensorSplit> tensor_splits;  // per argument of a token model (gpt, llama); empty for others
};

// Layers in order, each applied to the previous one's output: ModelBuilder().dense(64).relu().dense(1).
class REMATKIT_FLAX_EXPORT ModelBuilder {
 public:
  ModelBuilder();
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder&);
  ModelBuilder& operator=(const ModelBuilder&);

  // y = x W + b: W (in, features) lecun_normal, b zeros, named Dense_0, Dense_1, ... as in Flax.
  ModelBuilder& dense(int64_t features);
  // jax.nn.relu and jnp.tanh of the previous layer's output.
  ModelBuilder& relu();
  ModelBuilder& tanh();
  // jax.nn.gelu (approximate: the tanh form, Flax's default; exact: with erfc) and jax.nn.silu.
  ModelBuilder& gelu(bool approximate = true);
  ModelBuilder& silu();
  // nn.LayerNorm over the features (epsilon 1e-6): scale ones and bias zeros, named LayerNorm_0, ...
  ModelBuilder& layer_norm();
  // nn.Embed(vocab, features) as the first layer: the model's input is then token ids (i32), and the
  // output their rows of the table (Flax's default embed init).
  ModelBuilder& embedding(int64_t vocab, int64_t features);
  // Causal multi-head self-attention on [batch, sequence, features] (features a multiple of heads):
  // a Dense to q, k, v, the causal mask from iota, jax.nn.softmax, a Dense back; with `dropout`
  // on the attention weights.
  ModelBuilder& attention(int64_t heads, double dropout = 0.0);
  // nn.Dropout(rate): masks drawn from the model's dropout key (one key<fry>[] argument after the
  // params, passed into checkpoints), a site of its own each; recomputation draws the same masks.
  ModelBuilder& dropout(double rate);
  // nn.Conv(features, (kernel,) * n, strides=stride, padding='SAME') on [batch, spatial..., channels]
  // (NHWC, Flax's layout): kernel (kernel..., channels, features) lecun_normal, bias zeros, named
  // Conv_0, Conv_1, ...; conv_general_dilated with the explicit padding pairs JAX prints.
  ModelBuilder& conv(int64_t features, int64_t kernel = 3, int64_t stride = 1);
  // A ResNet block, named ResNetBlock_0, ...: Flax's examples/imagenet ResNetBlock without its
  // norms, y = Conv(3x3, stride) -> relu -> Conv(3x3), then relu(residual + y), the residual x or,
  // when its shape is not y's (stride 2 or a new width), a Conv(1x1, stride) of x.
  ModelBuilder& resnet_block(int64_t features, int64_t stride = 1);
  // Global average pooling: jnp.mean over the spatial dims, [batch, spatial..., channels] to
  // [batch, channels].
  ModelBuilder& global_average_pool();
  // jax.ad_checkpoint.checkpoint_name: tags the previous layer's output `name`, so that name
  // policies (save_only_these_names('h'), ...) can save it; the value passes through unchanged.
  ModelBuilder& name(const std::string& name);
  // The layers `body` adds run inside jax.checkpoint with `policy` (a spec such as
  // "nothing_saveable" or "save_only_these_names('a')"); checkpoints nest.
  ModelBuilder& checkpoint(const std::string& policy, const std::function<void(ModelBuilder&)>& body);
  // nn.scan over `length` copies of the layers `body` adds, each taking the previous one's output
  // (which must keep its type): one scan equation, the copies' params stacked [length, ...] and
  // drawn as the unrolled copies' would be.
  ModelBuilder& scan(int64_t length, const std::function<void(ModelBuilder&)>& body);
  // nn.remat_scan(body, lengths=(a, b, ...), policy=policy): scan_a { checkpoint { scan_b { ... } } },
  // a checkpoint with `policy` around every scan but the outermost's body's innermost
  // (flax/core/lift.py: remat_scan); the product of the lengths is the number of copies.
  ModelBuilder& remat_scan(const std::vector<int64_t>& lengths, const std::string& policy,
                           const std::function<void(ModelBuilder&)>& body);

  // Flax's dtype and param_dtype for every layer: f32 (the default) or bf16. The input, the params
  // (drawn in f32 and rounded, as Flax's initializers draw them) and every activation take it.
  ModelBuilder& dtype(DType dtype);

  // Flax's Module.init with PRNGKey(seed) on an input f32[batch, features]; x is drawn from `seed` too
  // (with ModelValues::kNone, nothing is drawn: the program and params alone). A bad-input Error if
  // no layer was added.
  Model build(int64_t batch, int64_t features, uint64_t seed = 0, Loss loss = Loss::kSumOfSquares,
              ModelValues values = ModelValues::kDrawn) const;
  // The same on an input of any shape: f32 values, or token ids in [0, vocab) when the first layer
  // is an embedding ({batch, sequence}). With a dropout, the dropout key is the last argument.
  Model build(const Shape& input, uint64_t seed = 0, Loss loss = Loss::kSumOfSquares,
              ModelValues values = ModelValues::kDrawn) const;

 private:
  std::vector<std::shared_ptr<const flax::Module>> layers_;
  DType dtype_ = DType::kF32;
};

}  // namespace rematkit
