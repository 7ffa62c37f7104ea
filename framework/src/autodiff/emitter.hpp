// Emitter: appends equations to a FlatGraph on behalf of one program equation (its region, jit
// scope and source location), so JVP and transpose rules read like the math they implement.
#pragma once
#include <vector>

#include "rematkit/autodiff/graph.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace rematkit::autodiff {

class Emitter {
 public:
  // The program equation whose rule is emitting (for a rule's errors).
  const SourceLocation& where() const { return where_; }
  Emitter(FlatGraph& graph, int region, int scope, int jit, Prim origin, SourceLocation where)
      : graph_(graph), region_(region), scope_(scope), jit_(jit), origin_(origin), where_(std::move(where)) {}

  ValueId emit(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params = {});
  std::vector<ValueId> emit_all(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params = {});
  // A primal-only coefficient equation (known in the forward pass).
  ValueId known(Prim prim, std::vector<ValueId> inputs, Params params = {}) {
    return emit(EqnRole::kCoefficient, prim, std::move(inputs), std::move(params));
  }
  // An equation linear in the tangents.
  ValueId linear(Prim prim, std::vector<ValueId> inputs, Params params = {}) {
    return emit(linear_role_, prim, std::move(inputs), std::move(params));
  }
  // A part of a linearized scan or cond (graph.hpp's ControlFlowPart) with its output types given.
  std::vector<ValueId> emit_part(EqnRole role, ControlFlowPart part, std::shared_ptr<const ScanLinearization> scan,
                                 std::shared_ptr<const CondLinearization> cond, std::vector<ValueId> inputs,
                                 const Params& params, const std::vector<Type>& out_types);
  ValueId literal(double value, DType dtype, double imag = 0);  // imag: a complex literal's
  // full_like: `value` broadcast to the shape of `like` (lax.full_like), with the given role.
  ValueId full(double value, ValueId like, EqnRole role);
  // `x` made the shape `shape` by lax broadcasting (a no-op when it already is).
  ValueId broadcast_to(ValueId x, const Shape& shape);
  // A cotangent summed back to the shape of an operand that lax broadcast (rank 0 or size-1 dims).
  ValueId unbroadcast(ValueId ct, const Shape& shape);

  // By value: emitting grows the graph's value vector, so references into it would dangle.
  Type type(ValueId v) const { return graph_.values.at(v).type; }
  Shape shape(ValueId v) const { return graph_.values.at(v).type.shape; }
  // Transposition emits backward equations where JVP rules emit tangent ones.
  void set_linear_role(EqnRole role) { linear_role_ = role; }

 private:
  // An equation of `prim` for this emitter's program equation (its region, scope, jit and place).
  FlatEquation equation(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) const;

  FlatGraph& graph_;
  int region_;
  int scope_;
  int jit_;
  Prim origin_;
  SourceLocation where_;
  EqnRole linear_role_ = EqnRole::kTangent;
};

}  // namespace rematkit::autodiff
