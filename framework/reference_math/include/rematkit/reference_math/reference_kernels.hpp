// The reference math: every primitive computed in double in plain loops, each sum accumulating in
// row-major order, so the result does not depend on blocking or threads. It is compiled into both
// the core's interpreter and the reference backend plugin, so the two agree bit for bit by
// construction. It depends only on the primitive table and the C ABI's dtypes (no core header),
// which is what lets a plugin compile it.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/plugin/primitive_table.hpp"
#include "rematkit/plugin/rk_plugin.h"

namespace rematkit::reference {

// An operand: row-major elements as doubles (exact values of its dtype), its shape and dtype. A
// complex operand's real parts are `data` and its imaginary parts `imag`; `imag` is empty otherwise.
struct Input {
  std::span<const double> data;
  std::span<const int64_t> shape;
  int32_t dtype = RK_DTYPE_F32;  // an rk_dtype
  std::span<const double> imag;
};

struct Output {
  std::span<double> data;
  std::span<const int64_t> shape;
  int32_t dtype = RK_DTYPE_F32;
  std::span<double> imag;  // a complex result's imaginary parts
};

// An equation's params, decoded once (when the backend prepares it).
struct KernelParams {
  // reduce_*, argmax, argmin: axes; broadcast_in_dim: broadcast_dimensions; transpose: permutation;
  // rev: dimensions
  std::vector<int64_t> axes;
  DotDims dims;  // dot_general
  // random_split, random_bits: shape; random_bits: bit_width; split: sizes and axis; sort: dimension
  // integer_pow: y; softmax, cumsum: axis; round: 1 for to-nearest-even, 0 away from zero;
  // concatenate, iota: dimension; reduce_precision: exponent_bits; fft: its FftKind (fft_lengths in axes)
  int64_t integer = 0;
  int64_t mantissa_bits = 0;                     // reduce_precision
  bool reverse = false;                          // cumsum
  std::vector<int64_t> starts, limits, strides;  // slice (strides all 1 when None); gather: starts = slice_sizes
  std::vector<PaddingDim> padding;               // pad
  IndexingDims indexing;                         // gather, scatter-add
  IndexMode mode = IndexMode::kFillOrDrop;       // gather, scatter-add
  std::optional<double> fill;                    // gather's fill_value; nullopt: None (the dtype's default)
  bool wrap_negative_indices = false;            // gather, scatter-add
  int64_t output = 0;                            // threefry2x32, split, sort: which of the outputs
  int64_t num_keys = 1;                          // sort: how many leading operands are keys
  ConvParams conv;                               // conv_general_dilated
  WindowParams window;                           // reduce_window_*, select_and_gather_add, select_and_scatter_add
  bool selects_max = true;                       // select_and_*: select_prim ge (true) or le
};

// Reads what `prim`'s kernel needs through `reader`, which has integer(name), integer_or(name, default), ints(name),
// ints_or_none(name), boolean(name), dot_dims(), padding_config(), indexing_dims(prim), index_mode(),
// fill_value() (nullopt for None), rounds_to_nearest_even(), conv_params(), window_params(),
// selects_max() and fft_kind() (the core reads Params, the backend the C ABI's values).
template <typename Reader>
KernelParams decode_params(Prim prim, const Reader& reader) {
  KernelParams p;
  switch (prim) {
    case Prim::kIntegerPow: p.integer = reader.integer("y"); break;
    case Prim::kSoftmax: p.integer = reader.integer("axis"); break;
    case Prim::kReduceSum: case Prim::kReduceMax: case Prim::kReduceProd: p.axes = reader.ints("axes"); break;
    case Prim::kBroadcastInDim: p.axes = reader.ints("broadcast_dimensions"); break;
    case Prim::kTranspose: p.axes = reader.ints("permutation"); break;
    case Prim::kDotGeneral: p.dims = reader.dot_dims(); break;
    case Prim::kRound: p.integer = reader.rounds_to_nearest_even() ? 1 : 0; break;
    case Prim::kReduceMin: case Prim::kArgMax: case Prim::kArgMin: p.axes = reader.ints("axes"); break;
    case Prim::kRev: p.axes = reader.ints("dimensions"); break;
    case Prim::kCumsum: case Prim::kCumprod: case Prim::kCummax: case Prim::kCummin: case Prim::kCumlogsumexp:
      p.integer = reader.integer("axis");
      p.reverse = reader.boolean("reverse");
      break;
    case Prim::kConcatenate: case Prim::kIota: p.integer = reader.integer("dimension"); break;
    case Prim::kReducePrecision:
      p.integer = reader.integer("exponent_bits");
      p.mantissa_bits = reader.integer("mantissa_bits");
      break;
    case Prim::kSlice:
      p.starts = reader.ints("start_indices");
      p.limits = reader.ints("limit_indices");
      p.strides = reader.ints_or_none("strides");
      if (p.strides.empty()) p.strides.assign(p.starts.size(), 1);
      break;
    case Prim::kPad: p.padding = reader.padding_config(); break;
    case Prim::kRandomSplit: p.axes = reader.ints("shape"); break;
    case Prim::kRandomBits:
      p.axes = reader.ints("shape");
      p.integer = reader.integer("bit_width");
      break;
    case Prim::kThreefry2x32: p.output = reader.integer_or("output", 0); break;
    case Prim::kSort:
      p.integer = reader.integer("dimension");
      p.num_keys = reader.integer("num_keys");
      p.output = reader.integer_or("output", 0);
      break;
    case Prim::kSplit:
      p.axes = reader.ints("sizes");
      p.integer = reader.integer("axis");
      p.output = reader.integer_or("output", 0);
      break;
    case Prim::kGather:
      p.indexing = reader.indexing_dims(prim);
      p.starts = reader.ints("slice_sizes");
      p.mode = reader.index_mode();
      p.fill = reader.fill_value();
      p.wrap_negative_indices = reader.boolean("wrap_negative_indices");
      break;
    case Prim::kScatterAdd:
      p.indexing = reader.indexing_dims(prim);
      p.mode = reader.index_mode();
      p.wrap_negative_indices = reader.boolean("wrap_negative_indices");
      break;
    case Prim::kConvGeneralDilated: p.conv = reader.conv_params(); break;
    case Prim::kReduceWindowSum: case Prim::kReduceWindowMax: case Prim::kReduceWindowMin:
      p.window = reader.window_params();
      break;
    case Prim::kSelectAndGatherAdd: case Prim::kSelectAndScatterAdd:
      p.window = reader.window_params();
      p.selects_max = reader.selects_max();
      break;
    case Prim::kFft:
      p.integer = static_cast<int64_t>(reader.fft_kind());
      p.axes = reader.ints("fft_lengths");
      break;
    case Prim::kReal: case Prim::kImag: case Prim::kComplex: case Prim::kConj:
    case Prim::kAdd: case Prim::kSub: case Prim::kMul: case Prim::kDiv: case Prim::kMax: case Prim::kMin:
    case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq: case Prim::kNe:
    case Prim::kNeg: case Prim::kExp: case Prim::kLog: case Prim::kSin: case Prim::kCos: case Prim::kTanh:
    case Prim::kLogistic: case Prim::kSqrt: case Prim::kRsqrt: case Prim::kSquare: case Prim::kStopGradient:
    case Prim::kName: case Prim::kRelu: case Prim::kConvertElementType: case Prim::kSelectN: case Prim::kReshape:
    case Prim::kSqueeze: case Prim::kPjit: case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall:
    case Prim::kScan: case Prim::kCond: case Prim::kWhile:
    case Prim::kAddAny: case Prim::kPow:
    case Prim::kAtan2: case Prim::kRem: case Prim::kAnd: case Prim::kOr: case Prim::kXor: case Prim::kShiftLeft:
    case Prim::kShiftRightLogical: case Prim::kShiftRightArithmetic: case Prim::kAbs: case Prim::kSign:
    case Prim::kFloor: case Prim::kCeil: case Prim::kIsFinite: case Prim::kExp2: case Prim::kExpm1: case Prim::kLog1p:
    case Prim::kTan: case Prim::kErf: case Prim::kErfc: case Prim::kErfInv: case Prim::kNot: case Prim::kClamp:
    case Prim::kDynamicSlice: case Prim::kDynamicUpdateSlice: case Prim::kCopy: case Prim::kOptimizationBarrier:
    case Prim::kBitcastConvertType: case Prim::kRandomSeed: case Prim::kRandomWrap: case Prim::kRandomUnwrap:
    case Prim::kRandomFoldIn: case Prim::kRandomClone: case Prim::kDebugCallback: case Prim::kPureCallback:
    case Prim::kIoCallback: case Prim::kShardingConstraint: case Prim::kReshard: case Prim::kShardMap:
    case Prim::kXlaPmap: case Prim::kShardMapIn: case Prim::kShardMapOut: case Prim::kPsum: case Prim::kPmax:
    case Prim::kPmin: case Prim::kAllGather: case Prim::kReduceScatter: case Prim::kPpermute: case Prim::kAllToAll:
    case Prim::kAxisIndex: case Prim::kPbroadcast: case Prim::kPvary:
      break;  // nothing to read (convert_element_type's dtype and dynamic_slice's sizes are the output's)
  }
  return p;
}

// Whether `prim` has a kernel here (calls are inlined before anything runs, so they have none;
// an effect computes nothing).
bool has_kernel(Prim prim);

// Computes `prim` into `out`, unrounded: the caller rounds each element to out's dtype as it
// stores it (element_values.hpp: f32, bf16, f16 rounded to nearest even, integers wrapped, bool as != 0). Throws
// std::invalid_argument for a primitive with no kernel.
void compute(Prim prim, const KernelParams& params, std::span<const Input> in, const Output& out);

}  // namespace rematkit::reference
