// The primitives rematkit knows, their JAX names and aliases, and type inference: what each
// primitive computes from its operand types and params (the verifier's rule).
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "rematkit/error.hpp"
#include "rematkit/types.hpp"

namespace rematkit {

struct Params;

enum class Prim {
  // binary elementwise (lax's size-1 and rank-0 broadcasting)
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  // comparisons (result bool)
  kGt, kGe, kLt, kLe, kEq, kNe,
  // unary elementwise
  kNeg, kExp, kLog, kSin, kCos, kTanh, kLogistic, kSqrt, kRsqrt, kSquare, kIntegerPow,
  kStopGradient, kName, kRelu, kConvertElementType,
  // others
  kSelectN, kDotGeneral, kReduceSum, kReduceMax, kBroadcastInDim, kReshape, kTranspose, kSqueeze,
  kSoftmax,
  // calls with a sub-program
  kPjit, kCheckpoint,
};

// The canonical JAX name ("dot_general", "pjit", "checkpoint").
std::string_view prim_name(Prim prim);
// A name or alias as programs write it (jit -> pjit; remat, remat2, remat_call -> checkpoint).
// custom_jvp_call is not a Prim: the parser resolves it. nullopt for an unknown name.
std::optional<Prim> lookup_prim(std::string_view name);

bool is_binary_elementwise(Prim prim);   // add ... min and the comparisons
bool is_comparison(Prim prim);
bool is_unary_elementwise(Prim prim);
bool has_body(Prim prim);                // pjit, checkpoint

// Output types of `prim` applied to `inputs`; a bad-input error at `where` if they do not fit.
// Call primitives (pjit, checkpoint) are checked by the verifier against their body instead.
std::vector<Type> infer_types(Prim prim, const Params& params, const std::vector<Type>& inputs,
                              const SourceLocation& where);

// Shape of lax's broadcasting binary op (equal, rank 0, or equal rank with size-1 dims), or nullopt.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace rematkit
