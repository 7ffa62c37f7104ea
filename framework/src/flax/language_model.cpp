#include "language_model.hpp"

#include <tbb/parallel_for.h>

#include "../random/present_pages.hpp"
#include "layers.hpp"

#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit::flax {

Atom TokenModelArguments::input(const std::string& name, const Type& type, const std::function<Tensor()>& value,
                                TensorSplit split) {
  const Atom a = b_.argument(name, type);
  ++count_;
  if (drawn()) model_.arguments.push_back(value());
  model_.tensor_splits.push_back(split);
  return a;
}

Atom TokenModelArguments::param(const std::string& name, const Type& type, const std::function<Tensor()>& value,
                                TensorSplit split) {
  model_.params.push_back(count_);
  return input(name, type, value, split);
}

std::pair<Atom, Atom> token_arguments(TokenModelArguments& args, int64_t batch, int64_t sequence, int64_t vocab,
                                      uint64_t seed) {
  const Type tokens{DType::kI32, {batch, sequence}, MemorySpace::kDevice};
  // The flattened ids from token `shift` on: the targets are the ids one token on.
  auto ids_from = [&](uint64_t shift) {
    Tensor t{tokens, std::vector<double>(static_cast<size_t>(tokens.num_elements()))};
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = static_cast<double>((seed + 7 * (i + shift) + 3) % static_cast<uint64_t>(vocab));
    return t;
  };
  const Atom ids = args.input("ids", tokens, [&] { return ids_from(0); });
  const Atom targets = args.input("targets", tokens, [&] { return ids_from(1); });
  return {ids, targets};
}

namespace {

// One param argument of a token model: a param, or with scan_lengths a block param of every block
// stacked [lengths..., ...] in block order; `specs` are the params it holds, in that order.
struct ParamArgument {
  std::string name;
  Type type;
  TensorSplit split;
  std::vector<size_t> specs;
};

// The arguments, in their order: the leading params, the blocks' (per block, or stacked once,
// named as the first block's), then the rest.
std::vector<ParamArgument> param_arguments(const TokenModelParams& params, DType dtype, int64_t layers,
                                           const std::vector<int64_t>& scan_lengths) {
  const std::vector<ParamSpec>& specs = params.specs;
  const bool scanned = !scan_lengths.empty();
  const size_t first = params.leading, end = params.leading + params.per_block * static_cast<size_t>(layers);
  std::vector<ParamArgument> arguments;
  for (size_t i = 0; i < specs.size(); ++i) {
    const bool block_param = i >= first && i < end;
    if (!scanned || !block_param)
      arguments.push_back({specs[i].name, Type{dtype, specs[i].shape, MemorySpace::kDevice}, specs[i].split, {i}});
    if (!scanned || i != first) continue;
    for (size_t k = 0; k < params.per_block; ++k) {
      ParamArgument stacked{specs[first + k].name, Type{dtype, specs[first + k].shape, MemorySpace::kDevice},
                            specs[first + k].split, {}};
      stacked.type.shape.insert(stacked.type.shape.begin(), scan_lengths.begin(), scan_lengths.end());
      if (stacked.split.dim >= 0) stacked.split.dim += static_cast<int64_t>(scan_lengths.size());  // behind the stacking dims
      for (int64_t l = 0; l < layers; ++l) stacked.specs.push_back(first + static_cast<size_t>(l) * params.per_block + k);
      arguments.push_back(std::move(stacked));
    }
  }
  return arguments;
}

// A block of drawn f32 values rounded to `dtype` (param_dtype) into a tensor's doubles.
void store_rounded(const float* values, size_t count, DType dtype, double* out) {
  if (dtype == DType::kF32) {
    for (size_t j = 0; j < count; ++j) out[j] = values[j];  // an f32 value is its own rounding
    return;
  }
  for (size_t j = 0; j < count; ++j) out[j] = round_to_dtype(values[j], dtype, Arithmetic::kFloat32);
}

// Every argument's value, its params drawn from split(PRNGKey(seed), count) in f32 straight into
// place. The arguments are made in parallel, so that one's allocation (page faults, which take as
// long as drawing on a virtual machine) runs beside another's drawing, and each draw is split over
// the threads as well.
std::vector<Tensor> draw_param_arguments(const std::vector<ParamSpec>& specs, const std::vector<ParamArgument>& arguments,
                                         DType dtype, uint64_t seed) {
  const std::vector<random::Key> keys = random::split(random::prng_key(seed), specs.size(), random::PrngMode::kPartitionable);
  std::vector<Tensor> values(arguments.size());
  tbb::parallel_for(size_t{0}, arguments.size(), [&](size_t a) {
    Tensor value{arguments[a].type, random::with_present_pages<double>(static_cast<size_t>(arguments[a].type.num_elements()))};
    double* at = value.data.data();
    for (size_t i : arguments[a].specs) {
      specs[i].init(keys[i], specs[i].shape, random::PrngMode::kPartitionable,
                    [dtype, at](uint64_t first, const float* block, size_t count) { store_rounded(block, count, dtype, at + first); });
      at += num_elements(specs[i].shape);
    }
    values[a] = std::move(value);
  });
  return values;
}

}  // namespace

std::vector<Atom> add_token_model_params(TokenModelArguments& args, const TokenModelParams& params, DType dtype,
                                         int64_t layers, const std::vector<int64_t>& scan_lengths, uint64_t seed) {
  const std::vector<ParamArgument> arguments = param_arguments(params, dtype, layers, scan_lengths);
  // (Moved into the model, not copied: a real-size model's params are a gigabyte as doubles.)
  std::vector<Tensor> drawn;
  if (args.drawn()) drawn = draw_param_arguments(params.specs, arguments, dtype, seed);
  std::vector<Atom> atoms;
  for (size_t a = 0; a < arguments.size(); ++a)
    atoms.push_back(args.param(arguments[a].name, arguments[a].type, [&] { return std::move(drawn[a]); }, arguments[a].split));
  return atoms;
}

Atom mean_cross_entropy(ProgramBuilder& b, Atom logits, Atom targets) {
  const Type lt = b.type_of(logits);
  const Shape& ls = lt.shape;
  const DType dt = lt.dtype;
  auto emit = [&](Prim prim, std::vector<Atom> in, Params p = {}) { return b.emit1(prim, std::move(in), std::move(p)); };
  auto cast = [&](Atom a, DType to) {
    if (b.type_of(a).dtype == to) return a;
    Params p = convert_element_type_params(to);
    p.set("weak_type", ParamValue::of_bool(false));
    return emit(Prim::kConvertElementType, {a}, std::move(p));
  };
  const Atom m = emit(Prim::kStopGradient, {emit(Prim::kReduceMax, {logits}, reduce_params({2}))});
  const Atom shifted = emit(Prim::kSub, {logits, keep_last(b, m, ls)});
  const Atom lse =
      emit(Prim::kAdd, {emit(Prim::kLog, {emit(Prim::kReduceSum, {emit(Prim::kExp, {shifted})}, reduce_params({2}))}), m});
  Params iota;
  iota.set("dimension", ParamValue::of_int(2));
  iota.set("dtype", ParamValue::of_ident("int32"));
  iota.set("shape", ParamValue::of_ints(ls));
  iota.set("sharding", ParamValue::none());
  const Atom one_hot =
      emit(Prim::kEq, {emit(Prim::kIota, {}, std::move(iota)), emit(Prim::kBroadcastInDim, {targets}, broadcast_in_dim_params(ls, {0, 1}))});
  const Atom picked = emit(Prim::kReduceSum, {emit(Prim::kMul, {logits, cast(one_hot, dt)})}, reduce_params({2}));
  const Atom total = emit(Prim::kReduceSum, {cast(emit(Prim::kSub, {lse, picked}), DType::kF32)}, reduce_params({0, 1}));
  return emit(Prim::kDiv, {total, ProgramBuilder::literal(static_cast<double>(ls[0] * ls[1]))});
}

}  // namespace rematkit::flax
