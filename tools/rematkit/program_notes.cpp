// What a command says about a program it read as JAX printed it but computes differently from
// how it is written: sharding annotations, and remat3 policies JAX never calls.
#include "commands.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/mesh.hpp"

namespace rematkit::cli {
namespace {

// Values whose type carries a sharding outside any shard_map or pmap body (a body's values are
// already one device's); and the mapped calls, each with its mesh.
void collect_sharded(const Program& program, std::vector<std::string>& out, std::vector<std::string>& mapped) {
  for (const Var& v : program.vars)
    if (!v.sharding.empty()) out.push_back(v.name + ":" + v.sharding);
  for (const Equation& eqn : program.eqns) {
    if (is_mapped_call(eqn.prim)) {
      mapped.push_back(eqn.where.str() + ": note: " + std::string(prim_name(eqn.prim)) + " runs its body once per device of the mesh " +
                       mapped_call_mesh(eqn).str() + " (simulated in one process): the bytes of its body's values are one device's");
      continue;
    }
    for (const Program* sub : sub_programs(eqn.params)) collect_sharded(*sub, out, mapped);
  }
}

// jax_remat3 never calls a function policy but everything_saveable (jax/_src/ad_checkpoint.py
// at cec06d1: the policy is data, read only by the rules of dot_general and CheckpointName).
void collect_ignored_callables(const Program& program, std::vector<std::string>& out) {
  for (const Equation& eqn : program.eqns) {
    if (const ParamValue* f = eqn.params.find("ignored_callable_policy"))
      out.push_back(eqn.where.str() + ": note: jax_remat3 never calls a function policy (<function " + f->text +
                    ">): everything in this checkpoint is recomputed, read as nothing_saveable");
    for (const Program* sub : sub_programs(eqn.params)) collect_ignored_callables(*sub, out);
  }
}

}  // namespace

std::vector<std::string> program_notes(const Program& program, bool per_device) {
  std::vector<std::string> notes;
  collect_ignored_callables(program, notes);
  std::vector<std::string> sharded;
  collect_sharded(program, sharded, notes);
  if (!sharded.empty() && !per_device)
    notes.push_back("note: " + std::to_string(sharded.size()) + " value(s) carry JAX sharding annotations (" +
                    sharded[0] + (sharded.size() > 1 ? ", ..." : "") +
                    "); each is read and computed as the whole, unsharded array");
  return notes;
}

}  // namespace rematkit::cli
