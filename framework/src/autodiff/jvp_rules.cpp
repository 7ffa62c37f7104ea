#include "jvp_rules.hpp"

namespace rematkit::autodiff {
namespace {

constexpr ValueId kZero = kNoValue;

ValueId add_tangents(Emitter& em, ValueId a, ValueId b) {
  if (a == kZero) return b;
  if (b == kZero) return a;
  return em.linear(Prim::kAdd, {a, b});
}

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

// g * coefficient, the shape of most unary rules.
ValueId scale(Emitter& em, ValueId g, ValueId coefficient) { return em.linear(Prim::kMul, {g, coefficient}); }

ValueId unary_jvp(Emitter& em, Prim prim, const Params& params, ValueId x, ValueId ans, ValueId g) {
  const DType dt = em.type(x).dtype;
  switch (prim) {
    case Prim::kNeg: return em.linear(Prim::kNeg, {g});
    case Prim::kExp: return scale(em, g, ans);                            // g * exp(x)
    case Prim::kLog: return em.linear(Prim::kDiv, {g, x});               // g / x
    case Prim::kSin: return scale(em, g, em.known(Prim::kCos, {x}));     // g * cos(x)
    case Prim::kCos: {                                                    // -(g * sin(x))
      ValueId s = em.known(Prim::kSin, {x});
      return em.linear(Prim::kNeg, {scale(em, g, s)});
    }
    case Prim::kTanh: {  // (g + g * ans) * (1 - ans)
      ValueId one_minus = em.known(Prim::kSub, {em.literal(1.0, dt), ans});
      ValueId g_ans = scale(em, g, ans);
      return scale(em, em.linear(Prim::kAdd, {g, g_ans}), one_minus);
    }
    case Prim::kLogistic: {  // g * (ans * (1 - ans))
      ValueId one_minus = em.known(Prim::kSub, {em.literal(1.0, dt), ans});
      return scale(em, g, em.known(Prim::kMul, {ans, one_minus}));
    }
    case Prim::kSqrt: return scale(em, g, em.known(Prim::kDiv, {em.literal(0.5, dt), ans}));  // g * (0.5 / ans)
    case Prim::kRsqrt: {  // g * (-0.5 * (ans / x))
      ValueId ratio = em.known(Prim::kDiv, {ans, x});
      return scale(em, g, em.known(Prim::kMul, {em.literal(-0.5, dt), ratio}));
    }
    case Prim::kSquare: return scale(em, g, em.known(Prim::kMul, {em.literal(2.0, dt), x}));  // g * (2 * x)
    case Prim::kIntegerPow: {  // g * (y * x ** (y - 1)); x ** 1 is x itself
      const int64_t y = param_int(params, "y", {});
      if (y == 0) return kZero;
      ValueId power = y - 1 == 1 ? x : em.known(Prim::kIntegerPow, {x}, pow_params(y - 1));
      return scale(em, g, em.known(Prim::kMul, {em.literal(static_cast<double>(y), dt), power}));
    }
    case Prim::kRelu: {  // jax.nn.relu's custom JVP: select(x > 0, g, full_like(g, 0))
      ValueId mask = em.known(Prim::kGt, {x, em.literal(0.0, dt)});
      ValueId zeros = em.full(0.0, x, EqnRole::kCoefficient);
      return em.linear(Prim::kSelectN, {mask, zeros, g});
    }
    case Prim::kName: return g;  // the tangent passes through, unnamed
    case Prim::kStopGradient: return kZero;
    case Prim::kConvertElementType: {
      const ParamValue* nd = params.find("new_dtype");
      auto to = nd ? parse_dtype(nd->text) : std::nullopt;
      if (!to || !is_floating(*to)) return kZero;
      return em.linear(Prim::kConvertElementType, {g}, params);
    }
    default: break;
  }
  internal_error("no JVP rule for " + std::string(prim_name(prim)));
}

ValueId binary_jvp(Emitter& em, Prim prim, ValueId a, ValueId b, ValueId ans, ValueId ta, ValueId tb) {
  const Shape out = em.shape(ans);
  switch (prim) {
    case Prim::kAdd:
      if (ta != kZero && tb != kZero) return em.linear(Prim::kAdd, {ta, tb});
      return em.broadcast_to(ta != kZero ? ta : tb, out);
    case Prim::kSub:
      if (ta != kZero && tb != kZero) return em.linear(Prim::kSub, {ta, tb});
      if (ta != kZero) return em.broadcast_to(ta, out);
      return em.broadcast_to(em.linear(Prim::kNeg, {tb}), out);
    case Prim::kMul: {  // ta * b + a * tb
      ValueId da = ta == kZero ? kZero : em.linear(Prim::kMul, {ta, b});
      ValueId db = tb == kZero ? kZero : em.linear(Prim::kMul, {a, tb});
      return add_tangents(em, da, db);
    }
    case Prim::kDiv: {  // ta / b  +  (-tb * a) * b ** -2
      ValueId da = ta == kZero ? kZero : em.linear(Prim::kDiv, {ta, b});
      ValueId db = kZero;
      if (tb != kZero) {
        ValueId inv_sq = em.known(Prim::kIntegerPow, {b}, pow_params(-2));
        ValueId neg = em.linear(Prim::kNeg, {tb});
        db = em.linear(Prim::kMul, {em.linear(Prim::kMul, {neg, a}), inv_sq});
      }
      return add_tangents(em, da, db);
    }
    case Prim::kMax: case Prim::kMin: {  // g * _balanced_eq(operand, ans, other) per operand
      ValueId da = ta == kZero ? kZero : scale(em, ta, balanced_eq(em, a, ans, b));
      ValueId db = tb == kZero ? kZero : scale(em, tb, balanced_eq(em, b, ans, a));
      return add_tangents(em, da, db);  // the coefficient has the output's shape
    }
    default: break;
  }
  internal_error("no JVP rule for " + std::string(prim_name(prim)));
}

// lax._reduce_chooser_jvp_rule: the tangent is averaged over the positions that attain the max.
ValueId reduce_max_jvp(Emitter& em, const Params& params, ValueId x, ValueId ans, ValueId g) {
  const auto axes = param_ints(params, "axes", {});
  Shape kept = em.shape(x);
  for (int64_t a : axes) kept[a] = 1;
  ValueId ans_kept = em.known(Prim::kReshape, {ans}, reshape_params(kept));
  ValueId at_max = em.known(Prim::kEq, {x, ans_kept});
  ValueId locations = em.known(Prim::kConvertElementType, {at_max}, convert_params(em.type(x).dtype));
  ValueId counts = em.known(Prim::kReduceSum, {locations}, axes_params(axes));
  ValueId picked = em.linear(Prim::kReduceSum, {em.linear(Prim::kMul, {g, locations})}, axes_params(axes));
  return em.linear(Prim::kDiv, {picked, counts});
}

// jax.nn.softmax's custom JVP: y * (g - sum(y * g, axis, keepdims=True)).
ValueId softmax_jvp(Emitter& em, const Params& params, ValueId y, ValueId g) {
  const Shape shape = em.shape(y);
  int64_t axis = param_int(params, "axis", {});
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  ValueId summed = em.linear(Prim::kReduceSum, {em.linear(Prim::kMul, {y, g})}, axes_params({axis}));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != axis) dims.push_back(i);
  ValueId spread = em.linear(Prim::kBroadcastInDim, {summed}, broadcast_params(shape, dims));
  return em.linear(Prim::kMul, {y, em.linear(Prim::kSub, {g, spread})});
}

// select_n(p, *cases): the tangent selects among the cases' tangents; zero tangents are
// instantiated as zeros (ad.instantiate_zeros), which are known values.
ValueId select_n_jvp(Emitter& em, const std::vector<ValueId>& x, const std::vector<ValueId>& t) {
  std::vector<ValueId> inputs{x[0]};
  for (size_t i = 1; i < x.size(); ++i)
    inputs.push_back(t[i] != kZero ? t[i] : em.full(0.0, x[i], EqnRole::kCoefficient));
  return em.linear(Prim::kSelectN, inputs);
}

}  // namespace

std::vector<ValueId> jvp_rule(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                              const std::vector<ValueId>& y, const std::vector<ValueId>& t) {
  if (is_comparison(prim)) return {kZero};
  if (is_binary_elementwise(prim)) return {binary_jvp(em, prim, x[0], x[1], y[0], t[0], t[1])};
  if (is_unary_elementwise(prim)) return {unary_jvp(em, prim, params, x[0], y[0], t[0])};
  switch (prim) {
    case Prim::kDotGeneral: {  // bilinear: dot(ta, b) + dot(a, tb)
      ValueId da = t[0] == kZero ? kZero : em.linear(prim, {t[0], x[1]}, params);
      ValueId db = t[1] == kZero ? kZero : em.linear(prim, {x[0], t[1]}, params);
      return {add_tangents(em, da, db)};
    }
    case Prim::kReduceSum: case Prim::kBroadcastInDim: case Prim::kReshape: case Prim::kTranspose:
    case Prim::kSqueeze:
      return {em.linear(prim, {t[0]}, params)};
    case Prim::kReduceMax: return {reduce_max_jvp(em, params, x[0], y[0], t[0])};
    case Prim::kSoftmax: return {softmax_jvp(em, params, y[0], t[0])};
    case Prim::kSelectN: return {select_n_jvp(em, x, t)};
    default: break;
  }
  internal_error("no JVP rule for " + std::string(prim_name(prim)));
}

}  // namespace rematkit::autodiff
