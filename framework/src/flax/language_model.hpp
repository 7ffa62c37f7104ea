// What the token models (build_gpt, build_llama) share: token ids and targets as arguments, params
// drawn as Flax's init draws them (or not at all) and stacked for scanned blocks, and the
// cross-entropy loss.
// Internal to rematkit::flax.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rematkit/flax/initializers.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/ir/program_builder.hpp"

namespace rematkit::flax {

struct ParamSpec {
  std::string name;
  Shape shape;
  Initializer init;
  TensorSplit split = {};  // in a tensor-parallel share, how the whole param splits
};

// The params a token model lists: `leading` top-level ones, `per_block` for each of `layers`
// blocks in block order, then the rest (the final norm, a head).
struct TokenModelParams {
  std::vector<ParamSpec> specs;
  size_t leading = 0;
  size_t per_block = 0;
};

// A token model's arguments as they are added to its program: each one's value into
// Model::arguments when values are drawn (never made under ModelValues::kNone), and the params'
// places among the arguments into Model::params.
class TokenModelArguments {
 public:
  TokenModelArguments(ProgramBuilder& b, Model& model, ModelValues values) : b_(b), model_(model), values_(values) {}
  bool drawn() const { return values_ == ModelValues::kDrawn; }
  // Argument `name` of `type`; `value` makes its value, called only when values are drawn.
  Atom input(const std::string& name, const Type& type, const std::function<Tensor()>& value, TensorSplit split = {});
  Atom param(const std::string& name, const Type& type, const std::function<Tensor()>& value, TensorSplit split = {});

 private:
  ProgramBuilder& b_;
  Model& model_;
  ModelValues values_;
  size_t count_ = 0;  // arguments so far
};

// Token ids and targets i32[batch, sequence] as the first two arguments: a fixed pseudo-random
// sequence from `seed`, the targets the ids shifted by one.
std::pair<Atom, Atom> token_arguments(TokenModelArguments& args, int64_t batch, int64_t sequence, int64_t vocab,
                                      uint64_t seed);

// The params drawn from split(PRNGKey(seed), count) in f32 and rounded to `dtype` (Flax's
// param_dtype), added as arguments (Model::params lists them). With `scan_lengths`, each block
// param is one argument stacked [lengths..., ...] in block order, named as the first block's. The
// atoms: the leading params, the blocks' (per block, or stacked once), then the rest.
std::vector<Atom> add_token_model_params(TokenModelArguments& args, const TokenModelParams& params, DType dtype,
                                         int64_t layers, const std::vector<int64_t>& scan_lengths, uint64_t seed);

// optax's softmax_cross_entropy_with_integer_labels on logits [B, S, V] as they come (bf16 logits
// give a bf16 loss, as optax computes it): logsumexp(logits) - logits[target], the target picked by
// a one-hot of iota == target; then the mean over the B*S tokens in f32.
Atom mean_cross_entropy(ProgramBuilder& b, Atom logits, Atom targets);

}  // namespace rematkit::flax
