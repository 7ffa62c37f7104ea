// Transpose rules as jax/_src/lax/lax.py writes them (_add_transpose, _mul_transpose,
// _dot_general_transpose_lhs/rhs, _reduce_sum_transpose_rule, _broadcast_in_dim_transpose_rule,
// _reshape_transpose_rule, _transpose_transpose_rule, _convert_element_type_transpose_rule,
// _select_transpose_rule, _concatenate_transpose_rule, _pad_transpose), jax/_src/lax/slicing.py
// (slice, dynamic_slice, dynamic_update_slice, gather, scatter-add), loops.py (cumsum), and
// convolution.py and windowed_reductions.py (window_transpose_rules.cpp), and fft.py: one case per
// primitive.
#include "transpose_rules.hpp"

#include <algorithm>

#include "collective_transpose_rules.hpp"
#include "window_transpose_rules.hpp"

namespace rematkit::autodiff {
namespace {

// The cotangent of one dot_general operand X given the output cotangent and the other operand Y:
// contract ct's Y-free dims with Y's free dims (batching over the batch dims), then put the
// result's dims back in X's order. JAX writes dot_general(ct, Y) followed by a transpose; when
// dot_general(Y, ct) already lays the result out in X's order (a 2-D weight's gradient, x^T ct),
// that order is used instead and no transpose runs: the same sums, no copy.
// With preferred_element_type (bf16 operands, f32 product), the products keep it and the result is
// converted back to X's dtype (lax.py, _dot_general_transpose_lhs).
// `x_type` is a copy: the graph's values move as the rule adds equations.
ValueId dot_general_transpose(Emitter& em, ValueId ct, ValueId other, const DotDims& d, bool x_is_lhs,
                              const Type x_type, std::optional<DType> preferred) {
  const Shape& x_shape = x_type.shape;
  auto in_x_dtype = [&](ValueId v) {
    return em.type(v).dtype == x_type.dtype
               ? v
               : em.linear(Prim::kConvertElementType, {v}, convert_element_type_params(x_type.dtype));
  };
  const auto& xc = x_is_lhs ? d.lhs_contract : d.rhs_contract;
  const auto& yc = x_is_lhs ? d.rhs_contract : d.lhs_contract;
  const auto& xb = x_is_lhs ? d.lhs_batch : d.rhs_batch;
  const auto& yb = x_is_lhs ? d.rhs_batch : d.lhs_batch;
  const int x_rank = static_cast<int>(x_shape.size());
  const auto fx = dot_free_dims(x_rank, xc, xb);
  const auto fy = dot_free_dims(em.type(other).rank(), yc, yb);
  const int64_t nb = static_cast<int64_t>(xb.size()), nfx = static_cast<int64_t>(fx.size());
  // Positions in ct: batch, then the lhs operand's free dims, then the rhs operand's.
  const int64_t y_free_at = x_is_lhs ? nb + nfx : nb;
  std::vector<int64_t> ct_batch, ct_y_free;
  for (int64_t i = 0; i < nb; ++i) ct_batch.push_back(i);
  for (size_t j = 0; j < fy.size(); ++j) ct_y_free.push_back(y_free_at + static_cast<int64_t>(j));

  // The product's dims: batch, then X's free dims and Y's contracted dims (in ascending order of
  // Y's dims, as dot_general keeps an operand's free dims), in the operands' order.
  std::vector<int64_t> sorted_yc = yc;
  std::sort(sorted_yc.begin(), sorted_yc.end());
  auto permutation = [&](bool x_free_first) {
    std::vector<int64_t> perm(static_cast<size_t>(x_rank));
    const int64_t x_free_at = x_free_first ? nb : nb + static_cast<int64_t>(xc.size());
    const int64_t x_contract_at = x_free_first ? nb + nfx : nb;
    for (int64_t i = 0; i < nb; ++i) perm[xb[i]] = i;
    for (int64_t j = 0; j < nfx; ++j) perm[fx[j]] = x_free_at + j;
    for (size_t k = 0; k < xc.size(); ++k)
      perm[xc[k]] = x_contract_at + (std::find(sorted_yc.begin(), sorted_yc.end(), yc[k]) - sorted_yc.begin());
    return perm;
  };
  auto is_identity = [](const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  };

  const std::vector<int64_t> perm = permutation(true);
  if (!is_identity(perm) && is_identity(permutation(false))) {
    DotDims swapped;
    swapped.lhs_batch = yb;
    swapped.rhs_batch = ct_batch;
    swapped.lhs_contract = fy;
    swapped.rhs_contract = ct_y_free;
    return in_x_dtype(em.linear(Prim::kDotGeneral, {other, ct}, dot_general_params(swapped, preferred)));
  }
  DotDims dd;
  dd.lhs_batch = ct_batch;
  dd.rhs_batch = yb;
  dd.lhs_contract = ct_y_free;
  dd.rhs_contract = fy;
  ValueId product = em.linear(Prim::kDotGeneral, {ct, other}, dot_general_params(dd, preferred));
  return in_x_dtype(is_identity(perm) ? product : em.linear(Prim::kTranspose, {product}, transpose_params(perm)));
}

// The cotangent of broadcast_in_dim's operand: sum over the new dims and the expanded size-1 dims.
ValueId broadcast_transpose(Emitter& em, ValueId ct, const Params& params, const Shape& x_shape) {
  const auto dims = param_ints(params, "broadcast_dimensions", {});
  const Shape out = em.shape(ct);
  std::vector<int64_t> axes;
  for (int64_t j = 0; j < static_cast<int64_t>(out.size()); ++j) {
    auto it = std::find(dims.begin(), dims.end(), j);
    if (it == dims.end() || (x_shape[it - dims.begin()] == 1 && out[j] != 1)) axes.push_back(j);
  }
  ValueId summed = axes.empty() ? ct : em.linear(Prim::kReduceSum, {ct}, reduce_params(axes));
  return em.shape(summed) == x_shape ? summed : em.linear(Prim::kReshape, {summed}, reshape_params(x_shape));
}

// lax._pad_transpose for the operand: undo the edge padding (pad by -lo, -hi), then take every
// (interior + 1)-th element.
ValueId unpad(Emitter& em, ValueId ct, const std::vector<PaddingDim>& config) {
  std::vector<PaddingDim> undo;
  Shape starts, strides;
  for (const PaddingDim& p : config) {
    undo.push_back(PaddingDim{-p.low, -p.high, 0});
    starts.push_back(0);
    strides.push_back(p.interior + 1);
  }
  const ValueId zero = em.literal(0.0, em.type(ct).dtype);
  const ValueId unpadded = em.linear(Prim::kPad, {ct, zero}, pad_params(undo));
  return em.linear(Prim::kSlice, {unpadded}, slice_params(starts, em.shape(unpadded), strides));
}

// slicing._slice_transpose_fancy: ct padded back to the operand's shape with zeros, the stride's
// gaps as interior padding.
ValueId unslice(Emitter& em, ValueId ct, const Params& params, const Shape& x_shape, const SourceLocation& where) {
  const Shape starts = param_ints(params, "start_indices", where);
  const Shape limits = param_ints(params, "limit_indices", where);
  Shape strides = param_ints_or_none(params, "strides", where);
  if (strides.empty()) strides.assign(starts.size(), 1);
  const Shape ct_shape = em.shape(ct);
  std::vector<PaddingDim> config;
  for (size_t d = 0; d < starts.size(); ++d) {
    const int64_t real_limit = ct_shape[d] == 0 ? starts[d] : starts[d] + 1 + (ct_shape[d] - 1) * strides[d];
    const int64_t limit = strides[d] == 1 ? limits[d] : real_limit;
    config.push_back(PaddingDim{starts[d], x_shape[d] - limit, strides[d] - 1});
  }
  return em.linear(Prim::kPad, {ct, em.literal(0.0, em.type(ct).dtype)}, pad_params(config));
}

// fft.py's _fft_transpose_rule. FFT and IFFT transpose to themselves (the DFT matrix is symmetric).
// RFFT, as _rfft_transpose through JAX 0.9.0 linear-transposes fft(complex(x))[..., :n // 2 + 1]:
// ct padded with zeros to n, an FFT, its real part. IRFFT, as _irfft_transpose: an RFFT of ct,
// each bin weighted by 2 (1 at the zero bin and, for an even n, the last) over prod(fft_lengths),
// then conjugated.
ValueId fft_transpose(Emitter& em, ValueId ct, const Params& params, const SourceLocation& where) {
  const FftKind kind = fft_kind(params, where);
  const Shape lengths = param_ints(params, "fft_lengths", where);
  if (kind == FftKind::kFft || kind == FftKind::kIfft) return em.linear(Prim::kFft, {ct}, params);
  const int64_t n = lengths.back();
  if (kind == FftKind::kRfft) {
    const Shape ct_shape = em.shape(ct);
    std::vector<PaddingDim> config(ct_shape.size());
    config.back().high = n - ct_shape.back();
    const ValueId padded = em.linear(Prim::kPad, {ct, em.literal(0.0, em.type(ct).dtype)}, pad_params(config));
    return em.linear(Prim::kReal, {em.linear(Prim::kFft, {padded}, fft_params(FftKind::kFft, lengths))});
  }
  const ValueId x = em.linear(Prim::kFft, {ct}, fft_params(FftKind::kRfft, lengths));
  const Type xt = em.type(x);
  const int64_t bins = xt.shape.back(), twos = bins - 1 - (n % 2 == 0 ? 1 : 0);
  const ValueId inner = em.linear(Prim::kBroadcastInDim, {em.literal(2.0, xt.dtype)}, broadcast_in_dim_params({twos}, {}));
  const ValueId mask = em.linear(Prim::kPad, {inner, em.literal(1.0, xt.dtype)},
                                 pad_params({PaddingDim{1, bins - 1 - twos, 0}}));
  const ValueId spread = em.linear(Prim::kBroadcastInDim, {mask}, broadcast_in_dim_params(xt.shape, {xt.rank() - 1}));
  double total = 1;
  for (int64_t d : lengths) total *= static_cast<double>(d);
  const ValueId weighted = em.linear(Prim::kMul, {em.literal(1.0 / total, xt.dtype), em.linear(Prim::kMul, {spread, x})});
  return em.linear(Prim::kConj, {weighted});
}

// The sum of all of `v`'s elements, a scalar.
ValueId total(Emitter& em, ValueId v) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < em.type(v).rank(); ++d) axes.push_back(d);
  return em.linear(Prim::kReduceSum, {v}, reduce_params(axes));
}

}  // namespace

void transpose_rule(Emitter& em, const FlatGraph& g, const FlatEquation& eqn, ValueId ct, const GiveCotangent& give) {
  const auto& in = eqn.inputs;
  auto linear_input = [&](size_t i) { return g.values[in[i]].is_tangent; };
  auto shape_of = [&](size_t i) { return g.values[in[i]].type.shape; };
  switch (eqn.prim) {
    case Prim::kAdd: case Prim::kAddAny:  // ct to each linear operand, summed over what it was broadcast along
      for (size_t i = 0; i < 2; ++i)
        if (linear_input(i)) give(i, em.unbroadcast(ct, shape_of(i)));
      return;
    case Prim::kSub:
      if (linear_input(0)) give(0, em.unbroadcast(ct, shape_of(0)));
      if (linear_input(1)) give(1, em.unbroadcast(em.linear(Prim::kNeg, {ct}), shape_of(1)));
      return;
    case Prim::kNeg: give(0, em.linear(Prim::kNeg, {ct})); return;
    case Prim::kMul: {  // linear in one operand: ct times the other
      const size_t lin = linear_input(0) ? 0 : 1;
      if (linear_input(1 - lin)) internal_error("a tangent mul has two linear operands");
      give(lin, em.unbroadcast(em.linear(Prim::kMul, {ct, in[1 - lin]}), shape_of(lin)));
      return;
    }
    case Prim::kDiv:  // linear in the dividend only
      if (linear_input(1)) internal_error("a tangent div has a linear divisor");
      give(0, em.unbroadcast(em.linear(Prim::kDiv, {ct, in[1]}), shape_of(0)));
      return;
    case Prim::kDotGeneral: {
      const DotDims d = dot_dims(eqn.params, eqn.where);
      const std::optional<DType> preferred = optional_dtype_param(eqn.params, "preferred_element_type", eqn.where);
      for (size_t i = 0; i < 2; ++i)
        if (linear_input(i))
          give(i, dot_general_transpose(em, ct, in[1 - i], d, i == 0, g.values[in[i]].type, preferred));
      return;
    }
    case Prim::kReduceSum: {  // ct broadcast back over the reduced axes
      const auto axes = param_ints(eqn.params, "axes", {});
      std::vector<int64_t> kept;
      for (int64_t d = 0; d < static_cast<int64_t>(shape_of(0).size()); ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
      give(0, em.linear(Prim::kBroadcastInDim, {ct}, broadcast_in_dim_params(shape_of(0), kept)));
      return;
    }
    case Prim::kBroadcastInDim: give(0, broadcast_transpose(em, ct, eqn.params, shape_of(0))); return;
    case Prim::kReshape: case Prim::kSqueeze:
      give(0, em.linear(Prim::kReshape, {ct}, reshape_params(shape_of(0))));
      return;
    case Prim::kTranspose: {  // the inverse permutation
      const auto perm = param_ints(eqn.params, "permutation", {});
      std::vector<int64_t> inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
      give(0, em.linear(Prim::kTranspose, {ct}, transpose_params(inverse)));
      return;
    }
    case Prim::kConvertElementType:  // back to the operand's dtype
      give(0, em.linear(Prim::kConvertElementType, {ct}, convert_element_type_params(g.values[in[0]].type.dtype)));
      return;
    case Prim::kSelectN:  // ct to the selected case, zeros to the others
      for (size_t i = 1; i < in.size(); ++i) {
        if (!linear_input(i)) continue;
        std::vector<ValueId> cases{in[0]};
        for (size_t j = 1; j < in.size(); ++j) cases.push_back(j == i ? ct : em.full(0.0, ct, EqnRole::kBackward));
        give(i, em.linear(Prim::kSelectN, cases));
      }
      return;
    // lax.py: real's ct is complex(ct, 0), imag's complex(0, -ct); complex(x, y) gives x real(ct)
    // and y imag(-ct); conj gives conj(ct), or real(ct) to a real operand (_conj_transpose_rule).
    case Prim::kReal: give(0, em.linear(Prim::kComplex, {ct, em.literal(0.0, em.type(ct).dtype)})); return;
    case Prim::kImag:
      give(0, em.linear(Prim::kComplex, {em.literal(0.0, em.type(ct).dtype), em.linear(Prim::kNeg, {ct})}));
      return;
    case Prim::kComplex:
      if (linear_input(0)) give(0, em.unbroadcast(em.linear(Prim::kReal, {ct}), shape_of(0)));
      if (linear_input(1)) give(1, em.unbroadcast(em.linear(Prim::kImag, {em.linear(Prim::kNeg, {ct})}), shape_of(1)));
      return;
    case Prim::kConj:
      give(0, em.linear(is_complex(g.values[in[0]].type.dtype) ? Prim::kConj : Prim::kReal, {ct}));
      return;
    case Prim::kFft: give(0, fft_transpose(em, ct, eqn.params, eqn.where)); return;
    case Prim::kShardingConstraint:  // pjit.py: deflinear2, the same constraint on the cotangent
      give(0, em.linear(eqn.prim, {ct}, eqn.params));
      return;
    case Prim::kReshard: give(0, ct); return;  // the value is unchanged: so is its cotangent
    case Prim::kPsum: case Prim::kAllGather: case Prim::kReduceScatter: case Prim::kPpermute: case Prim::kAllToAll:
    case Prim::kPbroadcast: case Prim::kPvary: case Prim::kShardMapIn: case Prim::kShardMapOut:
      give(0, collective_transpose(em, eqn.prim, eqn.params, ct, g.values[in[0]].type));
      return;
    case Prim::kCumsum: {  // loops._cumsum_transpose_rule: the running sum from the other end
      const bool reverse = eqn.params.find("reverse") && param_bool(eqn.params, "reverse", eqn.where);
      give(0, em.linear(Prim::kCumsum, {ct}, cumsum_params(param_int(eqn.params, "axis", eqn.where), !reverse)));
      return;
    }
    case Prim::kRev: case Prim::kCopy: case Prim::kReducePrecision: case Prim::kOptimizationBarrier:  // alike on ct
      give(0, em.linear(eqn.prim, {ct}, eqn.params));
      return;
    case Prim::kConcatenate: {  // each linear operand's stretch of ct (JAX splits ct; slices cut the same pieces)
      const int64_t dimension = param_int(eqn.params, "dimension", eqn.where);
      const Shape ct_shape = em.shape(ct);
      int64_t offset = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const Shape x_shape = shape_of(i);
        if (linear_input(i)) {
          Shape starts(ct_shape.size(), 0), limits = ct_shape;
          starts[dimension] = offset;
          limits[dimension] = offset + x_shape[dimension];
          give(i, em.linear(Prim::kSlice, {ct}, slice_params(starts, limits)));
        }
        offset += x_shape[dimension];
      }
      return;
    }
    case Prim::kSlice: give(0, unslice(em, ct, eqn.params, shape_of(0), eqn.where)); return;
    case Prim::kSplit: {  // lax._split_transpose_rule concatenates the pieces' cotangents: each one
      // here, padded with zeros where the other pieces are, and the pieces' cotangents add up
      const auto sizes = param_ints(eqn.params, "sizes", eqn.where);
      const int64_t axis = param_int(eqn.params, "axis", eqn.where);
      const int64_t output = eqn.params.find("output") ? param_int(eqn.params, "output", eqn.where) : 0;
      std::vector<PaddingDim> config(shape_of(0).size(), PaddingDim{0, 0, 0});
      for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i)
        (i < output ? config[axis].low : config[axis].high) += i == output ? 0 : sizes[i];
      give(0, em.linear(Prim::kPad, {ct, em.literal(0.0, em.type(ct).dtype)}, pad_params(config)));
      return;
    }
    case Prim::kPad: {  // lax._pad_transpose: the operand's elements of ct; the padding value gets the rest
      const ValueId operand_ct = unpad(em, ct, padding_config(eqn.params, eqn.where));
      if (linear_input(0)) give(0, operand_ct);
      if (linear_input(1)) give(1, em.linear(Prim::kSub, {total(em, ct), total(em, operand_ct)}));
      return;
    }
    case Prim::kDynamicSlice: {  // slicing._dynamic_slice_transpose_fancy: ct written into zeros
      std::vector<ValueId> operands{em.full(0.0, in[0], EqnRole::kBackward), ct};
      operands.insert(operands.end(), in.begin() + 1, in.end());
      give(0, em.linear(Prim::kDynamicUpdateSlice, operands));
      return;
    }
    case Prim::kDynamicUpdateSlice: {  // slicing._dynamic_update_slice_transpose_rule
      const std::vector<ValueId> starts(in.begin() + 2, in.end());
      if (linear_input(0)) {
        std::vector<ValueId> operands{ct, em.full(0.0, in[1], EqnRole::kBackward)};
        operands.insert(operands.end(), starts.begin(), starts.end());
        give(0, em.linear(Prim::kDynamicUpdateSlice, operands));
      }
      if (linear_input(1)) {
        std::vector<ValueId> operands{ct};
        operands.insert(operands.end(), starts.begin(), starts.end());
        give(1, em.linear(Prim::kDynamicSlice, operands, dynamic_slice_params(shape_of(1))));
      }
      return;
    }
    case Prim::kGather: {  // slicing._gather_transpose_fancy: ct scatter-added into zeros
      const IndexingDims dims = indexing_dims(Prim::kGather, eqn.params, eqn.where);
      const ValueId zeros = em.full(0.0, in[0], EqnRole::kBackward);
      const bool wrap = eqn.params.find("wrap_negative_indices") && param_bool(eqn.params, "wrap_negative_indices", eqn.where);
      give(0, em.linear(Prim::kScatterAdd, {zeros, in[1], ct},
                        scatter_add_params(dims, index_mode(eqn.params, eqn.where), wrap)));
      return;
    }
    case Prim::kScatterAdd: {  // slicing._scatter_addsub_transpose_rule
      if (linear_input(0)) give(0, ct);
      if (linear_input(2)) {  // the updates' windows gathered back from ct
        const IndexingDims dims = indexing_dims(Prim::kScatterAdd, eqn.params, eqn.where);
        const Shape updates = shape_of(2);
        Shape sizes;
        size_t window = 0;
        for (int64_t i = 0; i < static_cast<int64_t>(em.shape(ct).size()); ++i) {
          const bool collapsed = std::find(dims.collapsed_dims.begin(), dims.collapsed_dims.end(), i) != dims.collapsed_dims.end();
          sizes.push_back(collapsed ? 1 : updates[dims.window_dims[window++]]);
        }
        const bool wrap =
            eqn.params.find("wrap_negative_indices") && param_bool(eqn.params, "wrap_negative_indices", eqn.where);
        give(2, em.linear(Prim::kGather, {ct, in[1]},
                          gather_params(dims, sizes, index_mode(eqn.params, eqn.where), 0.0, wrap)));
      }
      return;
    }
    case Prim::kConvGeneralDilated:  // convolution._conv_general_dilated_transpose_lhs, _rhs
      if (linear_input(0)) give(0, conv_transpose_lhs(em, ct, in[1], eqn.params, g.values[in[0]].type, eqn.where));
      if (linear_input(1))
        if (const ValueId rhs_ct = conv_transpose_rhs(em, ct, in[0], eqn.params, g.values[in[1]].type, eqn.where);
            rhs_ct != kNoValue)
          give(1, rhs_ct);
      return;
    case Prim::kReduceWindowSum: give(0, reduce_window_sum_transpose(em, ct, eqn.params, shape_of(0), eqn.where)); return;
    case Prim::kSelectAndGatherAdd:
      give(0, select_and_gather_add_transpose(em, ct, in[1], eqn.params, eqn.where));
      return;
    case Prim::kSelectAndScatterAdd:
      give(0, select_and_scatter_add_transpose(em, ct, in[1], eqn.params, eqn.where));
      return;
    // JVP rules emit none of these as linear equations: their tangents are made of the ones above.
    case Prim::kMax: case Prim::kMin: case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq:
    case Prim::kNe: case Prim::kExp: case Prim::kLog: case Prim::kSin: case Prim::kCos: case Prim::kTanh:
    case Prim::kLogistic: case Prim::kSqrt: case Prim::kRsqrt: case Prim::kSquare: case Prim::kIntegerPow:
    case Prim::kStopGradient: case Prim::kName: case Prim::kRelu: case Prim::kReduceMax: case Prim::kSoftmax:
    case Prim::kPow: case Prim::kAtan2: case Prim::kRem: case Prim::kAnd: case Prim::kOr: case Prim::kXor:
    case Prim::kShiftLeft: case Prim::kShiftRightLogical: case Prim::kShiftRightArithmetic: case Prim::kAbs:
    case Prim::kSign: case Prim::kFloor: case Prim::kCeil: case Prim::kRound: case Prim::kIsFinite: case Prim::kExp2:
    case Prim::kExpm1: case Prim::kLog1p: case Prim::kTan: case Prim::kErf: case Prim::kErfc: case Prim::kErfInv: case Prim::kNot:
    case Prim::kClamp: case Prim::kReduceMin: case Prim::kReduceProd: case Prim::kSort: case Prim::kCumprod:
    case Prim::kCummax: case Prim::kCummin: case Prim::kCumlogsumexp: case Prim::kArgMax: case Prim::kArgMin: case Prim::kIota:
    case Prim::kBitcastConvertType: case Prim::kReduceWindowMax: case Prim::kReduceWindowMin:
    case Prim::kRandomSeed: case Prim::kRandomWrap: case Prim::kRandomUnwrap: case Prim::kRandomSplit:
    case Prim::kRandomFoldIn: case Prim::kRandomBits: case Prim::kRandomClone: case Prim::kThreefry2x32:
    case Prim::kPjit: case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall:
    case Prim::kScan: case Prim::kCond: case Prim::kWhile:  // the transposer runs a loop's own backward
    case Prim::kDebugCallback:  // never linear: its JVP emits no tangent equation
    case Prim::kPureCallback: case Prim::kIoCallback:  // their JVP refuses
    case Prim::kPmax: case Prim::kPmin: case Prim::kAxisIndex:  // no JVP, or an integer
    case Prim::kShardMap: case Prim::kXlaPmap:  // traced through their body
      break;
  }
  internal_error("no transpose rule for a linear " + std::string(prim_name(eqn.prim)));
}

}  // namespace rematkit::autodiff
