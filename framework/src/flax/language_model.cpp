#include "language_model.hpp"

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

std::vector<Atom> add_token_model_params(TokenModelArguments& args, const TokenModelParams& params, DType dtype,
                                         int64_t layers, const std::vector<int64_t>& scan_lengths, uint64_t seed) {
  const std::vector<ParamSpec>& specs = params.specs;
  std::vector<Tensor> drawn;  // every param's value, when values are drawn
  if (args.drawn()) {
    const std::vector<random::Key> keys = random::split(random::prng_key(seed), specs.size(), random::PrngMode::kPartitionable);
    for (size_t i = 0; i < specs.size(); ++i) {
      const Type t{dtype, specs[i].shape, MemorySpace::kDevice};  // param_dtype = dtype
      const std::vector<float> values = specs[i].init(keys[i], specs[i].shape, random::PrngMode::kPartitionable);
      Tensor value{t, std::vector<double>(values.size())};
      for (size_t j = 0; j < values.size(); ++j) value.data[j] = round_to_dtype(values[j], dtype, Arithmetic::kFloat32);
      drawn.push_back(std::move(value));
    }
  }
  // Scanned blocks take their params stacked [lengths..., ...], in block order: the same values.
  const bool scanned = !scan_lengths.empty();
  const size_t first = params.leading, end = params.leading + params.per_block * static_cast<size_t>(layers);
  std::vector<Atom> atoms;
  for (size_t i = 0; i < specs.size(); ++i) {
    const bool block_param = i >= first && i < end;
    const Type type{dtype, specs[i].shape, MemorySpace::kDevice};
    // (Moved, not copied: a real-size model's params are a gigabyte as doubles.)
    if (!scanned || !block_param)
      atoms.push_back(args.param(specs[i].name, type, [&] { return std::move(drawn[i]); }, specs[i].split));
    if (!scanned || i != first) continue;
    for (size_t k = 0; k < params.per_block; ++k) {
      Type stacked_type{dtype, specs[first + k].shape, MemorySpace::kDevice};
      stacked_type.shape.insert(stacked_type.shape.begin(), scan_lengths.begin(), scan_lengths.end());
      TensorSplit split = specs[first + k].split;
      if (split.dim >= 0) split.dim += static_cast<int64_t>(scan_lengths.size());  // behind the stacking dims
      atoms.push_back(args.param(specs[first + k].name, stacked_type, [&] {
        Tensor stacked{stacked_type, {}};
        for (int64_t l = 0; l < layers; ++l) {
          Tensor& layer = drawn[first + static_cast<size_t>(l) * params.per_block + k];
          stacked.data.insert(stacked.data.end(), layer.data.begin(), layer.data.end());
          std::vector<double>().swap(layer.data);  // in the stack now
        }
        return stacked;
      }, split));
    }
  }
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
