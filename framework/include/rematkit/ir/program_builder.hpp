// Building a program from C++: arguments, equations (types inferred and checked as they are
// added), calls with sub-programs, outputs.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

class REMATKIT_CORE_EXPORT ProgramBuilder {
 public:
  ProgramBuilder() = default;

  Atom argument(const std::string& name, const Type& type);
  Atom constant(const std::string& name, const Type& type);
  static Atom literal(double value, DType dtype = DType::kF32);

  // Adds `prim` applied to `inputs`; returns its outputs. A bad-input Error if the types do not fit.
  std::vector<Atom> emit(Prim prim, std::vector<Atom> inputs, Params params = {});
  Atom emit1(Prim prim, std::vector<Atom> inputs, Params params = {}) { return emit(prim, std::move(inputs), std::move(params)).at(0); }
  // A checkpoint or pjit over `body`, whose binders take `inputs`; `params` adds e.g. the policy.
  std::vector<Atom> call(Prim prim, Program body, std::vector<Atom> inputs, Params params = {});

  const Type& type_of(const Atom& atom) const { return program_.type_of(atom); }
  // Reorders the arguments (a permutation of their current positions), e.g. into JAX's flatten order.
  void reorder_arguments(const std::vector<size_t>& order);
  Program finish(std::vector<Atom> outputs);

 private:
  int new_var(const std::string& name, const Type& type);
  std::string fresh_name();

  Program program_;
  std::set<std::string> names_;
  size_t next_name_ = 0;
};

}  // namespace rematkit
