// The primitives rematkit knows, one row each. This table is the single source of truth: the Prim
// enum, the JAX names, the operand counts, the parameter schema (what the parser keeps and the
// verifier checks) and the families behind is_unary_elementwise() and friends all come from it.
// Each primitive's rules (types, JVP, transpose, reference kernel, FLOPs) are cases of switches
// over Prim with no default, so a row added without its rules does not compile
// (docs/adding-a-primitive.md). C++17 and free of dependencies: the core includes it, and so can
// plugins, which otherwise see only the C ABI, to turn rk_equation_view::primitive into a Prim.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace rematkit {

// What a parameter's value must be. The verifier checks every parameter of the schema before a
// rule reads it, so rules read them without checking again.
enum class ParamKind {
  kInt,      // 3
  kInts,     // (1, 2) or [1, 2]; a single int is read as one
  kIntsOrNone,  // as kInts, or None (slice's strides)
  kBool,     // True or False
  kPadding,  // pad's ((low, high, interior), ...), one triple per dim
  kPaddingPairs,  // convolutions' and windows' ((low, high), ...), one pair per dim
  kDType,    // float32, bfloat16, int32, bool, ... (an identifier or a string); None when optional
  kName,     // an identifier or a string
  kDotDims,  // dot_general's ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
  kGatherDims,   // GatherDimensionNumbers(offset_dims=(..), collapsed_slice_dims=(..), start_index_map=(..), ...)
  kScatterDims,  // ScatterDimensionNumbers(update_window_dims=(..), inserted_window_dims=(..), ...)
  kConvDims,     // ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..))
  kIndexMode,    // GatherScatterMode.CLIP, .FILL_OR_DROP or .PROMISE_IN_BOUNDS (or 1, 2, 3)
  kProgram,  // a sub-program { lambda ... }
  kPrograms, // a tuple of sub-programs (cond's branches)
  kAny,      // kept and printed back, never read by a rule
  kRaw,      // a Python repr the jaxpr syntax cannot hold (Mesh('x': 4), {0: ('x',)}): kept as its text
};

struct ParamSpec {
  std::string_view name;
  ParamKind kind = ParamKind::kAny;
  bool required = true;
};

// Families group primitives that share a shape of rule (elementwise broadcasting, a body, ...).
enum class PrimFamily {
  kBinaryArithmetic,  // two operands with lax's size-1 and rank-0 broadcasting
  kComparison,        // as kBinaryArithmetic, with a bool result
  kBitwise,           // as kBinaryArithmetic, on bool or integer operands
  kUnary,             // elementwise on one operand
  kTernary,           // elementwise on three operands (clamp)
  kSelect,            // select_n: a predicate and cases
  kContraction,       // dot_general
  kReduction,         // over some axes
  kLayout,            // moves elements without arithmetic
  kNormalization,     // softmax
  kRandom,            // PRNG keys and random bits: integer and key typed, a zero derivative
  kCall,              // has a sub-program (jaxpr=..., call_jaxpr=...): inlined by autodiff, checked against its body
  kControlFlow,       // runs sub-programs as a loop or a branch (scan, cond, while): never inlined
  kEffect,            // runs for what it does, not for a value: no outputs (debug_callback)
  kHostCall,          // calls a Python function the program does not carry (pure_callback, io_callback)
  kComplexPart,       // between complex numbers and their real parts, elementwise (real, imag, complex, conj)
  kFourier,           // discrete Fourier transforms over trailing dims (fft)
  kSharding,          // says where a value lives, not what it is: the value unchanged (sharding_constraint)
  kMappedCall,        // a body run once per device of a mesh (shard_map, xla_pmap), its types per device
  kCollective,        // moves values between the devices of a mesh: run by the mesh runtime (psum, all_gather)
};

inline constexpr int kVariadic = -1;  // any number of operands
inline constexpr size_t kMaxParams = 12;  // shard_map's

// A row's PARAMS: RK_NO_PARAMS, or RK_REQUIRED/RK_OPTIONAL(name, kind) one after another (each
// brings its own leading comma, so the list is one macro argument in C++17 as well).
#define RK_NO_PARAMS
#define RK_REQUIRED(name, kind) , ::rematkit::ParamSpec{name, ::rematkit::ParamKind::kind, true}
#define RK_OPTIONAL(name, kind) , ::rematkit::ParamSpec{name, ::rematkit::ParamKind::kind, false}

// The window of reduce_window_sum/max/min and select_and_gather_add, in the order JAX prints it.
#define RK_WINDOW_PARAMS                                                                              \
  RK_REQUIRED("base_dilation", kInts) RK_REQUIRED("padding", kPaddingPairs)                           \
  RK_REQUIRED("window_dilation", kInts) RK_REQUIRED("window_dimensions", kInts)                       \
  RK_REQUIRED("window_strides", kInts)

// X(ENUMERATOR, "jax_name", FAMILY, MIN_OPERANDS, MAX_OPERANDS, PARAMS): PARAMS are the params JAX
// prints that rematkit keeps (others are dropped when a program is read).
#define RK_PRIMITIVES(X)                                                                              \
  X(kAdd, "add", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kSub, "sub", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kMul, "mul", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kDiv, "div", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kMax, "max", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kMin, "min", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kAddAny, "add_any", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                        \
  X(kPow, "pow", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kAtan2, "atan2", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                           \
  X(kRem, "rem", kBinaryArithmetic, 2, 2, RK_NO_PARAMS)                                               \
  X(kGt, "gt", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kGe, "ge", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kLt, "lt", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kLe, "le", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kEq, "eq", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kNe, "ne", kComparison, 2, 2, RK_NO_PARAMS)                                                       \
  X(kAnd, "and", kBitwise, 2, 2, RK_NO_PARAMS)                                                        \
  X(kOr, "or", kBitwise, 2, 2, RK_NO_PARAMS)                                                          \
  X(kXor, "xor", kBitwise, 2, 2, RK_NO_PARAMS)                                                        \
  X(kShiftLeft, "shift_left", kBitwise, 2, 2, RK_NO_PARAMS)                                           \
  X(kShiftRightLogical, "shift_right_logical", kBitwise, 2, 2, RK_NO_PARAMS)                          \
  X(kShiftRightArithmetic, "shift_right_arithmetic", kBitwise, 2, 2, RK_NO_PARAMS)                    \
  X(kNeg, "neg", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kExp, "exp", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kLog, "log", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kSin, "sin", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kCos, "cos", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kTanh, "tanh", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kLogistic, "logistic", kUnary, 1, 1, RK_NO_PARAMS)                                                \
  X(kSqrt, "sqrt", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kRsqrt, "rsqrt", kUnary, 1, 1, RK_NO_PARAMS)                                                      \
  X(kSquare, "square", kUnary, 1, 1, RK_NO_PARAMS)                                                    \
  X(kIntegerPow, "integer_pow", kUnary, 1, 1, RK_REQUIRED("y", kInt))                                 \
  X(kStopGradient, "stop_gradient", kUnary, 1, 1, RK_NO_PARAMS)                                       \
  X(kName, "name", kUnary, 1, 1, RK_REQUIRED("name", kName))                                          \
  X(kRelu, "relu", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kConvertElementType, "convert_element_type", kUnary, 1, 1, RK_REQUIRED("new_dtype", kDType))      \
  X(kAbs, "abs", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kSign, "sign", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kFloor, "floor", kUnary, 1, 1, RK_NO_PARAMS)                                                      \
  X(kCeil, "ceil", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kRound, "round", kUnary, 1, 1, RK_OPTIONAL("rounding_method", kAny))                              \
  X(kIsFinite, "is_finite", kUnary, 1, 1, RK_NO_PARAMS)                                               \
  X(kExp2, "exp2", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kExpm1, "expm1", kUnary, 1, 1, RK_NO_PARAMS)                                                      \
  X(kLog1p, "log1p", kUnary, 1, 1, RK_NO_PARAMS)                                                      \
  X(kTan, "tan", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kErf, "erf", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kErfc, "erfc", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kErfInv, "erf_inv", kUnary, 1, 1, RK_NO_PARAMS)                                                   \
  X(kNot, "not", kUnary, 1, 1, RK_NO_PARAMS)                                                          \
  X(kClamp, "clamp", kTernary, 3, 3, RK_NO_PARAMS)                                                    \
  X(kSelectN, "select_n", kSelect, 2, kVariadic, RK_NO_PARAMS)                                        \
  X(kDotGeneral, "dot_general", kContraction, 2, 2, RK_REQUIRED("dimension_numbers", kDotDims) RK_OPTIONAL("preferred_element_type", kDType)) \
  X(kReduceSum, "reduce_sum", kReduction, 1, 1, RK_REQUIRED("axes", kInts))                           \
  X(kReduceMax, "reduce_max", kReduction, 1, 1, RK_REQUIRED("axes", kInts))                           \
  X(kBroadcastInDim, "broadcast_in_dim", kLayout, 1, 1, RK_REQUIRED("shape", kInts)                   \
    RK_REQUIRED("broadcast_dimensions", kInts))                                                       \
  X(kReshape, "reshape", kLayout, 1, 1, RK_REQUIRED("new_sizes", kInts) RK_OPTIONAL("dimensions", kAny)) \
  X(kTranspose, "transpose", kLayout, 1, 1, RK_REQUIRED("permutation", kInts))                        \
  X(kSqueeze, "squeeze", kLayout, 1, 1, RK_REQUIRED("dimensions", kInts))                             \
  X(kSoftmax, "softmax", kNormalization, 1, 1, RK_REQUIRED("axis", kInt))                             \
  X(kReduceMin, "reduce_min", kReduction, 1, 1, RK_REQUIRED("axes", kInts))                           \
  X(kReduceProd, "reduce_prod", kReduction, 1, 1, RK_REQUIRED("axes", kInts))                          \
  X(kArgMax, "argmax", kReduction, 1, 1, RK_REQUIRED("axes", kInts) RK_REQUIRED("index_dtype", kDType)) \
  X(kArgMin, "argmin", kReduction, 1, 1, RK_REQUIRED("axes", kInts) RK_REQUIRED("index_dtype", kDType)) \
  X(kCumsum, "cumsum", kReduction, 1, 1, RK_REQUIRED("axis", kInt) RK_OPTIONAL("reverse", kBool))     \
  X(kCumprod, "cumprod", kReduction, 1, 1, RK_REQUIRED("axis", kInt) RK_OPTIONAL("reverse", kBool))   \
  X(kCummax, "cummax", kReduction, 1, 1, RK_REQUIRED("axis", kInt) RK_OPTIONAL("reverse", kBool))     \
  X(kCummin, "cummin", kReduction, 1, 1, RK_REQUIRED("axis", kInt) RK_OPTIONAL("reverse", kBool))     \
  X(kCumlogsumexp, "cumlogsumexp", kReduction, 1, 1, RK_REQUIRED("axis", kInt) RK_OPTIONAL("reverse", kBool)) \
  X(kIota, "iota", kLayout, 0, 0, RK_REQUIRED("dtype", kDType) RK_REQUIRED("shape", kInts)            \
    RK_REQUIRED("dimension", kInt))                                                                   \
  X(kConcatenate, "concatenate", kLayout, 1, kVariadic, RK_REQUIRED("dimension", kInt))               \
  X(kSlice, "slice", kLayout, 1, 1, RK_REQUIRED("start_indices", kInts) RK_REQUIRED("limit_indices", kInts) \
    RK_OPTIONAL("strides", kIntsOrNone))                                                              \
  X(kDynamicSlice, "dynamic_slice", kLayout, 1, kVariadic, RK_REQUIRED("slice_sizes", kInts))         \
  X(kDynamicUpdateSlice, "dynamic_update_slice", kLayout, 2, kVariadic, RK_NO_PARAMS)                 \
  X(kPad, "pad", kLayout, 2, 2, RK_REQUIRED("padding_config", kPadding))                              \
  X(kRev, "rev", kLayout, 1, 1, RK_REQUIRED("dimensions", kInts))                                     \
  /* sort of n operands (the first num_keys the keys) has n outputs: an equation each here. */      \
  X(kSort, "sort", kLayout, 1, kVariadic, RK_REQUIRED("dimension", kInt) RK_OPTIONAL("is_stable", kBool) \
    RK_REQUIRED("num_keys", kInt) RK_OPTIONAL("output", kInt))                                        \
  /* split's outputs are one equation each here, output=0, 1, ... (parser.cpp). */                   \
  X(kSplit, "split", kLayout, 1, 1, RK_REQUIRED("sizes", kInts) RK_REQUIRED("axis", kInt)            \
    RK_OPTIONAL("output", kInt))                                                                      \
  X(kCopy, "copy", kUnary, 1, 1, RK_NO_PARAMS)                                                        \
  X(kReducePrecision, "reduce_precision", kUnary, 1, 1, RK_REQUIRED("exponent_bits", kInt)            \
    RK_REQUIRED("mantissa_bits", kInt))                                                               \
  X(kBitcastConvertType, "bitcast_convert_type", kUnary, 1, 1, RK_REQUIRED("new_dtype", kDType))      \
  X(kOptimizationBarrier, "optimization_barrier", kUnary, 1, 1, RK_NO_PARAMS)                         \
  X(kGather, "gather", kLayout, 2, 2, RK_REQUIRED("dimension_numbers", kGatherDims)                   \
    RK_REQUIRED("slice_sizes", kInts) RK_OPTIONAL("mode", kIndexMode) RK_OPTIONAL("fill_value", kAny)  \
    RK_OPTIONAL("wrap_negative_indices", kBool))                                                      \
  X(kScatterAdd, "scatter-add", kLayout, 3, 3, RK_REQUIRED("dimension_numbers", kScatterDims)          \
    RK_OPTIONAL("mode", kIndexMode) RK_OPTIONAL("wrap_negative_indices", kBool))                      \
  /* lax.conv_general_dilated (jax/_src/lax/convolution.py), params in the order JAX prints them. */   \
  X(kConvGeneralDilated, "conv_general_dilated", kContraction, 2, 2, RK_REQUIRED("batch_group_count", kInt) \
    RK_REQUIRED("dimension_numbers", kConvDims) RK_REQUIRED("feature_group_count", kInt)              \
    RK_REQUIRED("lhs_dilation", kInts) RK_REQUIRED("padding", kPaddingPairs) RK_OPTIONAL("precision", kAny) \
    RK_OPTIONAL("preferred_element_type", kDType) RK_REQUIRED("rhs_dilation", kInts)                 \
    RK_REQUIRED("window_strides", kInts))                                                             \
  /* The monoid window reductions and their derivatives' primitives (windowed_reductions.py). */     \
  X(kReduceWindowSum, "reduce_window_sum", kReduction, 1, 1, RK_WINDOW_PARAMS)                        \
  X(kReduceWindowMax, "reduce_window_max", kReduction, 1, 1, RK_WINDOW_PARAMS)                        \
  X(kReduceWindowMin, "reduce_window_min", kReduction, 1, 1, RK_WINDOW_PARAMS)                        \
  /* select_and_gather_add tangents operand: the tangent where the operand's window picks (select_prim */ \
  /* ge: its max, le: its min); select_and_scatter_add source operand scatters back to that place. */ \
  X(kSelectAndGatherAdd, "select_and_gather_add", kReduction, 2, 2, RK_REQUIRED("select_prim", kName) \
    RK_WINDOW_PARAMS)                                                                                 \
  X(kSelectAndScatterAdd, "select_and_scatter_add", kReduction, 2, 2, RK_REQUIRED("padding", kPaddingPairs) \
    RK_REQUIRED("select_prim", kName) RK_REQUIRED("window_dimensions", kInts) RK_REQUIRED("window_strides", kInts)) \
  /* jax.random's primitives on threefry keys (key<fry>), and the hash itself. */                     \
  X(kRandomSeed, "random_seed", kRandom, 1, 1, RK_REQUIRED("impl", kName))                           \
  X(kRandomWrap, "random_wrap", kRandom, 1, 1, RK_REQUIRED("impl", kName))                           \
  X(kRandomUnwrap, "random_unwrap", kRandom, 1, 1, RK_NO_PARAMS)                                      \
  X(kRandomSplit, "random_split", kRandom, 1, 1, RK_REQUIRED("shape", kInts))                         \
  X(kRandomFoldIn, "random_fold_in", kRandom, 2, 2, RK_NO_PARAMS)                                     \
  X(kRandomBits, "random_bits", kRandom, 1, 1, RK_REQUIRED("bit_width", kInt) RK_REQUIRED("shape", kInts)) \
  X(kRandomClone, "random_clone", kRandom, 1, 1, RK_NO_PARAMS)                                        \
  /* threefry2x32's two outputs are two equations here, output=0 and output=1 (parser.cpp). */       \
  X(kThreefry2x32, "threefry2x32", kRandom, 4, 4, RK_OPTIONAL("output", kInt))                        \
  X(kPjit, "pjit", kCall, 0, kVariadic, RK_OPTIONAL("name", kName) RK_REQUIRED("jaxpr", kProgram))   \
  /* ignored_callable_policy: a function policy jax_remat3 never calls, kept for a note (parser.cpp) */ \
  X(kCheckpoint, "checkpoint", kCall, 0, kVariadic, RK_REQUIRED("jaxpr", kProgram)                    \
    RK_OPTIONAL("policy", kAny) RK_OPTIONAL("prevent_cse", kAny) RK_OPTIONAL("differentiated", kAny)  \
    RK_OPTIONAL("ignored_callable_policy", kAny))                                                     \
  /* jax.custom_jvp and jax.custom_vjp functions: the body is call_jaxpr; name, jvp and bwd are the */ \
  /* Python functions' names, as custom_derivatives.py's pretty-printing rules write them.         */ \
  X(kCustomJvpCall, "custom_jvp_call", kCall, 0, kVariadic, RK_REQUIRED("call_jaxpr", kProgram)       \
    RK_OPTIONAL("name", kName) RK_OPTIONAL("jvp", kAny) RK_OPTIONAL("num_consts", kInt))             \
  X(kCustomVjpCall, "custom_vjp_call", kCall, 0, kVariadic, RK_REQUIRED("call_jaxpr", kProgram)       \
    RK_OPTIONAL("name", kName) RK_OPTIONAL("bwd", kAny) RK_OPTIONAL("num_consts", kInt))             \
  /* lax.scan: operands are num_consts consts, num_carry carries, then the stacked xs; outputs the */ \
  /* final carries, then the stacked ys (jax/_src/lax/control_flow/loops.py).                      */ \
  /* JAX 0.11 prints ft_in=((consts...), (carries...), (xs...)) where it printed the counts.       */ \
  X(kScan, "scan", kControlFlow, 0, kVariadic, RK_REQUIRED("jaxpr", kProgram) RK_REQUIRED("length", kInt) \
    RK_OPTIONAL("linear", kAny) RK_OPTIONAL("num_carry", kInt) RK_OPTIONAL("num_consts", kInt)         \
    RK_OPTIONAL("reverse", kBool) RK_OPTIONAL("unroll", kAny) RK_OPTIONAL("_split_transpose", kAny)    \
    RK_OPTIONAL("ft_in", kAny) RK_OPTIONAL("ft_out", kAny))                                           \
  /* lax.cond / lax.switch: the branch index, then the branches' operands (conditionals.py). */       \
  X(kCond, "cond", kControlFlow, 1, kVariadic, RK_REQUIRED("branches", kPrograms))                    \
  /* lax.while_loop: cond_nconsts consts, body_nconsts consts, then the carries. */                   \
  X(kWhile, "while", kControlFlow, 0, kVariadic, RK_REQUIRED("body_jaxpr", kProgram)                  \
    RK_REQUIRED("body_nconsts", kInt) RK_REQUIRED("cond_jaxpr", kProgram) RK_REQUIRED("cond_nconsts", kInt)) \
  /* jax.debug.print and jax.debug.callback (jax/_src/debugging.py): no outputs, an effect. JAX */     \
  /* 0.7.2 on prints debug_print (fmt=... raw), an alias here; fmt is kept for --debug-prints.   */    \
  X(kDebugCallback, "debug_callback", kEffect, 0, kVariadic, RK_OPTIONAL("effect", kAny)               \
    RK_OPTIONAL("fmt", kAny) RK_OPTIONAL("ordered", kAny) RK_OPTIONAL("partitioned", kAny))            \
  /* jax.pure_callback and jax.experimental.io_callback (jax/_src/callback.py): results typed by  */   \
  /* result_avals, read as ((dtype, shape), ...) from ShapedArray(float32[3]) reprs (parser.cpp).  */  \
  /* Their callback= (from 0.4.26 a _FlatCallback repr with a PyTreeDef) is dropped, as is         */  \
  /* debug_callback's.                                                                             */  \
  X(kPureCallback, "pure_callback", kHostCall, 0, kVariadic, RK_REQUIRED("result_avals", kAny)         \
    RK_OPTIONAL("sharding", kAny) RK_OPTIONAL("vectorized", kAny) RK_OPTIONAL("vmap_method", kAny))    \
  X(kIoCallback, "io_callback", kHostCall, 0, kVariadic, RK_OPTIONAL("ordered", kAny)                  \
    RK_REQUIRED("result_avals", kAny) RK_OPTIONAL("sharding", kAny))                                   \
  /* Complex numbers' parts (jax/_src/lax/lax.py): real and imag of c64 are f32, complex(f32, f32)  */ \
  /* is c64, conj of f32 or c64 is c64 (input_dtype, printed complex64, is the operand's dtype).   */ \
  X(kReal, "real", kComplexPart, 1, 1, RK_NO_PARAMS)                                                  \
  X(kImag, "imag", kComplexPart, 1, 1, RK_NO_PARAMS)                                                  \
  X(kComplex, "complex", kComplexPart, 2, 2, RK_NO_PARAMS)                                            \
  X(kConj, "conj", kComplexPart, 1, 1, RK_OPTIONAL("input_dtype", kAny))                             \
  /* lax.fft (jax/_src/lax/fft.py) over the last len(fft_lengths) dims. fft_type prints as        */ \
  /* FftType.FFT (JAX to 0.4.34, and on Python 3.10) or as its value 0-3 (FFT, IFFT, RFFT, IRFFT). */ \
  X(kFft, "fft", kFourier, 1, 1, RK_REQUIRED("fft_type", kAny) RK_REQUIRED("fft_lengths", kInts))     \
  /* Sharding annotations (jax/_src/pjit.py): the value unchanged. sharding_constraint's params   */ \
  /* changed with JAX (resource_env to 0.5.0, context_mesh and layout later); reshard (0.5.1 on)   */ \
  /* is also read for mesh_cast (0.5.1-0.7.1) and sharding_cast (0.4.38-0.5.0).                  */ \
  X(kShardingConstraint, "sharding_constraint", kSharding, 1, 1, RK_OPTIONAL("sharding", kRaw)        \
    RK_OPTIONAL("resource_env", kRaw) RK_OPTIONAL("context_mesh", kRaw) RK_OPTIONAL("layout", kRaw)  \
    RK_OPTIONAL("unconstrained_dims", kRaw))                                                          \
  X(kReshard, "reshard", kSharding, 1, 1, RK_OPTIONAL("dst_sharding", kRaw) RK_OPTIONAL("src_sharding", kRaw) \
    RK_OPTIONAL("concrete_mesh", kRaw))                                                               \
  /* shard_map (jax/_src/shard_map.py; jax/experimental/shard_map.py to 0.6.0): the body per device, */ \
  /* its operands split by in_specs (in_names to 0.6.0) over mesh's axes, its results joined by     */ \
  /* out_specs (out_names). xla_pmap (pxla.py, to 0.9.2): call_jaxpr per index of axis_name.        */ \
  X(kShardMap, "shard_map", kMappedCall, 0, kVariadic, RK_REQUIRED("jaxpr", kProgram) RK_REQUIRED("mesh", kRaw) \
    RK_OPTIONAL("in_specs", kRaw) RK_OPTIONAL("out_specs", kRaw) RK_OPTIONAL("in_names", kRaw)         \
    RK_OPTIONAL("out_names", kRaw) RK_OPTIONAL("auto", kRaw) RK_OPTIONAL("manual_axes", kRaw)          \
    RK_OPTIONAL("newly_manual_axes", kRaw))                                                           \
  X(kXlaPmap, "xla_pmap", kMappedCall, 0, kVariadic, RK_REQUIRED("call_jaxpr", kProgram)             \
    RK_REQUIRED("axis_name", kAny) RK_REQUIRED("axis_size", kInt) RK_OPTIONAL("in_axes", kAny)         \
    RK_OPTIONAL("out_axes", kAny) RK_OPTIONAL("mapped_invars", kRaw) RK_OPTIONAL("global_arg_shapes", kRaw) \
    RK_OPTIONAL("devices", kRaw) RK_OPTIONAL("backend", kRaw))                                        \
  /* What shard_map and xla_pmap are traced into for autodiff (jvp_trace.cpp): a device's block of  */ \
  /* a whole operand, and the whole result gathered from the devices' blocks. dim_axes holds each   */ \
  /* dim's mesh axes, dim_sizes their product (the dim's number of blocks); replicated_axes the     */ \
  /* mesh axes no dim names, over which the value is the same on every device, replicated_size the */ \
  /* product of their sizes.                                                                        */ \
  X(kShardMapIn, "shard_map_in", kCollective, 1, 1, RK_REQUIRED("dim_axes", kAny) RK_REQUIRED("dim_sizes", kInts)     \
    RK_OPTIONAL("replicated_axes", kAny) RK_OPTIONAL("replicated_size", kInt))                        \
  X(kShardMapOut, "shard_map_out", kCollective, 1, 1, RK_REQUIRED("dim_axes", kAny) RK_REQUIRED("dim_sizes", kInts) \
    RK_OPTIONAL("replicated_axes", kAny) RK_OPTIONAL("replicated_size", kInt))                        \
  /* Collectives (jax/_src/lax/parallel.py), one operand an equation (the parser splits psum's     */ \
  /* several). axes/axis_name: mesh axis names, bare (x) or a tuple. psum2 and psum_invariant are  */ \
  /* psum's names under shard_map's replication checks; pbroadcast with axes= is shard_map's no-op  */ \
  /* cast (0.4.16-0.5.3), with axis_name= and source= lax's broadcast from one device.             */ \
  X(kPsum, "psum", kCollective, 1, 1, RK_OPTIONAL("axes", kAny) RK_OPTIONAL("axis_name", kAny)        \
    RK_OPTIONAL("axis_index_groups", kAny))                                                           \
  X(kPmax, "pmax", kCollective, 1, 1, RK_OPTIONAL("axes", kAny) RK_OPTIONAL("axis_name", kAny)        \
    RK_OPTIONAL("axis_index_groups", kAny))                                                           \
  X(kPmin, "pmin", kCollective, 1, 1, RK_OPTIONAL("axes", kAny) RK_OPTIONAL("axis_name", kAny)        \
    RK_OPTIONAL("axis_index_groups", kAny))                                                           \
  X(kAllGather, "all_gather", kCollective, 1, 1, RK_REQUIRED("all_gather_dimension", kInt)           \
    RK_REQUIRED("axis_name", kAny) RK_REQUIRED("axis_size", kInt) RK_OPTIONAL("tiled", kBool)          \
    RK_OPTIONAL("axis_index_groups", kAny))                                                           \
  X(kReduceScatter, "reduce_scatter", kCollective, 1, 1, RK_REQUIRED("scatter_dimension", kInt)      \
    RK_REQUIRED("axis_name", kAny) RK_REQUIRED("axis_size", kInt) RK_OPTIONAL("tiled", kBool)          \
    RK_OPTIONAL("axis_index_groups", kAny))                                                           \
  X(kPpermute, "ppermute", kCollective, 1, 1, RK_REQUIRED("axis_name", kAny) RK_REQUIRED("perm", kAny)) \
  /* all_to_all's axis_size is not printed: the parser reads it off the typed result. */              \
  X(kAllToAll, "all_to_all", kCollective, 1, 1, RK_REQUIRED("axis_name", kAny) RK_REQUIRED("split_axis", kInt) \
    RK_REQUIRED("concat_axis", kInt) RK_OPTIONAL("tiled", kBool) RK_OPTIONAL("axis_index_groups", kAny) \
    RK_OPTIONAL("axis_size", kInt))                                                                   \
  X(kAxisIndex, "axis_index", kCollective, 0, 0, RK_REQUIRED("axis_name", kAny))                     \
  X(kPbroadcast, "pbroadcast", kCollective, 1, 1, RK_OPTIONAL("axes", kAny) RK_OPTIONAL("axis_index_groups", kAny) \
    RK_OPTIONAL("axis_name", kAny) RK_OPTIONAL("source", kInt))                                       \
  X(kPvary, "pvary", kCollective, 1, 1, RK_OPTIONAL("axes", kAny) RK_OPTIONAL("axis_index_groups", kAny)) \
  RK_PRIMITIVE_FOR_RULE_CHECK(X)

// Only tests/rules/unruled_primitive_test.sh defines this, to show that a row without rules fails
// to compile; nothing else ever sees the extra primitive.
#ifdef REMATKIT_CHECK_UNRULED_PRIMITIVE
#define RK_PRIMITIVE_FOR_RULE_CHECK(X) X(kUnruledForCheck, "unruled_for_check", kUnary, 1, 1, RK_NO_PARAMS)
#else
#define RK_PRIMITIVE_FOR_RULE_CHECK(X)
#endif

enum class Prim {
#define RK_PRIM_ENUMERATOR(id, name, family, min_operands, max_operands, params) id,
  RK_PRIMITIVES(RK_PRIM_ENUMERATOR)
#undef RK_PRIM_ENUMERATOR
};

// One row of the table.
struct PrimInfo {
  Prim prim;
  std::string_view name;  // JAX's name, as programs print it and plugins see it
  PrimFamily family;
  int min_operands, max_operands;  // max kVariadic: no limit
  std::array<ParamSpec, kMaxParams> params;  // the first num_params are used
  size_t num_params;
};

namespace primitive_table_detail {
template <typename... Specs>
constexpr PrimInfo row(Prim prim, std::string_view name, PrimFamily family, int min_operands, int max_operands,
                       Specs... specs) {
  static_assert(sizeof...(Specs) <= kMaxParams, "raise kMaxParams");
  return PrimInfo{prim, name, family, min_operands, max_operands, {specs...}, sizeof...(Specs)};
}
}  // namespace primitive_table_detail

inline constexpr PrimInfo kPrimitiveTable[] = {
#define RK_PRIM_ROW(id, name, family, min_operands, max_operands, params) \
  primitive_table_detail::row(Prim::id, name, PrimFamily::family, min_operands, max_operands params),
    RK_PRIMITIVES(RK_PRIM_ROW)
#undef RK_PRIM_ROW
};
inline constexpr size_t kNumPrims = sizeof(kPrimitiveTable) / sizeof(kPrimitiveTable[0]);

constexpr const PrimInfo& prim_info(Prim prim) { return kPrimitiveTable[static_cast<size_t>(prim)]; }
// The canonical JAX name ("dot_general", "pjit", "checkpoint").
constexpr std::string_view prim_name(Prim prim) { return prim_info(prim).name; }
constexpr PrimFamily prim_family(Prim prim) { return prim_info(prim).family; }

// Other names programs use for a primitive (jax.jit's older name, jax.remat's).
struct PrimAlias {
  std::string_view name;
  Prim prim;
};
inline constexpr PrimAlias kPrimAliases[] = {
    {"jit", Prim::kPjit}, {"remat", Prim::kCheckpoint}, {"remat2", Prim::kCheckpoint},
    {"xla_call", Prim::kPjit},             // jax.jit to JAX 0.4.3, with call_jaxpr for jaxpr
    {"remat_call", Prim::kCheckpoint},     // jax.checkpoint to JAX 0.3.15, with call_jaxpr for jaxpr
    // jax.custom_vjp and jax.custom_jvp staged out, with fun_jaxpr for call_jaxpr: custom_vjp_call_jaxpr
    // JAX 0.2.0-0.6.0 (jax-v0.6.0 jax/_src/custom_derivatives.py, custom_vjp_call_p.initial_style),
    // custom_jvp_call_jaxpr JAX 0.2.0-0.3.16 (jax-v0.3.16 jax/interpreters/partial_eval.py,
    // DynamicJaxprTrace.process_custom_jvp_call binds prim.initial_style; custom_jvp_call from 0.3.17).
    {"custom_vjp_call_jaxpr", Prim::kCustomVjpCall},
    {"custom_jvp_call_jaxpr", Prim::kCustomJvpCall},
    {"copy_p", Prim::kCopy},  // lax.copy_p's name in older JAX
    {"debug_print", Prim::kDebugCallback},  // jax.debug.print from JAX 0.7.2 (debugging.py)
    // Sharding's older and newer names (pjit.py, shard_map.py, parallel.py at the JAX tags named
    // in docs/program-format.md): each moves data as its canonical primitive does.
    {"mesh_cast", Prim::kReshard}, {"sharding_cast", Prim::kReshard}, {"psum2", Prim::kPsum},
    {"psum_invariant", Prim::kPsum}, {"psum_scatter", Prim::kReduceScatter},
    {"all_gather_invariant", Prim::kAllGather}};  // jax.debug.print from JAX 0.7.2 (debugging.py)

// A name or alias as programs write it; nullopt for an unknown name.
constexpr std::optional<Prim> lookup_prim(std::string_view name) {
  for (const PrimInfo& info : kPrimitiveTable)
    if (info.name == name) return info.prim;
  for (const PrimAlias& alias : kPrimAliases)
    if (alias.name == name) return alias.prim;
  return std::nullopt;
}

constexpr bool is_comparison(Prim prim) { return prim_family(prim) == PrimFamily::kComparison; }
// The arithmetic, bitwise and comparison ops on two operands.
constexpr bool is_binary_elementwise(Prim prim) {
  return prim_family(prim) == PrimFamily::kBinaryArithmetic || prim_family(prim) == PrimFamily::kBitwise ||
         is_comparison(prim);
}
constexpr bool is_unary_elementwise(Prim prim) { return prim_family(prim) == PrimFamily::kUnary; }
constexpr bool has_body(Prim prim) { return prim_family(prim) == PrimFamily::kCall; }
// A body run once per device (shard_map, xla_pmap): typed per device, so never inlined as a call is.
constexpr bool is_mapped_call(Prim prim) { return prim_family(prim) == PrimFamily::kMappedCall; }
// Moves values between devices: run by the mesh runtime, never by a backend (parallel.py).
constexpr bool is_collective(Prim prim) { return prim_family(prim) == PrimFamily::kCollective; }
constexpr bool is_control_flow(Prim prim) { return prim_family(prim) == PrimFamily::kControlFlow; }
// Run for an effect, with no outputs: kept in order, never dead code (debugging.py).
constexpr bool is_effect(Prim prim) { return prim_family(prim) == PrimFamily::kEffect; }
// A call back into Python: analysed as an opaque host call, never run (callback.py).
constexpr bool is_host_call(Prim prim) { return prim_family(prim) == PrimFamily::kHostCall; }
// The param that holds a call's sub-program.
constexpr std::string_view body_param(Prim prim) {
  return prim == Prim::kCustomJvpCall || prim == Prim::kCustomVjpCall || prim == Prim::kXlaPmap ? "call_jaxpr" : "jaxpr";
}
constexpr bool is_custom_derivative_call(Prim prim) { return prim == Prim::kCustomJvpCall || prim == Prim::kCustomVjpCall; }

namespace primitive_table_detail {
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < kNumPrims; ++i)
    if (static_cast<size_t>(kPrimitiveTable[i].prim) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "the table is indexed by Prim");
}  // namespace primitive_table_detail

}  // namespace rematkit
