// JVP rules as jax/_src/lax/lax.py (and jax/_src/nn/functions.py for relu and softmax's custom
// JVPs) write them: one case per primitive, each emitting its primal-only coefficient equations,
// then the tangent equations.
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

// g * coefficient, the shape of most unary rules; a zero tangent stays zero.
ValueId scale(Emitter& em, ValueId g, ValueId coefficient) { return em.linear(Prim::kMul, {g, coefficient}); }

// lax._reduce_chooser_jvp_rule: the tangent is averaged over the positions that attain the max.
ValueId reduce_max_jvp(Emitter& em, const Params& params, ValueId x, ValueId ans, ValueId g) {
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

// jax.nn.softmax's custom JVP: y * (g - sum(y * g, axis, keepdims=True)).
ValueId softmax_jvp(Emitter& em, const Params& params, ValueId y, ValueId g) {
  const Shape shape = em.shape(y);
  int64_t axis = param_int(params, "axis", {});
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  ValueId summed = em.linear(Prim::kReduceSum, {em.linear(Prim::kMul, {y, g})}, reduce_params({axis}));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != axis) dims.push_back(i);
  ValueId spread = em.linear(Prim::kBroadcastInDim, {summed}, broadcast_in_dim_params(shape, dims));
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
    case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq: case Prim::kNe:
      return kZero;  // bool outputs have no tangent
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
    case Prim::kIntegerPow: {  // g * (y * x ** (y - 1)); x ** 1 is x itself
      const int64_t power = param_int(params, "y", {});
      if (power == 0) return kZero;
      ValueId p = power - 1 == 1 ? x[0] : em.known(Prim::kIntegerPow, {x[0]}, integer_pow_params(power - 1));
      return scale(em, g, em.known(Prim::kMul, {em.literal(static_cast<double>(power), dt), p}));
    }
    case Prim::kRelu: {  // jax.nn.relu's custom JVP: select(x > 0, g, full_like(g, 0))
      ValueId mask = em.known(Prim::kGt, {x[0], em.literal(0.0, dt)});
      ValueId zeros = em.full(0.0, x[0], EqnRole::kCoefficient);
      return em.linear(Prim::kSelectN, {mask, zeros, g});
    }
    case Prim::kName: return g;  // the tangent passes through, unnamed
    case Prim::kStopGradient: return kZero;
    case Prim::kConvertElementType: {  // converted like the primal; nothing flows into integers
      if (!is_floating(dtype_param(params, "new_dtype", {}))) return kZero;
      return em.linear(Prim::kConvertElementType, {g}, params);
    }
    case Prim::kSelectN: return select_n_jvp(em, x, t);
    case Prim::kDotGeneral:  // bilinear: dot(ta, b) + dot(a, tb)
      return sum_of_terms([&] { return t[0] == kZero ? kZero : em.linear(prim, {t[0], x[1]}, params); },
                          [&] { return t[1] == kZero ? kZero : em.linear(prim, {x[0], t[1]}, params); });
    case Prim::kReduceSum: case Prim::kBroadcastInDim: case Prim::kReshape: case Prim::kTranspose:
    case Prim::kSqueeze:
      return em.linear(prim, {g}, params);  // linear: the same operation on the tangent
    case Prim::kReduceMax: return reduce_max_jvp(em, params, x[0], y[0], g);
    case Prim::kSoftmax: return softmax_jvp(em, params, y[0], g);
    case Prim::kPjit: case Prim::kCheckpoint: break;  // inlined by jvp_trace before any rule runs
  }
  internal_error("no JVP rule for " + std::string(prim_name(prim)));
}

}  // namespace

std::vector<ValueId> jvp_rule(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                              const std::vector<ValueId>& y, const std::vector<ValueId>& t) {
  return {output_tangent(em, prim, params, x, y, t)};
}

}  // namespace rematkit::autodiff
