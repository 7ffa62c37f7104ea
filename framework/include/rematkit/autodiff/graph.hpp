// The flat graph autodiff works on: the program's equations with calls inlined, each tagged with
// its role in the JVP (primal, coefficient, tangent) or the backward pass, and the checkpoint
// region whose policy governs it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/policy/policy.hpp"
#include "rematkit/ir/primitive.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

struct ScanLinearization;
struct CondLinearization;

// Which part of a linearized scan or cond (scan_linearization.hpp, cond_linearization.hpp) an
// equation runs; kNone for every other equation.
enum class ControlFlowPart {
  kNone,
  kForward,    // the primal outputs and the residuals the forward pass keeps
  kRecompute,  // residuals computed again in a checkpoint's backward pass (scan)
  kTangent,    // linear in the tangents: transposed, never run
  kTranspose,  // the backward pass through the body or branch
};

using ValueId = int;
constexpr ValueId kNoValue = -1;  // a symbolically zero tangent, or no value

enum class ValueOrigin {
  kArgument,      // a program argument (binder after ';')
  kConstant,      // a program constant (binder before ';')
  kLiteral,       // a literal operand
  kEquation,      // an output of an equation of the graph
  kTangentInput,  // the tangent of a floating argument
  kCotangentSeed, // the cotangent of a program output, given to the backward pass
};

struct Value {
  Type type;
  ValueOrigin origin = ValueOrigin::kEquation;
  int producer = -1;       // equation index, for kEquation
  int binder = -1;         // position among arguments/constants/outputs, for those origins
  std::string name;        // binder name of an argument or constant
  double literal = 0.0;    // for kLiteral (a complex literal's real part)
  double literal_imag = 0.0;  // a complex literal's imaginary part
  bool is_tangent = false; // a tangent (linear) value of the JVP, or a cotangent
  std::string sharding;    // an argument's or constant's type as printed with JAX's sharding (f32[8@x,4])
  // Placed on a mesh (analysis/device_placement.hpp): each dim's number of blocks, one device
  // holding one block; empty: the whole value on every device.
  std::vector<int64_t> tiles;
};

// The type of the part of `v` one device holds: each dim divided by its tiles, rounded up (XLA
// pads the last blocks).
REMATKIT_CORE_EXPORT Type device_type(const Value& v);

enum class EqnRole {
  kPrimal,       // an equation of the program
  kCoefficient,  // primal-only values a JVP rule computes for its tangent (the cos of sin)
  kTangent,      // linear in the tangents
  kBackward,     // a transposed tangent equation (cotangent propagation)
};

// A checkpoint, or the top level (regions[0]). Checkpoints nest: `parent` is the enclosing one.
struct Region {
  PolicyPtr policy;      // nullptr for the top level (plain autodiff: everything saveable)
  SourceLocation where;  // the checkpoint equation
  int parent = -1;       // the enclosing region; -1 for the top level
};

// A custom_jvp_call or custom_vjp_call of the program. With JAX's rule for the function, its body
// runs primal-only and the rule gives the tangent; without one (a user's function, whose rule is
// Python code the printed program does not carry), autodiff differentiates the body instead.
struct CustomCall {
  Prim prim = Prim::kCustomJvpCall;
  std::string name;       // the function's name (name=), or empty
  std::string rule_name;  // jvp= or bwd=: the Python rule's name, or empty
  SourceLocation where;
  bool uses_jax_rule = false;
};

struct FlatEquation {
  Prim prim = Prim::kAdd;
  Params params;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  EqnRole role = EqnRole::kPrimal;
  int region = 0;          // the outermost checkpoint around it (its policy decides the forward pass); 0: none
  int scope = 0;           // the innermost checkpoint around it (0: none)
  int jit = -1;            // index into FlatGraph::jit_names of the outermost enclosing pjit, or -1
  // Index into FlatGraph::custom_calls of the custom_jvp_call whose body computed this primal
  // equation under JAX's own rule (policies then see the call, as in JAX), or -1.
  int custom_call = -1;
  Prim origin = Prim::kAdd;  // the program primitive whose JVP rule (or transpose) emitted this
  SourceLocation where;    // the program equation this comes from
  // A scan's or a cond's equations: the linearized whole they share, and which part this one runs.
  std::shared_ptr<const ScanLinearization> scan;
  std::shared_ptr<const CondLinearization> cond;
  ControlFlowPart part = ControlFlowPart::kNone;
};

struct REMATKIT_CORE_EXPORT FlatGraph {
  std::vector<Value> values;
  std::vector<FlatEquation> eqns;
  std::vector<Region> regions{Region{}};  // regions[0] is the top level
  std::vector<std::string> jit_names;
  std::vector<CustomCall> custom_calls;
  // Prepended to every site (equation_sites): a scan body's graph names its equations after the
  // scan, "LINE:COL#N/" (scan_jvp.cpp), so that a site is unique across the whole program.
  std::string site_prefix;
  // The mesh of the shard_maps and pmaps traced into this graph or the loops and branches inside
  // it: a graph with one runs once per device (interpreter/mesh_evaluation.hpp).
  std::optional<Mesh> mesh;

  ValueId add_value(Value value);
  // Appends an equation, infers its output types and creates its output values.
  const FlatEquation& add_equation(FlatEquation eqn);
  // The same with the output types given (a scan's parts, whose outputs include stacked residuals).
  const FlatEquation& add_equation(FlatEquation eqn, const std::vector<Type>& out_types);
  bool is_known(const FlatEquation& eqn) const {
    return eqn.role == EqnRole::kPrimal || eqn.role == EqnRole::kCoefficient;
  }
  // Whether a checkpoint's policy decides `eqn`: a known equation, not a scan's or cond's part
  // (their bodies are decided inside, scan_jvp.cpp and cond_jvp.cpp).
  bool policy_decides(const FlatEquation& eqn) const { return is_known(eqn) && eqn.part == ControlFlowPart::kNone; }
  // The child of region `parent` that contains region `scope`, or -1 when `scope` is `parent` itself.
  int child_of(int parent, int scope) const;
  bool within(int scope, int region) const { return scope == region || child_of(region, scope) >= 0; }
};

// Per equation of `graph`: its site "LINE:COL#N" (rk_equation_view::site) when a policy decides it
// (N counts the earlier such equations from the same program equation, as a JVP rule emits several),
// empty for the rest. The graph is built the same under every policy, so a site names the same
// equation whatever the policy: the budget solver's decisions are keyed by it. A scan body's
// equations carry their scan's site first: "12:9#0/14:20#1" is the second equation from 14:20 in
// the body of the first scan from 12:9.
REMATKIT_CORE_EXPORT std::vector<std::string> equation_sites(const FlatGraph& graph);

}  // namespace rematkit
