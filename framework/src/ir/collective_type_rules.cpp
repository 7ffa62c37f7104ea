#include "collective_type_rules.hpp"

#include "rematkit/ir/mesh.hpp"

namespace rematkit {
namespace {

std::string dim_text(int64_t dim) { return std::to_string(dim); }

int64_t checked_dim(const Params& params, const char* key, int64_t limit, const Type& t, const SourceLocation& where) {
  const int64_t d = param_int(params, key, where);
  if (d < 0 || d >= limit) fail_at(where, std::string(key) + "=" + dim_text(d) + " is not a dim of " + t.str());
  return d;
}

int64_t positive(const Params& params, const char* key, const SourceLocation& where) {
  const int64_t n = param_int(params, key, where);
  if (n <= 0) fail_at(where, std::string(key) + " must be positive, got " + std::to_string(n));
  return n;
}

// shard_map_in: each dim divided into dim_sizes blocks (shard_map.py's _shard_aval, which checks
// divisibility); shard_map_out: each dim dim_sizes blocks long.
Type mapped_value(bool split, const Params& params, const Type& t, const SourceLocation& where) {
  const std::vector<int64_t> sizes = param_ints(params, "dim_sizes", where);
  if (static_cast<int>(sizes.size()) > t.rank())
    fail_at(where, "the spec names " + std::to_string(sizes.size()) + " dims of " + t.str() + ", which has " +
                       std::to_string(t.rank()));
  Type out = t;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] <= 0) fail_at(where, "dim_sizes must be positive");
    if (!split) {
      out.shape[d] *= sizes[d];
      continue;
    }
    if (t.shape[d] % sizes[d] != 0)
      fail_at(where, "dim " + dim_text(static_cast<int64_t>(d)) + " of " + t.str() + " (size " + dim_text(t.shape[d]) +
                         ") does not split into " + dim_text(sizes[d]) + " equal blocks over its mesh axes");
    out.shape[d] /= sizes[d];
  }
  return out;
}

}  // namespace

Type collective_result(Prim prim, const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  if (prim == Prim::kShardMapIn) return mapped_value(true, params, in[0], where);
  if (prim == Prim::kShardMapOut) return mapped_value(false, params, in[0], where);
  collective_axes(params, where);
  if (prim == Prim::kAllGather) {  // _all_gather_shape_rule (_all_gather_effectful_abstract_eval)
    const int64_t n = positive(params, "axis_size", where);
    const bool tiled = params.find("tiled") && param_bool(params, "tiled", where);
    Type out = in[0];
    const int64_t d = checked_dim(params, "all_gather_dimension", in[0].rank() + (tiled ? 0 : 1), in[0], where);
    if (tiled) out.shape[static_cast<size_t>(d)] *= n;
    else out.shape.insert(out.shape.begin() + d, n);
    return out;
  }
  if (prim == Prim::kReduceScatter) {  // _reduce_scatter_shape_rule
    const int64_t n = positive(params, "axis_size", where);
    const bool tiled = params.find("tiled") && param_bool(params, "tiled", where);
    const int64_t d = checked_dim(params, "scatter_dimension", in[0].rank(), in[0], where);
    Type out = in[0];
    const int64_t size = out.shape[static_cast<size_t>(d)];
    if (tiled) {
      if (size % n != 0)
        fail_at(where, "reduce_scatter's scatter_dimension " + dim_text(d) + " of " + in[0].str() +
                           " does not split into axis_size " + dim_text(n) + " blocks");
      out.shape[static_cast<size_t>(d)] = size / n;
    } else {
      if (size != n)
        fail_at(where, "reduce_scatter (tiled=False) needs scatter_dimension " + dim_text(d) + " of " +
                           in[0].str() + " to be axis_size " + dim_text(n));
      out.shape.erase(out.shape.begin() + d);
    }
    return out;
  }
  if (prim == Prim::kAllToAll) {  // _all_to_all_abstract_eval
    if (!params.find("axis_size"))
      fail_at(where, "all_to_all's result needs its type written (NAME:TYPE): its axis size is read off it");
    const int64_t n = positive(params, "axis_size", where);
    const int64_t split = checked_dim(params, "split_axis", in[0].rank(), in[0], where);
    const int64_t concat = checked_dim(params, "concat_axis", in[0].rank(), in[0], where);
    Type out = in[0];
    if (out.shape[static_cast<size_t>(split)] % n != 0)
      fail_at(where, "all_to_all's split_axis " + dim_text(split) + " of " + in[0].str() + " does not split into " +
                         dim_text(n) + " blocks");
    out.shape[static_cast<size_t>(split)] /= n;
    out.shape[static_cast<size_t>(concat)] *= n;
    return out;
  }
  if (prim == Prim::kAxisIndex) return Type{DType::kI32, {}, MemorySpace::kDevice};
  return in.at(0);  // psum, pmax, pmin, ppermute, pbroadcast, pvary: the operand's type
}

}  // namespace rematkit
