#include "layers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "rematkit/ir/primitive_params.hpp"

namespace rematkit::flax {
namespace {

Atom lit(double v, DType dtype) { return ProgramBuilder::literal(v, dtype); }
DType dt_of(const ProgramBuilder& b, Atom a) { return b.type_of(a).dtype; }

}  // namespace

Atom keep_last(ProgramBuilder& b, Atom reduced, const Shape& like) {
  Shape kept = like;
  kept.back() = 1;
  std::vector<int64_t> dims(kept.size() - 1);
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  return b.emit1(Prim::kBroadcastInDim, {reduced}, broadcast_in_dim_params(kept, dims));
}

Atom layer_norm(ProgramBuilder& b, Atom x, Atom scale, Atom bias, double epsilon) {
  const Shape s = b.type_of(x).shape;
  const DType dt = b.type_of(x).dtype;
  const double n = static_cast<double>(s.back());
  const Params last = reduce_params({static_cast<int64_t>(s.size()) - 1});
  const Atom mean = b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {x}, last), lit(n, dt)});
  const Atom mean2 = b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {b.emit1(Prim::kSquare, {x})}, last), lit(n, dt)});
  const Atom var = b.emit1(Prim::kMax, {lit(0.0, dt), b.emit1(Prim::kSub, {mean2, b.emit1(Prim::kSquare, {mean})})});
  const Atom centred = b.emit1(Prim::kSub, {x, keep_last(b, mean, s)});
  const Atom inv = b.emit1(Prim::kRsqrt, {b.emit1(Prim::kAdd, {keep_last(b, var, s), lit(epsilon, dt)})});
  Shape ones(s.size() - 1, 1);
  ones.push_back(s.back());
  auto as_row = [&](Atom p) { return ones.size() == 1 ? p : b.emit1(Prim::kReshape, {p}, reshape_params(ones)); };
  Atom y = b.emit1(Prim::kMul, {centred, inv});
  y = b.emit1(Prim::kMul, {y, as_row(scale)});
  return b.emit1(Prim::kAdd, {y, as_row(bias)});
}

Atom gelu(ProgramBuilder& b, Atom x, bool approximate) {
  const DType dt = b.type_of(x).dtype;
  if (!approximate) {
    const Atom arg = b.emit1(Prim::kMul, {b.emit1(Prim::kNeg, {x}), lit(std::sqrt(0.5), dt)});
    return b.emit1(Prim::kMul, {b.emit1(Prim::kMul, {lit(0.5, dt), x}), b.emit1(Prim::kErfc, {arg})});
  }
  const Atom cube = b.emit1(Prim::kIntegerPow, {x}, integer_pow_params(3));
  const Atom inner = b.emit1(Prim::kAdd, {x, b.emit1(Prim::kMul, {lit(0.044715, dt), cube})});
  const Atom t = b.emit1(Prim::kTanh, {b.emit1(Prim::kMul, {lit(std::sqrt(2.0 / std::numbers::pi), dt), inner})});
  const Atom cdf = b.emit1(Prim::kMul, {lit(0.5, dt), b.emit1(Prim::kAdd, {lit(1.0, dt), t})});
  return b.emit1(Prim::kMul, {x, cdf});
}

Atom silu(ProgramBuilder& b, Atom x) { return b.emit1(Prim::kMul, {x, b.emit1(Prim::kLogistic, {x})}); }

Atom softmax(ProgramBuilder& b, Atom x) {
  const Type type = b.type_of(x);
  ProgramBuilder body;
  const Atom bx = body.argument("x", type);
  const Atom initial = body.argument("initial", Type{type.dtype, {}, MemorySpace::kDevice});
  const Params last = reduce_params({type.rank() - 1});
  const Atom m = body.emit1(Prim::kMax, {body.emit1(Prim::kReduceMax, {bx}, last), initial});
  const Atom e = body.emit1(Prim::kExp, {body.emit1(Prim::kSub, {bx, keep_last(body, m, type.shape)})});
  const Atom y = body.emit1(Prim::kDiv, {e, keep_last(body, body.emit1(Prim::kReduceSum, {e}, last), type.shape)});
  Params p;
  p.set("name", ParamValue::of_ident("_softmax"));
  p.set("jvp", ParamValue::of_ident("_softmax_jvp"));
  p.set("symbolic_zeros", ParamValue::of_bool(false));
  return b.call(Prim::kCustomJvpCall, body.finish({y}), {x, lit(-std::numeric_limits<double>::infinity(), type.dtype)},
                std::move(p))
      .at(0);
}

Atom dropout(ProgramBuilder& b, Atom x, Atom key, int64_t site, double rate) {
  if (rate <= 0) return x;
  const double keep = 1.0 - rate;
  const Type type = b.type_of(x);
  const Atom site_key = b.emit1(Prim::kRandomFoldIn, {key, lit(static_cast<double>(site), DType::kU32)});
  Params bits;
  bits.set("bit_width", ParamValue::of_int(32));
  bits.set("shape", ParamValue::of_ints(type.shape));
  Atom u = b.emit1(Prim::kRandomBits, {site_key}, std::move(bits));
  u = b.emit1(Prim::kShiftRightLogical, {u, lit(9, DType::kU32)});
  u = b.emit1(Prim::kOr, {u, lit(1065353216, DType::kU32)});  // the bits of 1.0f: [1, 2)
  Params to_f32;
  to_f32.set("new_dtype", ParamValue::of_ident("float32"));
  const Atom uniform = b.emit1(Prim::kSub, {b.emit1(Prim::kBitcastConvertType, {u}, std::move(to_f32)), lit(1.0, DType::kF32)});
  const Atom mask = b.emit1(Prim::kLt, {uniform, lit(keep, DType::kF32)});
  const Atom scaled = b.emit1(Prim::kDiv, {x, lit(keep, type.dtype)});
  const Atom zeros = b.emit1(Prim::kBroadcastInDim, {lit(0.0, type.dtype)}, broadcast_in_dim_params(type.shape, {}));
  return b.emit1(Prim::kSelectN, {mask, zeros, scaled});
}

Atom embed(ProgramBuilder& b, Atom table, Atom ids) {
  const Shape id_shape = b.type_of(ids).shape;
  const int64_t rank = static_cast<int64_t>(id_shape.size()), features = b.type_of(table).shape.at(1);
  Shape column = id_shape;
  column.push_back(1);
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = d;
  IndexingDims rows;
  rows.window_dims = {rank};
  rows.collapsed_dims = {0};
  rows.index_map = {0};
  const Atom index = b.emit1(Prim::kBroadcastInDim, {ids}, broadcast_in_dim_params(column, dims));
  return b.emit1(Prim::kGather, {table, index}, gather_params(rows, {1, features}, IndexMode::kFillOrDrop, std::nullopt));
}

Atom causal_attention(ProgramBuilder& b, Atom qkv, int64_t heads, const std::function<Atom(Atom)>& on_weights) {
  const Type type = b.type_of(qkv);
  const int64_t B = type.shape.at(0), S = type.shape.at(1), D = type.shape.at(2) / 3, H = heads, Dh = D / H;
  std::vector<Atom> parts;  // jnp.split(qkv, 3, axis=2): split's three outputs, an equation each here
  for (int64_t i = 0; i < 3; ++i) parts.push_back(split_part(b, qkv, {D, D, D}, 2, i));
  auto split_heads = [&](Atom a) { return b.emit1(Prim::kReshape, {a}, reshape_params({B, S, H, Dh})); };
  const Atom q = b.emit1(Prim::kDiv, {split_heads(parts[0]), lit(std::sqrt(static_cast<double>(Dh)), type.dtype)});
  const Atom k = split_heads(parts[1]);
  const Atom v = split_heads(parts[2]);
  return causal_attention_heads(b, q, k, v, on_weights);
}

Atom causal_attention_heads(ProgramBuilder& b, Atom q, Atom k, Atom v, const std::function<Atom(Atom)>& on_weights) {
  const Type type = b.type_of(q);
  const int64_t B = type.shape.at(0), S = type.shape.at(1), H = type.shape.at(2), Dh = type.shape.at(3);
  const int64_t K = b.type_of(k).shape.at(2);
  const DType dt = type.dtype;
  // Grouped-query attention: jnp.repeat(k, H // K, axis=2), a broadcast over a new group axis and
  // a reshape merging it into the heads.
  auto repeat_heads = [&](Atom a) {
    if (K == H) return a;
    const Atom grouped = b.emit1(Prim::kBroadcastInDim, {a}, broadcast_in_dim_params({B, S, K, H / K, Dh}, {0, 1, 2, 4}));
    return b.emit1(Prim::kReshape, {grouped}, reshape_params({B, S, H, Dh}));
  };
  k = repeat_heads(k);
  v = repeat_heads(v);
  Atom scores = b.emit1(Prim::kDotGeneral, {q, k}, dot_general_params({{3}, {3}, {0, 2}, {0, 2}}));  // [B,H,S,S]
  auto iota = [&](int64_t dim) {
    Params p;
    p.set("dimension", ParamValue::of_int(dim));
    p.set("dtype", ParamValue::of_ident("int32"));
    p.set("shape", ParamValue::of_ints({S, S}));
    p.set("sharding", ParamValue::none());
    return b.emit1(Prim::kIota, {}, std::move(p));
  };
  const Atom causal = b.emit1(Prim::kBroadcastInDim, {b.emit1(Prim::kGe, {iota(0), iota(1)})},
                              broadcast_in_dim_params({B, H, S, S}, {2, 3}));
  const double big_neg = dt == DType::kBF16 ? -3.3895313892515355e38 : static_cast<double>(std::numeric_limits<float>::lowest());
  const Atom neg = b.emit1(Prim::kBroadcastInDim, {lit(big_neg, dt)}, broadcast_in_dim_params({B, H, S, S}, {}));
  scores = b.emit1(Prim::kSelectN, {causal, neg, scores});
  const Atom weights = on_weights(softmax(b, scores));
  const Atom context = b.emit1(Prim::kDotGeneral, {weights, v}, dot_general_params({{3}, {1}, {0, 1}, {0, 2}}));  // [B,H,S,Dh]
  return b.emit1(Prim::kReshape, {b.emit1(Prim::kTranspose, {context}, transpose_params({0, 2, 1, 3}))},
                 reshape_params({B, S, H * Dh}));
}

Atom split_part(ProgramBuilder& b, Atom x, const std::vector<int64_t>& sizes, int64_t axis, int64_t output) {
  Params split;
  split.set("sizes", ParamValue::of_ints(sizes));
  split.set("axis", ParamValue::of_int(axis));
  split.set("output", ParamValue::of_int(output));
  return b.emit1(Prim::kSplit, {x}, std::move(split));
}

Atom rms_norm(ProgramBuilder& b, Atom x, Atom scale, double epsilon) {
  const Shape s = b.type_of(x).shape;
  const DType dt = b.type_of(x).dtype;
  const Params last = reduce_params({static_cast<int64_t>(s.size()) - 1});
  const Atom mean2 = b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {b.emit1(Prim::kSquare, {x})}, last),
                                          lit(static_cast<double>(s.back()), dt)});
  Shape ones(s.size() - 1, 1);
  ones.push_back(s.back());
  // flax/linen/normalization.py's _normalize: mul = rsqrt(var + epsilon) * scale, then x * mul.
  const Atom inv = b.emit1(Prim::kRsqrt, {b.emit1(Prim::kAdd, {keep_last(b, mean2, s), lit(epsilon, dt)})});
  const Atom mul = b.emit1(Prim::kMul, {inv, b.emit1(Prim::kReshape, {scale}, reshape_params(ones))});
  return b.emit1(Prim::kMul, {x, mul});
}

Atom rotary(ProgramBuilder& b, Atom x, double max_timescale) {
  const Type type = b.type_of(x);
  const int64_t B = type.shape.at(0), S = type.shape.at(1), H = type.shape.at(2), Dh = type.shape.at(3), half = Dh / 2;
  auto iota = [&](int64_t n) {
    Params p;
    p.set("dimension", ParamValue::of_int(0));
    p.set("dtype", ParamValue::of_ident("float32"));
    p.set("shape", ParamValue::of_ints({n}));
    p.set("sharding", ParamValue::none());
    return b.emit1(Prim::kIota, {}, std::move(p));
  };
  // timescale = max ** (2 i / Dh) for i < Dh / 2; the angle of position s is s / timescale.
  const Atom fraction = b.emit1(Prim::kDiv, {b.emit1(Prim::kMul, {lit(2.0, DType::kF32), iota(half)}),
                                             lit(static_cast<double>(Dh), DType::kF32)});
  const Atom timescale = b.emit1(Prim::kPow, {lit(max_timescale, DType::kF32), fraction});
  const Atom angle = b.emit1(Prim::kDiv, {b.emit1(Prim::kBroadcastInDim, {iota(S)}, broadcast_in_dim_params({S, half}, {0})),
                                          b.emit1(Prim::kBroadcastInDim, {timescale}, broadcast_in_dim_params({S, half}, {1}))});
  auto wave = [&](Prim p) {
    Atom w = b.emit1(p, {angle});
    if (dt_of(b, w) != type.dtype) {
      Params c = convert_element_type_params(type.dtype);
      c.set("weak_type", ParamValue::of_bool(false));
      w = b.emit1(Prim::kConvertElementType, {w}, std::move(c));
    }
    return b.emit1(Prim::kBroadcastInDim, {w}, broadcast_in_dim_params({B, S, H, half}, {1, 3}));
  };
  const Atom sin = wave(Prim::kSin), cos = wave(Prim::kCos);
  const Atom first = split_part(b, x, {half, half}, 3, 0), second = split_part(b, x, {half, half}, 3, 1);
  const Atom a = b.emit1(Prim::kSub, {b.emit1(Prim::kMul, {first, cos}), b.emit1(Prim::kMul, {second, sin})});
  const Atom c = b.emit1(Prim::kAdd, {b.emit1(Prim::kMul, {second, cos}), b.emit1(Prim::kMul, {first, sin})});
  return b.emit1(Prim::kConcatenate, {a, c}, concatenate_params(3));
}

PadPair same_padding(int64_t in, int64_t window, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t pad = std::max<int64_t>(0, (out - 1) * stride + window - in);
  return PadPair{pad / 2, pad - pad / 2};
}

Atom conv(ProgramBuilder& b, Atom x, Atom kernel, Atom bias, int64_t stride) {
  const Shape xs = b.type_of(x).shape, ks = b.type_of(kernel).shape;
  const int64_t rank = static_cast<int64_t>(xs.size()), spatial = rank - 2;
  ConvParams c;
  c.dims.lhs_spec = {0, rank - 1};
  c.dims.rhs_spec = {rank - 1, rank - 2};
  for (int64_t d = 0; d < spatial; ++d) {
    c.dims.lhs_spec.push_back(d + 1);
    c.dims.rhs_spec.push_back(d);
    c.window_strides.push_back(stride);
    c.padding.push_back(same_padding(xs[static_cast<size_t>(d + 1)], ks[static_cast<size_t>(d)], stride));
  }
  c.dims.out_spec = c.dims.lhs_spec;
  c.lhs_dilation.assign(static_cast<size_t>(spatial), 1);
  c.rhs_dilation.assign(static_cast<size_t>(spatial), 1);
  const Atom y = b.emit1(Prim::kConvGeneralDilated, {x, kernel}, conv_general_dilated_params(c));
  Shape ones(static_cast<size_t>(rank - 1), 1);
  ones.push_back(ks.back());
  return b.emit1(Prim::kAdd, {y, b.emit1(Prim::kReshape, {bias}, reshape_params(ones))});
}

Atom spatial_mean(ProgramBuilder& b, Atom x) {
  const Type type = b.type_of(x);
  std::vector<int64_t> axes;
  double count = 1;
  for (int64_t d = 1; d + 1 < type.rank(); ++d) {
    axes.push_back(d);
    count *= static_cast<double>(type.shape[static_cast<size_t>(d)]);
  }
  return b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {x}, reduce_params(axes)), lit(count, type.dtype)});
}

}  // namespace rematkit::flax
