#include "collective_transpose_rules.hpp"

#include "rematkit/ir/mesh.hpp"

namespace rematkit::autodiff {
namespace {

Params with(Params params, const std::string& key, ParamValue value) {
  params.set(key, std::move(value));
  return params;
}

// The params of all_gather from reduce_scatter's and back: the same axes, the dim renamed.
Params moved_dim(const Params& params, const char* from, const char* to) {
  Params out;
  for (const auto& [key, value] : params.entries) out.set(key == from ? to : key, value);
  return out;
}

// ppermute's perm=((src, dst), ...) with each pair turned round.
ParamValue inverse_perm(const ParamValue& perm) {
  ParamValue inverse = perm;
  for (ParamValue& pair : inverse.items)
    if (pair.items.size() == 2) std::swap(pair.items[0], pair.items[1]);
  return inverse;
}

ParamValue replicated_axes(const Params& params) {
  const ParamValue* axes = params.find("replicated_axes");
  return axes ? *axes : ParamValue::of_tuple({});
}

}  // namespace

ValueId collective_transpose(Emitter& em, Prim prim, const Params& params, ValueId ct, const Type& operand) {
  if (prim == Prim::kPsum) return em.linear(Prim::kPsum, {ct}, params);  // _psum_transpose_rule
  if (prim == Prim::kAllGather)  // _all_gather_transpose_rule
    return em.linear(Prim::kReduceScatter, {ct}, moved_dim(params, "all_gather_dimension", "scatter_dimension"));
  if (prim == Prim::kReduceScatter)  // _reduce_scatter_transpose_rule
    return em.linear(Prim::kAllGather, {ct}, moved_dim(params, "scatter_dimension", "all_gather_dimension"));
  if (prim == Prim::kPpermute)  // _ppermute_transpose_rule
    return em.linear(Prim::kPpermute, {ct}, with(params, "perm", inverse_perm(*params.find("perm"))));
  if (prim == Prim::kAllToAll) {  // _all_to_all_transpose_rule: split and concat swapped
    Params swapped = params;
    swapped.set("split_axis", *params.find("concat_axis"));
    swapped.set("concat_axis", *params.find("split_axis"));
    return em.linear(Prim::kAllToAll, {ct}, swapped);
  }
  if (prim == Prim::kPbroadcast) {
    if (!params.find("source")) return ct;  // shard_map's cast (0.4.16-0.5.3) moves nothing
    // _pbroadcast_transpose_rule: the sum of every device's cotangent, to the source alone.
    Params axis;
    axis.set("axis_name", *params.find("axis_name"));
    const ValueId summed = em.linear(Prim::kPsum, {ct}, with(Params{}, "axes", *params.find("axis_name")));
    const ValueId index = em.known(Prim::kAxisIndex, {}, axis);
    const ValueId is_source = em.known(Prim::kEq, {index, em.literal(static_cast<double>(params.find("source")->integer), DType::kI32)});
    const ValueId mask = em.known(Prim::kBroadcastInDim, {is_source}, broadcast_in_dim_params(operand.shape, {}));
    return em.linear(Prim::kSelectN, {mask, em.full(0.0, summed, EqnRole::kBackward), summed});
  }
  if (prim == Prim::kPvary) return ct;  // a cast: the same value on the device
  if (prim == Prim::kShardMapIn) {  // each device's block back into place, summed over the other devices
    ValueId whole = em.linear(Prim::kShardMapOut, {ct}, params);
    const ParamValue axes = replicated_axes(params);
    if (!axes.items.empty()) whole = em.linear(Prim::kPsum, {whole}, with(Params{}, "axes", axes));
    return whole;
  }
  if (prim == Prim::kShardMapOut) {  // each device's block of the whole cotangent, shared out over its copies
    const ValueId block = em.linear(Prim::kShardMapIn, {ct}, params);
    const ParamValue* copies = params.find("replicated_size");
    if (!copies || copies->integer <= 1) return block;
    return em.linear(Prim::kMul, {block, em.literal(1.0 / static_cast<double>(copies->integer), em.type(block).dtype)});
  }
  internal_error("no transpose rule for a linear " + std::string(prim_name(prim)));
}

}  // namespace rematkit::autodiff
