#include "rematkit/autodiff/equation_flops.hpp"

#include <algorithm>
#include <cmath>

#include "rematkit/autodiff/cond_linearization.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit {

namespace {

// A scan's part: its body's pass once per iteration. A cond's: its costliest branch (which one runs
// is known only when it runs). A while's trip count is not known: 0.
int64_t control_flow_flops(const FlatEquation& eqn) {
  if (eqn.scan) {
    const ScanLinearization& s = *eqn.scan;
    const FlatGraph& body = s.body.graph;
    switch (eqn.part) {
      case ControlFlowPart::kForward: return s.length * equations_flops(body, s.forward_eqns);
      case ControlFlowPart::kRecompute: return s.length * equations_flops(body, s.recompute_eqns);
      case ControlFlowPart::kTranspose: return s.length * equations_flops(body, s.body.backward);
      case ControlFlowPart::kTangent: case ControlFlowPart::kNone: return 0;
    }
  }
  int64_t most = 0;
  if (eqn.cond)
    for (const Linearization& branch : eqn.cond->branches)
      most = std::max(most, equations_flops(branch.graph, eqn.part == ControlFlowPart::kTranspose ? branch.backward : branch.forward));
  return most;
}

}  // namespace

int64_t equation_flops(const FlatGraph& graph, const FlatEquation& eqn) {
  if (eqn.scan || eqn.cond) return control_flow_flops(eqn);
  if (eqn.outputs.empty()) return 0;  // an effect (debug_callback) computes nothing
  // One device's work where the graph is placed on a mesh (its outputs' blocks; a contraction over
  // a split dim gathers it whole first, as GSPMD does).
  const int64_t out = device_type(graph.values[eqn.outputs.at(0)]).num_elements();
  switch (eqn.prim) {
    case Prim::kDotGeneral: {  // a multiply and an add per contracted element of each output
      const DotDims dims = dot_dims(eqn.params, eqn.where);
      const Shape& lhs = graph.values[eqn.inputs[0]].type.shape;
      int64_t contracted = 1;
      for (int64_t d : dims.lhs_contract) contracted *= lhs[static_cast<size_t>(d)];
      return 2 * out * contracted;
    }
    case Prim::kConvGeneralDilated: {  // a multiply and an add per kernel element of each output's group
      const ConvDims dims = conv_dims(eqn.params, eqn.where);
      const Type& rhs = graph.values[eqn.inputs[1]].type;
      const int64_t out_features = rhs.shape[static_cast<size_t>(dims.rhs_spec[0])];
      return out_features == 0 ? 0 : 2 * out * (rhs.num_elements() / out_features);
    }
    // An add or a comparison per window element of each output (of each source element).
    case Prim::kReduceWindowSum: case Prim::kReduceWindowMax: case Prim::kReduceWindowMin:
    case Prim::kSelectAndGatherAdd: case Prim::kSelectAndScatterAdd: {
      int64_t window = 1;
      for (int64_t d : param_ints(eqn.params, "window_dimensions", eqn.where)) window *= d;
      const int64_t per = eqn.prim == Prim::kSelectAndScatterAdd ? device_type(graph.values[eqn.inputs[0]]).num_elements() : out;
      return per * window;
    }
    // A comparison or an add per operand element.
    case Prim::kReduceSum: case Prim::kReduceMax: case Prim::kReduceMin: case Prim::kReduceProd: case Prim::kArgMax: case Prim::kArgMin:
    case Prim::kCumsum: case Prim::kCumprod: case Prim::kCummax: case Prim::kCummin: case Prim::kCumlogsumexp:
      return device_type(graph.values[eqn.inputs[0]]).num_elements();
    case Prim::kScatterAdd: return device_type(graph.values[eqn.inputs[2]]).num_elements();  // an add per update
    case Prim::kSoftmax: return 4 * out;  // max, subtract-and-exp, sum, divide
    // Arithmetic elementwise, transcendentals and comparisons: one per output element.
    case Prim::kAdd: case Prim::kSub: case Prim::kMul: case Prim::kDiv: case Prim::kMax: case Prim::kMin:
    case Prim::kGt: case Prim::kGe: case Prim::kLt: case Prim::kLe: case Prim::kEq: case Prim::kNe:
    case Prim::kNeg: case Prim::kExp: case Prim::kLog: case Prim::kSin: case Prim::kCos: case Prim::kTanh:
    case Prim::kLogistic: case Prim::kSqrt: case Prim::kRsqrt: case Prim::kSquare: case Prim::kIntegerPow:
    case Prim::kRelu: case Prim::kAddAny: case Prim::kPow: case Prim::kAtan2: case Prim::kRem: case Prim::kAbs:
    case Prim::kSign: case Prim::kFloor: case Prim::kCeil: case Prim::kRound: case Prim::kIsFinite: case Prim::kExp2:
    case Prim::kExpm1: case Prim::kLog1p: case Prim::kTan: case Prim::kErf: case Prim::kErfc: case Prim::kErfInv:
    case Prim::kReducePrecision:
      return out;
    case Prim::kClamp: return 2 * out;  // a max and a min
    case Prim::kConj: return out;  // a negation per element
    case Prim::kFft: {  // the usual 5 n log2 n of an n-point complex transform, per transform
      const Shape lengths = param_ints(eqn.params, "fft_lengths", eqn.where);
      const Shape& x = graph.values[eqn.inputs[0]].type.shape;
      int64_t n = 1, transforms = 1;
      for (int64_t d : lengths) n *= d;
      for (size_t d = 0; d + lengths.size() < x.size(); ++d) transforms *= x[d];
      return static_cast<int64_t>(5.0 * static_cast<double>(n) * std::log2(static_cast<double>(std::max<int64_t>(n, 1)))) *
             transforms;
    }
    // Bitwise and logical ops: integer work, not floating point.
    case Prim::kAnd: case Prim::kOr: case Prim::kXor: case Prim::kNot: case Prim::kShiftLeft:
    case Prim::kShiftRightLogical: case Prim::kShiftRightArithmetic:
    case Prim::kRandomSeed: case Prim::kRandomWrap: case Prim::kRandomUnwrap: case Prim::kRandomSplit:
    case Prim::kRandomFoldIn: case Prim::kRandomBits: case Prim::kRandomClone: case Prim::kThreefry2x32:  // threefry's rounds: integer work too
      return 0;
    // Data movement.
    case Prim::kSelectN: case Prim::kBroadcastInDim: case Prim::kReshape: case Prim::kTranspose: case Prim::kSqueeze:
    case Prim::kConvertElementType: case Prim::kStopGradient: case Prim::kName: case Prim::kPjit:
    case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall: case Prim::kIota:
    case Prim::kConcatenate: case Prim::kSlice: case Prim::kSplit: case Prim::kSort: case Prim::kDynamicSlice:
    case Prim::kDynamicUpdateSlice: case Prim::kPad: case Prim::kRev: case Prim::kCopy: case Prim::kGather:
    case Prim::kOptimizationBarrier: case Prim::kBitcastConvertType: case Prim::kReal: case Prim::kImag:
    case Prim::kComplex: case Prim::kShardingConstraint: case Prim::kReshard: case Prim::kShardMapIn:
    case Prim::kShardMapOut: case Prim::kAllGather: case Prim::kPpermute: case Prim::kAllToAll: case Prim::kAxisIndex:
    case Prim::kPbroadcast: case Prim::kPvary: case Prim::kShardMap: case Prim::kXlaPmap:
      return 0;
    // A device's share of a sum over devices: XLA's reduce-scatter then all-gather adds each element
    // once per other device, of which a device does 1/N of the work; counted as one add per element.
    case Prim::kPsum: case Prim::kPmax: case Prim::kPmin: case Prim::kReduceScatter:
      return out;
    case Prim::kDebugCallback:
      return 0;  // it computes nothing
    case Prim::kPureCallback: case Prim::kIoCallback:
      return 0;  // on the host, outside the program: nothing rematkit can count
    case Prim::kScan: case Prim::kCond: case Prim::kWhile:
      return 0;  // a while (the others are counted above, through their bodies)
  }
  return 0;
}

int64_t equations_flops(const FlatGraph& graph, const std::vector<int>& eqns) {
  int64_t total = 0;
  for (int e : eqns) total += equation_flops(graph, graph.eqns[static_cast<size_t>(e)]);
  return total;
}

}  // namespace rematkit
