#include "rematkit/autodiff/residual_report.hpp"

#include <map>

namespace rematkit {
namespace {

std::string file_line(const SourceLocation& where) {
  return (where.file.empty() ? std::string("<program>") : where.file) + ":" + std::to_string(where.line);
}

std::string role_phrase(const FlatEquation& eqn) {
  const std::string origin(prim_name(eqn.origin));
  switch (eqn.role) {
    case EqnRole::kTangent: return "the linear " + std::string(prim_name(eqn.prim)) + " of " + origin + "'s JVP";
    case EqnRole::kBackward: return "the transposed " + std::string(prim_name(eqn.prim)) + " of " + origin;
    case EqnRole::kPrimal: case EqnRole::kCoefficient: break;
  }
  return "the recomputed " + std::string(prim_name(eqn.prim)) +
         (eqn.origin != eqn.prim ? " of " + origin + "'s JVP" : std::string());
}

}  // namespace

std::string residual_reason(const Linearization& lin, const Residual& r) {
  const FlatGraph& g = lin.graph;
  const Value& v = g.values[r.value];
  const Region& reader_region = g.regions[r.region];
  if (r.region == 0 && !reader_region.policy)
    return "top level (no checkpoint): plain autodiff keeps every value its backward pass reads";
  const std::string region = "the checkpoint at " + file_line(reader_region.where) + " (policy " +
                             reader_region.policy->spec() + ")";
  if (v.origin != ValueOrigin::kEquation)
    return "an input of " + region + ": a checkpoint's inputs are saved by its caller";
  const FlatEquation& producer = g.eqns[v.producer];
  if (producer.region != r.region) return "computed outside " + region + " and passed in: saved by the caller";
  const PolicyAnswer& answer = lin.decisions[v.producer];
  std::string said = answer.decision == Decision::kOffloadable
                         ? "Offloadable(" + std::string(memory_space_name(answer.offload_src)) + " to " +
                               std::string(memory_space_name(answer.offload_dst)) + ")"
                         : "Saveable";
  // A preference is what a memory-budget solver may overturn; rematkit follows it as given.
  if (answer.strength == Strength::kPrefer) said += " (a preference)";
  return reader_region.policy->spec() + " answered " + said + " for " + std::string(prim_name(producer.prim)) + " in " +
         region;
}

std::string residual_origin(const Linearization& lin, const Residual& r) {
  const Value& v = lin.graph.values[r.value];
  switch (v.origin) {
    case ValueOrigin::kConstant: return "from a constant";
    case ValueOrigin::kArgument: return "from the argument " + v.name;
    case ValueOrigin::kLiteral: return "from a literal";
    case ValueOrigin::kEquation: {
      const FlatEquation& p = lin.graph.eqns[v.producer];
      std::string what;
      if (p.prim == Prim::kName) what = "named '" + p.params.find("name")->text + "'";
      else if (p.jit >= 0) what = "output of jitted function '" + lin.graph.jit_names[p.jit] + "'";
      else if (p.custom_call >= 0) what = "output of " +
                                          std::string(prim_name(lin.graph.custom_calls[p.custom_call].prim));
      else what = "output of " + std::string(prim_name(p.prim));
      return what + " from " + file_line(p.where);
    }
    case ValueOrigin::kTangentInput: case ValueOrigin::kCotangentSeed: break;
  }
  internal_error("a tangent value was reported as a residual");
}

// A residual as one device keeps it: its value's block when placed on a mesh, in its memory space.
Type kept_type(const Linearization& lin, const Residual& r) {
  Type t = device_type(lin.graph.values[static_cast<size_t>(r.value)]);
  t.space = r.type.space;
  return t;
}

int64_t residual_bytes(const Linearization& lin) {
  int64_t bytes = 0;
  for (const Residual& r : lin.residuals) bytes += kept_type(lin, r).bytes();
  return bytes;
}

std::vector<std::string> residual_lines(const Linearization& lin) {
  std::vector<std::string> lines;
  for (const Residual& r : lin.residuals) lines.push_back(kept_type(lin, r).str() + " " + residual_origin(lin, r));
  return lines;
}

std::string format_residual_report(const Linearization& lin, bool explain) {
  std::string out;
  std::map<MemorySpace, int64_t> bytes;
  for (const Residual& r : lin.residuals) {
    const Type kept = kept_type(lin, r);
    out += kept.str() + " " + residual_origin(lin, r) + "\n";
    bytes[kept.space] += kept.bytes();
    if (!explain) continue;
    const FlatEquation& reader = lin.graph.eqns[r.first_reader];
    out += "    " + std::to_string(kept.bytes()) + " bytes in " + std::string(memory_space_name(kept.space)) +
           " memory; read by " + role_phrase(reader) + " at " + file_line(reader.where) + "\n";
    out += "    kept because: " + residual_reason(lin, r) + "\n";
  }
  if (!explain) return out;
  int64_t total = 0;
  for (const auto& [space, n] : bytes) total += n;
  out += "total: " + std::to_string(lin.residuals.size()) + " residual(s), " + std::to_string(total) + " bytes";
  for (const auto& [space, n] : bytes) out += ", " + std::string(memory_space_name(space)) + " " + std::to_string(n);
  out += "\nrecomputed in the backward pass: " + std::to_string(lin.recomputed.size()) + " equation(s)";
  for (size_t i = 0; i < lin.recomputed.size(); ++i) {
    const FlatEquation& e = lin.graph.eqns[lin.recomputed[i]];
    out += (i ? ", " : ": ") + std::string(prim_name(e.prim)) + " at " + file_line(e.where);
  }
  for (const CustomCall& call : lin.graph.custom_calls) {
    if (call.uses_jax_rule) continue;
    const std::string rule = call.rule_name.empty() ? "its rule" : "its rule " + call.rule_name;
    out += "\n" + std::string(prim_name(call.prim)) + (call.name.empty() ? "" : " '" + call.name + "'") + " at " +
           file_line(call.where) + ": differentiated through its body; " + rule +
           " is Python code the program does not carry, so what JAX keeps may differ";
  }
  return out + "\n";
}

}  // namespace rematkit
