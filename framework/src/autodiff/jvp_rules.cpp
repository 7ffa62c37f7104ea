// JVP rules as jax/_src/lax/lax.py, jax/_src/lax/slicing.py, jax/_src/lax/control_flow/loops.py
// (cumsum), jax/_src/lax/convolution.py, jax/_src/lax/windowed_reductions.py and
// jax/_src/nn/functions.py (relu's and softmax's custom JVPs) write them: one case per primitive,
// each emitting its primal-only coefficient equations, then the tangent equations.
#include "jvp_rules.hpp"

#include "associative_scan_jvp.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rematkit::autodiff {
namespace {

constexpr ValueId kZero = kNoValue;

ValueId add_tangents(Emitter& em, ValueId a, ValueId b) {
  if (a == kZero) return b;
  if (b == kZero) return a;
  return em.linear(Prim::kAdd, {a, b});
}

// g * coefficient, the shape of most unary rules; a zero tangent stays zero.
ValueId scale(Emitter& em, ValueId g, ValueId coefficient) { return em.linear(Prim::kMul, {g, coefficient}); }

// lax._reduce_chooser_jvp_rule (reduce_max, reduce_min): the tangent is averaged over the positions
// that attain the chosen value.
ValueId reduce_chooser_jvp(Emitter& em, const Params& params, ValueId x, ValueId ans, ValueId g) {
  const auto axes = param_ints(params, "axes", {});
  Shape kept = em.shape(x);
  for (int64_t a : axes) kept[a] = 1;
  ValueId ans_kept = em.known(Prim::kReshape, {ans}, reshape_params(kept));
  ValueId at_max = em.known(Prim::kEq, {x, ans_kept});
  ValueId locations = em.known(Prim::kConvertElementType, {at_max}, convert_element_type_params(em.type(x).dtype));
  ValueId counts = em.known(Prim::kReduceSum, {locations}, reduce_params(axes));
  ValueId picked = em.linear(Prim::kReduceSum, {em.linear(Prim::kMul, {g, locations})}, reduce_params(axes));
  return em.linear(Prim::kDiv, {picked, counts});
}

// lax._reduce_prod_jvp_rule through lax._reduce_jvp: the reduced axes moved to the front and
// flattened, then halved until one row is left, each half multiplied into the other (the second
// padded with a row of ones when the count is odd); the tangent follows mul's rule at each level.
ValueId reduce_prod_jvp(Emitter& em, const Params& params, ValueId x, ValueId g) {
  const auto axes = param_ints(params, "axes", {});
  const Shape shape = em.shape(x);
  std::vector<int64_t> permutation(axes.begin(), axes.end()), kept_shape;
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[a];
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      permutation.push_back(d);
      kept_shape.push_back(shape[d]);
    }
  Shape rows{n};
  rows.insert(rows.end(), kept_shape.begin(), kept_shape.end());
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == static_cast<int64_t>(i);
  // Known (primal) or tangent equations, as `tangent` says.
  auto op = [&](bool tangent, Prim prim, std::vector<ValueId> inputs, Params p) {
    return tangent ? em.linear(prim, std::move(inputs), std::move(p)) : em.known(prim, std::move(inputs), std::move(p));
  };
  auto to_rows = [&](ValueId v, bool tangent) {  // lax.reshape returns an operand already so shaped
    if (!identity) v = op(tangent, Prim::kTranspose, {v}, transpose_params(permutation));
    return em.shape(v) == rows ? v : op(tangent, Prim::kReshape, {v}, reshape_params(rows));
  };
  if (n == 0) return kZero;  // the product of nothing is 1, whatever the operand
  ValueId xs = to_rows(x, false), ts = to_rows(g, true);
  const DType dt = em.type(x).dtype;
  while (em.shape(xs)[0] > 1) {
    const int64_t m = em.shape(xs)[0], first = (m + 1) / 2;
    Shape start(rows.size(), 0), mid = em.shape(xs), end = em.shape(xs);
    mid[0] = first;
    Shape second_start = start;
    second_start[0] = first;
    auto halves = [&](ValueId v, bool tangent) {
      ValueId a = op(tangent, Prim::kSlice, {v}, slice_params(start, mid));
      ValueId b = op(tangent, Prim::kSlice, {v}, slice_params(second_start, end));
      if (m - first != first) {
        std::vector<PaddingDim> config(rows.size(), PaddingDim{0, 0, 0});
        config[0].high = 1;
        b = op(tangent, Prim::kPad, {b, em.literal(tangent ? 0.0 : 1.0, dt)}, pad_params(config));
      }
      return std::pair{a, b};
    };
    const auto [x1, x2] = halves(xs, false);
    const auto [t1, t2] = halves(ts, true);
    ts = em.linear(Prim::kAdd, {em.linear(Prim::kMul, {t1, x2}), em.linear(Prim::kMul, {x1, t2})});
    xs = em.known(Prim::kMul, {x1, x2});
  }
  return em.linear(Prim::kReshape, {ts}, reshape_params(kept_shape));  // squeeze the one row
}

// lax._sort_jvp: the operands sorted with an iota along `dimension` as one more operand give the
// permutation; each tangent is gathered by it. A rank-1 sort gathers with the permutation as the
// index, as JAX does; a higher rank, where JAX's gather batches over the other dims, gathers with
// full index vectors (the other dims' iotas beside the permutation): the same elements.
ValueId sort_jvp(Emitter& em, const Params& params, const std::vector<ValueId>& x, ValueId g) {
  const Shape shape = em.shape(x[0]);
  const int64_t dimension = param_int(params, "dimension", {}), rank = static_cast<int64_t>(shape.size());
  auto iota = [&](int64_t dim) {
    Params p;
    p.set("dimension", ParamValue::of_int(dim));
    p.set("dtype", ParamValue::of_ident("uint32"));
    p.set("shape", ParamValue::of_ints(shape));
    p.set("sharding", ParamValue::none());
    return em.known(Prim::kIota, {}, std::move(p));
  };
  std::vector<ValueId> operands = x;
  operands.push_back(iota(dimension));
  Params sorted = params;
  sorted.set("output", ParamValue::of_int(static_cast<int64_t>(x.size())));
  const ValueId permutation = em.known(Prim::kSort, operands, sorted);
  Shape column = shape;
  column.push_back(1);
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = d;
  auto expanded = [&](ValueId v) { return em.known(Prim::kBroadcastInDim, {v}, broadcast_in_dim_params(column, dims)); };
  ValueId index = expanded(permutation);
  IndexingDims gather;
  gather.collapsed_dims = {dimension};
  gather.index_map = {dimension};
  if (rank > 1) {
    std::vector<ValueId> parts;
    for (int64_t d = 0; d < rank; ++d) parts.push_back(d == dimension ? index : expanded(iota(d)));
    index = em.known(Prim::kConcatenate, parts, concatenate_params(rank));
    gather.collapsed_dims = dims;
    gather.index_map = dims;
  }
  return em.linear(Prim::kGather, {g, index},
                   gather_params(gather, Shape(static_cast<size_t>(rank), 1), IndexMode::kPromiseInBounds, std::nullopt));
}

ValueId softmax_jvp(Emitter& em, const Params& params, ValueId y, ValueId g) {
  int64_t axis = param_int(params, "axis", {});
  if (axis < 0) axis += em.type(y).rank();
  return softmax_tangent(em, y, g, {axis}, kNoValue);
}

// lax._replace_zero(x): select(x == 0, ones_like(x), x).
ValueId replace_zero(Emitter& em, ValueId x) {
  ValueId is_zero = em.known(Prim::kEq, {x, em.literal(0.0, em.type(x).dtype)});
  ValueId ones = em.full(1.0, x, EqnRole::kCoefficient);
  return em.known(Prim::kSelectN, {is_zero, x, ones});
}

// lax._pow_jvp_lhs: g * y * x ** (y - 1), with the integer exponent's zeros kept at zero.
ValueId pow_jvp_base(Emitter& em, ValueId x, ValueId y, ValueId g) {
  const DType result = em.type(x).dtype;
  if (em.type(y).dtype == result) {
    ValueId y_minus_one = em.known(Prim::kSub, {y, em.full(1.0, y, EqnRole::kCoefficient)});
    return em.linear(Prim::kMul, {g, em.known(Prim::kMul, {y, em.known(Prim::kPow, {x, y_minus_one})})});
  }
  // An integer exponent, converted to the base's dtype; both at the result's shape.
  ValueId yf = em.known(Prim::kConvertElementType, {y}, convert_element_type_params(result));
  const Shape shape = *broadcast_shapes(em.shape(x), em.shape(yf));
  auto at_shape = [&](ValueId v) {
    if (em.shape(v) == shape) return v;
    std::vector<int64_t> dims;
    for (int i = 0; i < em.type(v).rank(); ++i) dims.push_back(i);
    return em.known(Prim::kBroadcastInDim, {v}, broadcast_in_dim_params(shape, dims));
  };
  x = at_shape(x);
  yf = at_shape(yf);
  ValueId y_is_zero = em.known(Prim::kEq, {yf, em.literal(0.0, result)});
  ValueId zeros = em.full(0.0, yf, EqnRole::kCoefficient);
  ValueId safe_y = replace_zero(em, yf);
  ValueId y_minus_one = em.known(Prim::kSub, {yf, em.full(1.0, yf, EqnRole::kCoefficient)});
  ValueId jac = em.known(Prim::kMul, {safe_y, em.known(Prim::kPow, {x, y_minus_one})});
  return em.linear(Prim::kMul, {g, em.known(Prim::kSelectN, {y_is_zero, jac, zeros})});
}

// lax._pow_jvp_rhs: g * log(x) * ans, with log's argument kept off zero.
ValueId pow_jvp_exponent(Emitter& em, ValueId x, ValueId ans, ValueId g) {
  ValueId log_x = em.known(Prim::kLog, {replace_zero(em, x)});
  return em.linear(Prim::kMul, {g, em.known(Prim::kMul, {log_x, ans})});
}

// lax.clamp's JVP for one operand: select(mask, g, zeros_like(x)); a scalar bound's tangent is
// spread over the operand's shape first.
ValueId clamp_term(Emitter& em, ValueId mask, ValueId x, ValueId g) {
  ValueId zeros = em.full(0.0, x, EqnRole::kCoefficient);
  return em.linear(Prim::kSelectN, {mask, zeros, em.broadcast_to(g, em.shape(x))});
}

// select_n(p, *cases): the tangent selects among the cases' tangents; zero tangents are
// instantiated as zeros (ad.instantiate_zeros), which are known values.
ValueId select_n_jvp(Emitter& em, const std::vector<ValueId>& x, const std::vector<ValueId>& t) {
  std::vector<ValueId> inputs{x[0]};
  for (size_t i = 1; i < x.size(); ++i)
    inputs.push_back(t[i] != kZero ? t[i] : em.full(0.0, x[i], EqnRole::kCoefficient));
  return em.linear(Prim::kSelectN, inputs);
}

// lax._abs_jvp_rule on a complex operand: real(g * conj(x) / ans), where an ans of 0 divides by 1
// (_replace_zero), so the tangent at 0 is 0.
ValueId complex_abs_jvp(Emitter& em, ValueId x, ValueId ans, ValueId g) {
  const DType dt = em.type(x).dtype;
  const ValueId widened = em.known(Prim::kConvertElementType, {ans}, convert_element_type_params(dt));
  const ValueId is_zero = em.known(Prim::kEq, {widened, em.literal(0.0, dt)});
  const ValueId divisor = em.known(Prim::kSelectN, {is_zero, widened, em.full(1.0, widened, EqnRole::kCoefficient)});
  const ValueId ratio = em.known(Prim::kDiv, {em.known(Prim::kConj, {x}), divisor});
  return em.linear(Prim::kReal, {scale(em, g, ratio)});
}

// ad.linear_jvp (deflinear, deflinear2): a linear primitive applied to its operands' tangents, the
// zero ones instantiated as zeros (known values). Operands [kept_begin, kept_end) are indices
// (dynamic_update_slice's starts, scatter-add's indices) and pass as they are.
ValueId linear_jvp(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                   const std::vector<ValueId>& t, size_t kept_begin, size_t kept_end) {
  std::vector<ValueId> tangents;
  for (size_t i = 0; i < x.size(); ++i) {
    if (i >= kept_begin && i < kept_end) tangents.push_back(x[i]);
    else tangents.push_back(t[i] != kZero ? t[i] : em.full(0.0, x[i], EqnRole::kCoefficient));
  }
  return em.linear(prim, tangents, params);
}

// The one tangent of `prim`'s output. Unary rules read x[0], y[0] and g = t[0]; binary ones both
// operands and tangents (kZero where symbolically zero).
ValueId output_tangent(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                       const std::vector<ValueId>& y, const std::vector<ValueId>& t) {
  if (x.empty()) internal_error("no JVP rule for " + std::string(prim_name(prim)) + " without operands");
  const ValueId g = t[0];
  const DType dt = em.type(x[0]).dtype;
  // Both operands' terms are emitted in operand order (a rule's equations come out in a fixed order).
  auto sum_of_terms = [&](auto term_a, auto term_b) {
    const ValueId a = term_a();
    return add_tangents(em, a, term_b());
  };
  switch (prim) {
    case Prim::kAdd:  // ta + tb
      if (t[0] != kZero && t[1] != kZero) return em.linear(Prim::kAdd, {t[0], t[1]});
      return em.broadcast_to(t[0] != kZero ? t[0] : t[1], em.shape(y[0]));
    case Prim::kSub:  // ta - tb
      if (t[0] != kZero && t[1] != kZero) return em.linear(Prim::kSub, {t[0], t[1]});
      if (t[0] != kZero) return em.broadcast_to(t[0], em.shape(y[0]));
      return em.broadcast_to(em.linear(Prim::kNeg, {t[1]}), em.shape(y[0]));
    case Prim::kMul:  // ta * b + a * tb
      return sum_of_terms([&] { return t[0] == kZero ? kZero : em.linear(Prim::kMul, {t[0], x[1]}); },
                          [&] { return t[1] == kZero ? kZero : em.linear(Prim::kMul, {x[0], t[1]}); });
    case Prim::kDiv: {  // ta / b  +  (-tb * a) * b ** -2
      ValueId da = t[0] == kZero ? kZero : em.linear(Prim::kDiv, {t[0], x[1]});
      ValueId db = kZero;
      if (t[1] != kZero) {
        ValueId inv_sq = em.known(Prim::kIntegerPow, {x[1]}, integer_pow_params(-2));
        db = em.linear(Prim::kMul, {em.linear(Prim::kMul, {em.linear(Prim::kNeg, {t[1]}), x[0]}), inv_sq});
      }
      return add_tangents(em, da, db);
    }
    case Prim::kMax: case Prim::kMin:  // g * _balanced_eq(operand, ans, other) per operand
      return sum_of_terms([&] { return t[0] == kZero ? kZero : scale(em, t[0], balanced_eq(em, x[0], y[0], x[1])); },
                          [&] { return t[1] == kZero ? kZero : scale(em, t[1], balanced_eq(em, x[1], y[0], x[0])); });
    case Prim::kAddAny:  // linear (ad_util.add_jaxvals)
      if (t[0] != kZero && t[1] != kZero) return em.linear(Prim::kAddAny, {t[0], t[1]});
      return em.broadcast_to(t[0] != kZero ? t[0] : t[1], em.shape(y[0]));
    case Prim::kPow:  // lax._pow_jvp_lhs, _pow_jvp_rhs (an integer exponent has no tangent)
      return sum_of_terms([&] { return t[0] == kZero ? kZero : pow_jvp_base(em, x[0], x[1], t[0]); },
                          [&] { return t[1] == kZero ? kZero : pow_jvp_exponent(em, x[0], y[0], t[1]); });
    case Prim::kAtan2:  // g * y / (x^2 + y^2)  and  g * -x / (x^2 + y^2)
      return sum_of_terms(
          [&] {
            if (t[0] == kZero) return kZero;
            ValueId sum = em.known(Prim::kAdd, {em.known(Prim::kSquare, {x[0]}), em.known(Prim::kSquare, {x[1]})});
            return em.linear(Prim::kMul, {t[0], em.known(Prim::kDiv, {x[1], sum})});
          },
          [&] {
            if (t[1] == kZero) return kZero;
            ValueId minus_x = em.known(Prim::kNeg, {x[0]});
            ValueId sum = em.known(Prim::kAdd, {em.known(Prim::kSquare, {x[0]}), em.known(Prim::kSquare, {x[1]})});
            return em.linear(Prim::kMul, {t[1], em.known(Prim::kDiv, {minus_x, sum})});
          });
    case Prim::kRem:  // g  and  -g * sign(x / y) * floor(|x / y|)
      return sum_of_terms([&] { return t[0] == kZero ? kZero : em.broadcast_to(t[0], em.shape(y[0])); },
                          [&] {
                            if (t[1] == kZero) return kZero;
                            ValueId minus_g = em.linear(Prim::kNeg, {t[1]});
                            ValueId sign = em.known(Prim::kSign, {em.known(Prim::kDiv, {x[0], x[1]})});
                            ValueId whole = em.known(
                                Prim::kFloor, {em.known(Prim::kAbs, {em.known(Prim::kDiv, {x[0], x[1]})})});
                            return em.linear(Prim::kMul, {minus_g, em.known(Prim::kMul, {sign, whole})});
                          });
    case Prim::kClamp: {  // lax.clamp's three rules: g where the operand decides the result, else 0
      const ValueId lo = x[0], v = x[1], hi = x[2];
      ValueId from_lo = kZero, from_x = kZero, from_hi = kZero;
      if (t[0] != kZero) {
        ValueId mask = em.known(Prim::kAnd, {em.known(Prim::kGt, {lo, v}), em.known(Prim::kLt, {lo, hi})});
        from_lo = clamp_term(em, mask, v, t[0]);
      }
      if (t[1] != kZero) {
        ValueId mask = em.known(Prim::kAnd, {em.known(Prim::kGt, {v, lo}), em.known(Prim::kLt, {v, hi})});
        from_x = clamp_term(em, mask, v, t[1]);
      }
      if (t[2] != kZero) from_hi = clamp_term(em, em.known(Prim::kLt, {hi, v}), v, t[2]);
      return add_tangents(em, add_tangents(em, from_lo, from_x), from_hi);
    }
    case Prim::kConcatenate: case Prim::kPad:  // ad.deflinear2
      return linear_jvp(em, prim, params, x, t, x.size(), x.size());
    case Prim::kDynamicUpdateSlice:  // slicing._dynamic_update_slice_jvp: the operands' tangents, zeros instantiated
      return linear_jvp(em, prim, params, x, t, 2, x.size());
    case Prim::kScatterAdd:  // slicing._scatter_addsub_jvp: likewise, the indices as they are
      return linear_jvp(em, prim, params, x, t, 1, 2);
    case Prim::kGather: {  // slicing._gather_jvp_rule: the tangent gathered alike, filled with 0
      Params tangent_params = params;
      tangent_params.set("fill_value", ParamValue::of_int(0));
      return em.linear(prim, {g, x[1]}, tangent_params);
    }
    case Prim::kDynamicSlice: {  // slicing._dynamic_slice_jvp: the tangent sliced at the same indices
      std::vector<ValueId> operands{g};
      operands.insert(operands.end(), x.begin() + 1, x.end());
      return em.linear(prim, operands, params);
    }
    case Prim::kIota: case Prim::kArgMax: case Prim::kArgMin: case Prim::kBitcastConvertType:  // ad.defjvp_zero
    case Prim::kRandomSeed: case Prim::kRandomWrap: case Prim::kRandomUnwrap: case Prim::kRandomSplit:
    case Prim::kRandomFoldIn: case Prim::kRandomBits: case Prim::kRandomClone: case Prim::kThreefry2x32:  // prng.py: defjvp_zero
    case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq: case Prim::kNe:
    case Prim::kAnd: case Prim::kOr: case Prim::kXor: case Prim::kShiftLeft: case Prim::kShiftRightLogical:
    case Prim::kShiftRightArithmetic: case Prim::kNot: case Prim::kSign: case Prim::kFloor: case Prim::kCeil:
    case Prim::kRound: case Prim::kIsFinite:
      return kZero;  // ad.defjvp_zero: piecewise constant, or no floating output
    case Prim::kNeg: return em.linear(Prim::kNeg, {g});
    case Prim::kExp: return scale(em, g, y[0]);                                // g * exp(x)
    case Prim::kLog: return em.linear(Prim::kDiv, {g, x[0]});                  // g / x
    case Prim::kSin: return scale(em, g, em.known(Prim::kCos, {x[0]}));        // g * cos(x)
    case Prim::kCos:                                                           // -(g * sin(x))
      return em.linear(Prim::kNeg, {scale(em, g, em.known(Prim::kSin, {x[0]}))});
    case Prim::kTanh: {  // (g + g * ans) * (1 - ans)
      ValueId one_minus = em.known(Prim::kSub, {em.literal(1.0, dt), y[0]});
      return scale(em, em.linear(Prim::kAdd, {g, scale(em, g, y[0])}), one_minus);
    }
    case Prim::kLogistic: {  // g * (ans * (1 - ans))
      ValueId one_minus = em.known(Prim::kSub, {em.literal(1.0, dt), y[0]});
      return scale(em, g, em.known(Prim::kMul, {y[0], one_minus}));
    }
    case Prim::kSqrt: return scale(em, g, em.known(Prim::kDiv, {em.literal(0.5, dt), y[0]}));  // g * (0.5 / ans)
    case Prim::kRsqrt: {  // g * (-0.5 * (ans / x))
      ValueId ratio = em.known(Prim::kDiv, {y[0], x[0]});
      return scale(em, g, em.known(Prim::kMul, {em.literal(-0.5, dt), ratio}));
    }
    case Prim::kSquare: return scale(em, g, em.known(Prim::kMul, {em.literal(2.0, dt), x[0]}));  // g * (2 * x)
    case Prim::kIntegerPow: {  // lax._integer_pow_jvp: 0, g, g * (2 * x), or g * (y * x ** (y - 1))
      const int64_t power = param_int(params, "y", {});
      if (power == 0) return kZero;
      if (power == 1) return g;
      ValueId p = power == 2 ? x[0] : em.known(Prim::kIntegerPow, {x[0]}, integer_pow_params(power - 1));
      return scale(em, g, em.known(Prim::kMul, {em.literal(static_cast<double>(power), dt), p}));
    }
    case Prim::kAbs: {  // select(x >= 0, g, -g)
      if (is_complex(dt)) return complex_abs_jvp(em, x[0], y[0], g);
      ValueId non_negative = em.known(Prim::kGe, {x[0], em.literal(0.0, dt)});
      ValueId minus_g = em.linear(Prim::kNeg, {g});
      return em.linear(Prim::kSelectN, {non_negative, minus_g, g});
    }
    case Prim::kExp2:  // ln 2 * (g * ans); ln 2 is computed when the rule is traced
      return em.linear(Prim::kMul, {em.known(Prim::kLog, {em.literal(2.0, dt)}), scale(em, g, y[0])});
    case Prim::kExpm1: return scale(em, g, em.known(Prim::kAdd, {y[0], em.literal(1.0, dt)}));  // g * (ans + 1)
    case Prim::kLog1p: return em.linear(Prim::kDiv, {g, em.known(Prim::kAdd, {x[0], em.literal(1.0, dt)})});  // g / (x + 1)
    case Prim::kTan: {  // g * (1 + ans^2)
      ValueId squared = em.known(Prim::kSquare, {y[0]});
      return scale(em, g, em.known(Prim::kAdd, {em.literal(1.0, dt), squared}));
    }
    case Prim::kErf: {  // 2/sqrt(pi) * (g * exp(-x^2))  (lax/special.py)
      ValueId e = em.known(Prim::kExp, {em.known(Prim::kNeg, {em.known(Prim::kSquare, {x[0]})})});
      return em.linear(Prim::kMul, {em.literal(2.0 / std::sqrt(std::numbers::pi), dt), scale(em, g, e)});
    }
    case Prim::kErfc: {  // -2/sqrt(pi) * (g * exp(-x^2))  (lax/special.py)
      ValueId e = em.known(Prim::kExp, {em.known(Prim::kNeg, {em.known(Prim::kSquare, {x[0]})})});
      return em.linear(Prim::kMul, {em.literal(-2.0 / std::sqrt(std::numbers::pi), dt), scale(em, g, e)});
    }
    case Prim::kErfInv: {  // sqrt(pi)/2 * (g * exp(ans^2))  (lax/special.py)
      ValueId e = em.known(Prim::kExp, {em.known(Prim::kSquare, {y[0]})});
      return em.linear(Prim::kMul, {em.literal(std::sqrt(std::numbers::pi) / 2.0, dt), scale(em, g, e)});
    }
    case Prim::kRelu: {  // jax.nn.relu's custom JVP: select(x > 0, g, full_like(g, 0))
      ValueId mask = em.known(Prim::kGt, {x[0], em.literal(0.0, dt)});
      ValueId zeros = em.full(0.0, x[0], EqnRole::kCoefficient);
      return em.linear(Prim::kSelectN, {mask, zeros, g});
    }
    case Prim::kName: return g;  // the tangent passes through, unnamed
    case Prim::kStopGradient: return kZero;
    case Prim::kConvertElementType: {  // converted like the primal; nothing flows into integers
      if (!is_inexact(dtype_param(params, "new_dtype", {}))) return kZero;
      return em.linear(Prim::kConvertElementType, {g}, params);
    }
    case Prim::kSelectN: return select_n_jvp(em, x, t);
    case Prim::kDotGeneral:  // bilinear: dot(ta, b) + dot(a, tb)
      return sum_of_terms([&] { return t[0] == kZero ? kZero : em.linear(prim, {t[0], x[1]}, params); },
                          [&] { return t[1] == kZero ? kZero : em.linear(prim, {x[0], t[1]}, params); });
    case Prim::kConvGeneralDilated:  // ad.defbilinear: conv(ta, b) + conv(a, tb)
      return sum_of_terms([&] { return t[0] == kZero ? kZero : em.linear(prim, {t[0], x[1]}, params); },
                          [&] { return t[1] == kZero ? kZero : em.linear(prim, {x[0], t[1]}, params); });
    case Prim::kReduceWindowMax: case Prim::kReduceWindowMin:  // windowed_reductions._reduce_window_chooser_jvp_rule
      return em.linear(Prim::kSelectAndGatherAdd, {g, x[0]},
                       select_and_gather_add_params(prim == Prim::kReduceWindowMax ? Prim::kGe : Prim::kLe,
                                                    window_params(params, {})));
    // _select_and_gather_add_jvp, _select_and_scatter_add_jvp: linear in the first operand, the
    // second only picks the places.
    case Prim::kSelectAndGatherAdd: case Prim::kSelectAndScatterAdd:
      return g == kZero ? kZero : em.linear(prim, {g, x[1]}, params);
    case Prim::kReduceWindowSum:  // ad.deflinear2
    case Prim::kReduceSum: case Prim::kBroadcastInDim: case Prim::kReshape: case Prim::kTranspose:
    case Prim::kSqueeze: case Prim::kSlice: case Prim::kSplit: case Prim::kRev: case Prim::kCopy: case Prim::kReducePrecision:
    case Prim::kCumsum: case Prim::kOptimizationBarrier:  // lax._opt_barrier_jvp: the barrier on the tangent
    case Prim::kReal: case Prim::kImag: case Prim::kConj:  // lax.py: deflinear2, conj ad.linear_jvp
    case Prim::kFft:  // fft.py: ad.deflinear2(fft_p, ...)
    // pjit.py: sharding_constraint and reshard are deflinear2; parallel.py: psum, all_gather,
    // reduce_scatter, ppermute, all_to_all, pbroadcast and pvary are linear; shard_map_in and
    // shard_map_out move blocks.
    case Prim::kShardingConstraint: case Prim::kReshard: case Prim::kPsum: case Prim::kAllGather:
    case Prim::kReduceScatter: case Prim::kPpermute: case Prim::kAllToAll: case Prim::kPbroadcast: case Prim::kPvary:
    case Prim::kShardMapIn: case Prim::kShardMapOut:
      return em.linear(prim, {g}, params);  // linear: the same operation on the tangent
    case Prim::kComplex: return linear_jvp(em, prim, params, x, t, 0, 0);  // lax.py: deflinear2
    case Prim::kReduceMax: case Prim::kReduceMin: return reduce_chooser_jvp(em, params, x[0], y[0], g);
    case Prim::kReduceProd: return reduce_prod_jvp(em, params, x[0], g);
    case Prim::kCumprod: case Prim::kCummax: case Prim::kCummin: case Prim::kCumlogsumexp:  // loops.py
      return cumulative_jvp(em, prim, x[0], g, param_int(params, "axis", {}),
                            params.find("reverse") && param_bool(params, "reverse", {}));
    case Prim::kSort: {  // only the output's own operand's tangent moves into it
      const int64_t output = params.find("output") ? param_int(params, "output", {}) : 0;
      const ValueId own = t[static_cast<size_t>(output)];
      if (own == kZero || num_elements(em.shape(own)) == 0) return kZero;  // an empty sort moves nothing
      return sort_jvp(em, params, x, own);
    }
    case Prim::kSoftmax: return softmax_jvp(em, params, y[0], g);
    case Prim::kPjit: case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall:
      break;  // inlined by jvp_trace before any rule runs
    case Prim::kScan: case Prim::kCond: case Prim::kWhile:
      break;  // linearized whole by jvp_trace (control_flow_jvp.cpp)
    case Prim::kShardMap: case Prim::kXlaPmap:
      break;  // traced into shard_map_in, the body and shard_map_out by jvp_trace
    case Prim::kAxisIndex: return kZero;  // an integer
    case Prim::kPmax: case Prim::kPmin:  // parallel.py registers no JVP for them
      fail_at(em.where(), "Differentiation rule for '" + std::string(prim_name(prim)) +
                              "' not implemented (jax/_src/lax/parallel.py has none: differentiate with --wrt around it)");
    case Prim::kDebugCallback:
      break;  // debugging.py, debug_callback_jvp_rule: the primal alone, no outputs to give a tangent
    case Prim::kPureCallback:  // callback.py, pure_callback_jvp_rule
      fail_at(em.where(), "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while "
                          "taking gradients. (jax/_src/callback.py: differentiate with --wrt around it)");
    case Prim::kIoCallback:  // callback.py, io_callback_jvp_rule
      fail_at(em.where(), "IO callbacks do not support JVP. (jax/_src/callback.py: differentiate with --wrt around it)");
  }
  internal_error("no JVP rule for " + std::string(prim_name(prim)));
}

}  // namespace

// lax._balanced_eq(x, z, y): 1 where x == z and y != z, 1/2 where both equal z, else 0.
ValueId balanced_eq(Emitter& em, ValueId x, ValueId z, ValueId y) {
  ValueId x_is_z = em.known(Prim::kEq, {x, z});
  ValueId ones = em.full(1.0, z, EqnRole::kCoefficient);
  ValueId zeros = em.full(0.0, z, EqnRole::kCoefficient);
  ValueId numerator = em.known(Prim::kSelectN, {x_is_z, zeros, ones});
  ValueId y_is_z = em.known(Prim::kEq, {y, z});
  ValueId twos = em.full(2.0, z, EqnRole::kCoefficient);
  ValueId ones2 = em.full(1.0, z, EqnRole::kCoefficient);
  ValueId denominator = em.known(Prim::kSelectN, {y_is_z, ones2, twos});
  return em.known(Prim::kDiv, {numerator, denominator});
}


// nn/functions.py, _softmax_jvp: y * (g - sum(y * g, axes, where=where, keepdims=True)); the masked
// sum is jnp.where(where, y * g, 0) summed.
ValueId softmax_tangent(Emitter& em, ValueId y, ValueId g, const std::vector<int64_t>& axes, ValueId where) {
  const Shape shape = em.shape(y);
  ValueId product = em.linear(Prim::kMul, {y, g});
  if (where != kNoValue) {
    ValueId mask = where;
    if (em.shape(mask) != shape) {
      std::vector<int64_t> dims;
      for (int i = 0; i < em.type(mask).rank(); ++i) dims.push_back(shape.size() - em.type(mask).rank() + i);
      mask = em.known(Prim::kBroadcastInDim, {mask}, broadcast_in_dim_params(shape, dims));
    }
    product = em.linear(Prim::kSelectN, {mask, em.full(0.0, y, EqnRole::kCoefficient), product});
  }
  ValueId summed = em.linear(Prim::kReduceSum, {product}, reduce_params(axes));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept.push_back(i);
  ValueId spread = em.linear(Prim::kBroadcastInDim, {summed}, broadcast_in_dim_params(shape, kept));
  return em.linear(Prim::kMul, {y, em.linear(Prim::kSub, {g, spread})});
}

std::vector<ValueId> jvp_rule(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                              const std::vector<ValueId>& y, const std::vector<ValueId>& t) {
  return {output_tangent(em, prim, params, x, y, t)};
}

}  // namespace rematkit::autodiff
