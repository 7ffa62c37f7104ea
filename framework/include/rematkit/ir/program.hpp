// The program IR: one jaxpr with typed variables, literals, equations (primitive, params, source
// location) and closed sub-programs held in params (checkpoint, pjit).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rematkit/ir/error.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/ir/primitive.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

// A variable of a program: its name as written and its type.
struct Var {
  std::string name;  // "_" for an output nobody reads
  Type type;
  // JAX's sharding annotations as written (f32[8@x,4]{V:i}), kept as a note: `type` is the whole
  // array, unsharded, which is what rematkit computes. Empty when there are none.
  std::string sharding;
  friend bool operator==(const Var&, const Var&) = default;
};

// An equation operand or a program output: a variable (index into Program::vars) or a literal.
struct Atom {
  int var = -1;        // >= 0: a variable
  double literal = 0;  // the value when var < 0 (booleans are 0/1; a complex literal's real part)
  Type type;           // the literal's type (rank 0); unused for variables
  double literal_imag = 0;  // a complex literal's imaginary part
  bool is_literal() const { return var < 0; }
  static Atom of_var(int index) { return Atom{index, 0.0, {}, 0.0}; }
  static Atom of_literal(double value, Type type, double imag = 0) { return Atom{-1, value, std::move(type), imag}; }
  friend bool operator==(const Atom&, const Atom&) = default;
};

// One line of a program: outputs = prim[params] inputs.
struct REMATKIT_CORE_EXPORT Equation {
  Prim prim = Prim::kAdd;
  Params params;
  std::vector<Atom> inputs;
  std::vector<int> outputs;  // indices into Program::vars
  SourceLocation where;      // the primitive's name in the program file

  // The sub-program of checkpoint / pjit (nullptr for other primitives).
  const Program* body() const;
};

// Locations are where a program was read from, not what it is: equality ignores them.
REMATKIT_CORE_EXPORT bool operator==(const Equation& a, const Equation& b);

// A program in jaxpr form: { lambda constvars ; invars. let eqns in outvars }. Read one with
// parse_program/load_program (parser.hpp), build one with ProgramBuilder or ModelBuilder.
struct Program {
  std::vector<Var> vars;
  std::vector<int> constvars;  // binders before ';': values given with the inputs, never differentiated
  std::vector<int> invars;     // binders after ';': the arguments
  std::vector<Equation> eqns;
  std::vector<Atom> outvars;

  const Type& type_of(const Atom& atom) const { return atom.is_literal() ? atom.type : vars[atom.var].type; }
};

REMATKIT_CORE_EXPORT bool operator==(const Program& a, const Program& b);

}  // namespace rematkit
