// A small Flax-like module layer: modules trace themselves into a rematkit program while Flax's
// init draws their parameters (same names, same RNG stream, same params tree).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/flax/initializers.hpp"
#include "rematkit/flax/model_values.hpp"
#include "rematkit/flax/scope.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/ir/program_builder.hpp"

namespace rematkit::flax {

// One entry of the 'params' collection.
struct Variable {
  std::vector<std::string> path;  // below 'params', e.g. {"Dense_0", "kernel"}
  Type type;
  std::vector<float> value;       // row-major; empty when init_module was told ModelValues::kNone
  random::Key key;                // the key its initializer was given (for the dropout key, the key itself)
  // The 'dropout' rng stream's key (key<fry>[]), an input of the model like a param but not one:
  // Flax passes it to apply as rngs={'dropout': key}. It comes after the params.
  bool is_dropout_key = false;
};

// What Module.init gives: the parameters, and the program that applies the module to them.
struct InitializedModule {
  std::vector<Variable> params;        // in creation order (the order of Flax's dicts)
  Program apply;                       // arguments: x, then the params in JAX's flatten order (sorted paths)
  std::vector<size_t> argument_params; // for apply's argument i + 1: its index in params
};

class ModuleContext;

class REMATKIT_FLAX_EXPORT Module {
 public:
  virtual ~Module() = default;
  virtual std::string class_name() const = 0;
  // Traces this module applied to `x` into the context's program.
  virtual Atom call(ModuleContext& ctx, Atom x) const = 0;
};

// Where a module is being traced: its scope (names, RNG stream) and the program under construction.
class REMATKIT_FLAX_EXPORT ModuleContext {
 public:
  struct State;  // what all contexts of one init share
  ModuleContext(State& state, Scope& scope, ProgramBuilder& builder,
                std::vector<std::pair<size_t, Atom>>& arguments)
      : state_(state), scope_(scope), builder_(builder), arguments_(arguments) {}

  // Module.param: draws the parameter with the scope's next key (its type and key alone, under
  // ModelValues::kNone) and returns it as a program value.
  Atom param(const std::string& name, const Shape& shape, const Initializer& init);
  // The scope of this module's next child of `class_name` (Dense_0, Dense_1, ...).
  ModuleContext child(const std::string& class_name);
  ProgramBuilder& builder() { return builder_; }
  // Traces `body` into a checkpoint with `policy` (no extra scope level, the RNG stream unchanged).
  Atom checkpoint(const Module& body, const std::string& policy, Atom x);
  // nn.scan(body, variable_axes={'params': 0}, split_rngs={'params': True}, length=length) with x
  // the carry: one scan equation whose body is `body` once, its params stacked [length, ...] as
  // scan xs. Each copy's params are drawn as the unrolled copies' would be (Dense_0, Dense_1, ...
  // in order), so the scan computes what the unrolled layers compute.
  Atom scan(const Module& body, int64_t length, Atom x);
  // The 'dropout' stream's key in this program (one key for the model, lifted into checkpoints as
  // the params are), and a new site number to fold into it for each dropout.
  Atom dropout_key();
  int64_t next_dropout_site();

 private:
  State& state_;
  Scope& scope_;
  ProgramBuilder& builder_;
  std::vector<std::pair<size_t, Atom>>& arguments_;  // params that are arguments of builder_'s program
  // The argument of builder_'s program for variable `index`, made if it is not one yet.
  Atom argument_for(size_t index);
};

// flax.linen.Dense: kernel (in, features) with lecun_normal, bias (features,) with zeros.
class REMATKIT_FLAX_EXPORT Dense final : public Module {
 public:
  explicit Dense(int64_t features, Initializer kernel_init = lecun_normal(), Initializer bias_init = zeros())
      : features_(features), kernel_init_(std::move(kernel_init)), bias_init_(std::move(bias_init)) {}
  std::string class_name() const override { return "Dense"; }
  Atom call(ModuleContext& ctx, Atom x) const override;

 private:
  int64_t features_;
  Initializer kernel_init_, bias_init_;
};

// Dense(widths[0]) -> relu -> ... -> Dense(widths.back()), with jax.nn.relu between layers.
class REMATKIT_FLAX_EXPORT MLP final : public Module {
 public:
  explicit MLP(std::vector<int64_t> widths) : widths_(std::move(widths)) {}
  std::string class_name() const override { return "MLP"; }
  Atom call(ModuleContext& ctx, Atom x) const override;

 private:
  std::vector<int64_t> widths_;
};

// nn.remat(module, policy=...): the module's body inside a checkpoint with that policy.
class REMATKIT_FLAX_EXPORT Remat final : public Module {
 public:
  Remat(std::shared_ptr<const Module> inner, std::string policy) : inner_(std::move(inner)), policy_(std::move(policy)) {}
  std::string class_name() const override { return "Checkpoint" + inner_->class_name(); }
  Atom call(ModuleContext& ctx, Atom x) const override { return ctx.checkpoint(*inner_, policy_, x); }

 private:
  std::shared_ptr<const Module> inner_;
  std::string policy_;
};

// Module.init(PRNGKey, x): traces `module` on an input of `x_type`. With `sum_output`, the program
// returns sum(output) (for the gradient JAX users take: grad of apply(...).sum()). With
// ModelValues::kNone, jax.eval_shape of it: the same program and params, every value left empty.
// `param_dtype` is Flax's: the params' type in the program (their values are drawn in f32 as Flax's
// initializers draw them; the caller rounds them to it).
REMATKIT_FLAX_EXPORT InitializedModule init_module(const Module& module, const random::Key& key, const Type& x_type, RngOptions options,
                              bool sum_output = false, ModelValues values = ModelValues::kDrawn,
                              DType param_dtype = DType::kF32);

}  // namespace rematkit::flax
