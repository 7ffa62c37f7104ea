#include "rematkit/ir/printer.hpp"

#include <cmath>
#include <cstdio>

#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {
namespace {

// A real number as Python's repr writes it, to the digits that round-trip `dtype` (9 for f32 and
// narrower, 17 for f64): 2.0, -0.5, inf, nan.
std::string float_str(double v, DType dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, dtype == DType::kF64 ? "%.17g" : "%.9g", v);
  std::string value = buf;
  if (value.find_first_of(".e") == std::string::npos) value += ".0";
  return value;
}

// A complex literal as Python's complex repr writes it: 2j when the real part is +0, else
// (1+2j), (-0-1j); parts drop a trailing ".0" as Python does.
std::string complex_str(double re, double im, DType dtype) {
  auto part = [&](double v) {
    std::string t = float_str(v, complex_part_dtype(dtype));
    if (t.size() > 2 && t.compare(t.size() - 2, 2, ".0") == 0) t.resize(t.size() - 2);
    return t;
  };
  if (re == 0 && !std::signbit(re)) return part(im) + "j";
  const std::string imag = part(im);
  return "(" + part(re) + (imag[0] == '-' ? "" : "+") + imag + "j)";
}

std::string literal_str(const Atom& a) {
  std::string value;
  if (is_complex(a.type.dtype)) {
    value = complex_str(a.literal, a.literal_imag, a.type.dtype);
  } else if (a.type.dtype == DType::kBool) {
    value = a.literal != 0 ? "True" : "False";
  } else if (std::isnan(a.literal)) {
    value = "nan";
  } else if (std::isinf(a.literal)) {
    value = a.literal > 0 ? "inf" : "-inf";
  } else if (is_integer(a.type.dtype)) {
    value = std::to_string(static_cast<int64_t>(a.literal));
  } else {
    value = float_str(a.literal, a.type.dtype);
  }
  return value + ":" + a.type.str();
}

std::string atom_str(const Program& p, const Atom& a) { return a.is_literal() ? literal_str(a) : p.vars[a.var].name; }

std::string binder_str(const Program& p, int var) {
  const Var& v = p.vars[var];
  return v.name + ":" + (v.sharding.empty() ? v.type.str() : v.sharding);
}

std::string equation_str(const Program& p, const Equation& eqn, int indent) {
  const std::string pad(indent, ' ');
  std::string line = pad;
  for (size_t i = 0; i < eqn.outputs.size(); ++i) line += (i ? " " : "") + binder_str(p, eqn.outputs[i]);
  // No outputs, no '=' (JAX 0.4.22 on: core.py, _pp_eqn).
  line += (eqn.outputs.empty() ? "" : " = ") + std::string(prim_name(eqn.prim));
  if (!eqn.params.entries.empty()) {
    // Calls print one param a line, as JAX does, so their bodies stay readable.
    const bool multiline = eqn.body() != nullptr || is_control_flow(eqn.prim);
    line += "[";
    for (size_t i = 0; i < eqn.params.entries.size(); ++i) {
      const auto& [key, value] = eqn.params.entries[i];
      if (multiline) line += "\n" + pad + "  ";
      else if (i) line += " ";
      line += key + "=" + value.str(indent + 2);
    }
    line += multiline ? "\n" + pad + "]" : "]";
  }
  for (const Atom& a : eqn.inputs) line += " " + atom_str(p, a);
  return line;
}

}  // namespace

std::string print_program(const Program& p, int indent) {
  static thread_local int depth = 0;  // sub-programs print inside their equations' params
  const NestingGuard nesting(depth, "programs (in the printer)", p);
  const std::string pad(indent, ' ');
  std::string out = "{ lambda";
  for (int v : p.constvars) out += " " + binder_str(p, v);
  out += " ;";
  for (int v : p.invars) out += " " + binder_str(p, v);
  out += ". let\n";
  for (const Equation& eqn : p.eqns) out += equation_str(p, eqn, indent + 4) + "\n";
  out += pad + "  in (";
  for (size_t i = 0; i < p.outvars.size(); ++i) out += (i ? ", " : "") + atom_str(p, p.outvars[i]);
  if (p.outvars.size() == 1) out += ",";
  out += ") }";
  return out;
}

}  // namespace rematkit
