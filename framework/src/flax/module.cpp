#include "rematkit/flax/module.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"

namespace rematkit::flax {

struct ModuleContext::State {
  RngOptions options;
  ModelValues values;
  DType param_dtype;
  random::Key root;  // Module.init's key
  std::vector<Variable> params;
  std::optional<size_t> dropout_key;  // its index in params, once a dropout asks for it
  int64_t dropout_sites = 0;
};

namespace {

std::string argument_name(const Variable& v) {
  if (v.is_dropout_key) return "dropout_key";
  const std::vector<std::string>& path = v.path;
  std::string name = "params";
  for (const std::string& part : path) name += "_" + part;
  return name;
}

// Positions of `arguments` (after x) in JAX's flatten order: dict keys sorted at every level.
std::vector<size_t> flatten_order(const std::vector<std::pair<size_t, Atom>>& arguments,
                                  const std::vector<Variable>& params) {
  std::vector<size_t> order(arguments.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {  // the dropout key after the params
    const Variable &va = params[arguments[a].first], &vb = params[arguments[b].first];
    return std::tie(va.is_dropout_key, va.path) < std::tie(vb.is_dropout_key, vb.path);
  });
  return order;
}

}  // namespace

Atom ModuleContext::param(const std::string& name, const Shape& shape, const Initializer& init) {
  Variable v;
  v.path = scope_.path();
  v.path.push_back(name);
  v.type = Type{state_.param_dtype, shape, MemorySpace::kDevice};
  v.key = scope_.make_rng();  // one count per param, even for initializers that ignore the key
  if (state_.values == ModelValues::kDrawn) v.value = init(v.key, shape, state_.options.mode);
  const std::string arg = argument_name(v);
  state_.params.push_back(std::move(v));
  const Atom atom = builder_.argument(arg, state_.params.back().type);
  arguments_.emplace_back(state_.params.size() - 1, atom);
  return atom;
}

Atom ModuleContext::argument_for(size_t index) {
  for (const auto& [i, atom] : arguments_)
    if (i == index) return atom;
  const Variable& v = state_.params[index];
  const Atom atom = builder_.argument(argument_name(v), v.type);
  arguments_.emplace_back(index, atom);
  return atom;
}

Atom ModuleContext::dropout_key() {
  if (!state_.dropout_key) {
    Variable v;
    v.path = {"dropout"};
    v.type = Type{DType::kKeyFry, {}, MemorySpace::kDevice};
    v.key = random::fold_in(state_.root, 1);  // a key of its own, apart from the params' stream
    v.is_dropout_key = true;
    state_.params.push_back(std::move(v));
    state_.dropout_key = state_.params.size() - 1;
  }
  return argument_for(*state_.dropout_key);
}

int64_t ModuleContext::next_dropout_site() { return state_.dropout_sites++; }

ModuleContext ModuleContext::child(const std::string& class_name) {
  return ModuleContext(state_, scope_.push_autonamed(class_name), builder_, arguments_);
}

Atom ModuleContext::checkpoint(const Module& body, const std::string& policy, Atom x) {
  // Flax lifts jax.remat over (variables, rngs, *args): the params (and the dropout key) become
  // inputs of the checkpoint.
  ProgramBuilder inner;
  std::vector<std::pair<size_t, Atom>> inner_arguments;
  const Atom inner_x = inner.argument("x", builder_.type_of(x));
  ModuleContext inner_ctx(state_, scope_, inner, inner_arguments);
  const Atom out = body.call(inner_ctx, inner_x);

  const std::vector<size_t> order = flatten_order(inner_arguments, state_.params);
  std::vector<size_t> with_x{0};
  for (size_t i : order) with_x.push_back(i + 1);
  inner.reorder_arguments(with_x);
  std::vector<Atom> operands{x};
  for (size_t i : order) operands.push_back(argument_for(inner_arguments[i].first));
  Params params;
  params.set("policy", parse_param_value(policy, "policy"));
  params.set("prevent_cse", ParamValue::of_bool(true));
  return builder_.call(Prim::kCheckpoint, inner.finish({out}), std::move(operands), std::move(params)).at(0);
}

Atom ModuleContext::scan(const Module& body, int64_t length, Atom x) {
  if (length < 1) fail("a scan over layers needs a length of at least 1, not " + std::to_string(length));
  const Type carry = builder_.type_of(x);
  Program layer;                             // copy 0, traced: x, then its params in flatten order
  std::vector<std::vector<size_t>> drawn;    // per copy: its params, in the order copy 0's program takes them
  for (int64_t copy = 0; copy < length; ++copy) {
    ProgramBuilder inner;
    std::vector<std::pair<size_t, Atom>> inner_arguments;
    const Atom inner_x = inner.argument("x", carry);
    ModuleContext inner_ctx(state_, scope_, inner, inner_arguments);
    const Atom out = body.call(inner_ctx, inner_x);
    if (inner.type_of(out) != carry)
      fail("a scanned layer must give back what it takes (the carry " + carry.str() + "), not " + inner.type_of(out).str());
    const std::vector<size_t> order = flatten_order(inner_arguments, state_.params);
    std::vector<size_t>& mine = drawn.emplace_back();
    for (size_t i : order) {
      if (state_.params[inner_arguments[i].first].is_dropout_key)
        fail("dropout inside a scan over layers is not supported (Flax splits the dropout stream per layer)");
      mine.push_back(inner_arguments[i].first);
    }
    if (copy > 0) continue;
    std::vector<size_t> with_x{0};
    for (size_t i : order) with_x.push_back(i + 1);
    inner.reorder_arguments(with_x);
    layer = inner.finish({out});
  }
  // The stacked params: new variables (the copies' own stay unused), arguments of this program.
  std::vector<Atom> operands{x};
  for (size_t k = 0; k < drawn[0].size(); ++k) {
    Variable stacked;
    const Variable& first = state_.params[drawn[0][k]];
    stacked.path = scope_.path();
    stacked.path.push_back("ScanLayers_" + std::to_string(k));
    stacked.path.insert(stacked.path.end(), first.path.begin(), first.path.end());
    stacked.type = first.type;
    stacked.type.shape.insert(stacked.type.shape.begin(), length);
    stacked.key = first.key;
    for (const std::vector<size_t>& copy : drawn) {
      const Variable& v = state_.params.at(copy.at(k));
      stacked.value.insert(stacked.value.end(), v.value.begin(), v.value.end());
    }
    state_.params.push_back(std::move(stacked));
    operands.push_back(argument_for(state_.params.size() - 1));
  }
  auto body_program = std::make_shared<const Program>(std::move(layer));
  return builder_.emit1(Prim::kScan, std::move(operands), scan_params_of(body_program, length, 0, 1));
}

Atom Dense::call(ModuleContext& ctx, Atom x) const {
  ProgramBuilder& b = ctx.builder();
  const Shape x_shape = b.type_of(x).shape;
  if (x_shape.empty()) fail("Dense needs an input of rank 1 or more");
  const Atom kernel = ctx.param("kernel", {x_shape.back(), features_}, kernel_init_);
  const Atom bias = ctx.param("bias", {features_}, bias_init_);
  // x's last dim with the kernel's first.
  const DotDims dims{{static_cast<int64_t>(x_shape.size()) - 1}, {0}, {}, {}};
  Atom y = b.emit1(Prim::kDotGeneral, {x, kernel}, dot_general_params(dims));
  // y += reshape(bias, (1,) * (y.ndim - 1) + (-1,)); a reshape to the same shape is no equation.
  Atom b_shaped = bias;
  if (x_shape.size() > 1) {
    Shape ones(x_shape.size() - 1, 1);
    ones.push_back(features_);
    b_shaped = b.emit1(Prim::kReshape, {bias}, reshape_params(ones));
  }
  return b.emit1(Prim::kAdd, {y, b_shaped});
}

Atom MLP::call(ModuleContext& ctx, Atom x) const {
  Atom y = x;
  for (size_t i = 0; i < widths_.size(); ++i) {
    ModuleContext layer = ctx.child("Dense");
    y = Dense(widths_[i]).call(layer, y);
    if (i + 1 < widths_.size()) y = ctx.builder().emit1(Prim::kRelu, {y});
  }
  return y;
}

InitializedModule init_module(const Module& module, const random::Key& key, const Type& x_type, RngOptions options,
                              bool sum_output, ModelValues values, DType param_dtype) {
  ModuleContext::State state{options, values, param_dtype, key, {}, std::nullopt, 0};
  Scope root(key, options);
  ProgramBuilder builder;
  std::vector<std::pair<size_t, Atom>> arguments;
  const Atom x = builder.argument("x", x_type);
  ModuleContext ctx(state, root, builder, arguments);
  Atom out = module.call(ctx, x);
  if (sum_output) {
    std::vector<int64_t> axes(builder.type_of(out).shape.size());
    std::iota(axes.begin(), axes.end(), 0);
    out = builder.emit1(Prim::kReduceSum, {out}, reduce_params(axes));
  }
  const std::vector<size_t> order = flatten_order(arguments, state.params);
  std::vector<size_t> with_x{0};
  for (size_t i : order) with_x.push_back(i + 1);
  builder.reorder_arguments(with_x);

  InitializedModule result;
  for (size_t i : order) result.argument_params.push_back(arguments[i].first);
  // Printed and read back, so every equation has a line in the program `rematkit mlp --program` shows.
  result.apply = parse_program(print_program(builder.finish({out})), "<flax module>");
  result.params = std::move(state.params);
  return result;
}

}  // namespace rematkit::flax
