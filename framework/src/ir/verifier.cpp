#include "verifier.hpp"

#include <set>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace rematkit {
namespace {

void verify_call(const Program& program, const Equation& eqn) {
  const Program* body = eqn.body();
  if (!body)
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " needs a " + std::string(body_param(eqn.prim)) + "={...} parameter");
  const size_t n_in = body->constvars.size() + body->invars.size();
  if (eqn.inputs.size() != n_in)
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " passes " + std::to_string(eqn.inputs.size()) +
                           " operand(s) to a jaxpr that takes " + std::to_string(n_in));
  for (size_t i = 0; i < n_in; ++i) {
    int binder = i < body->constvars.size() ? body->constvars[i] : body->invars[i - body->constvars.size()];
    const Type& want = body->vars[binder].type;
    const Type& got = program.type_of(eqn.inputs[i]);
    if (want.dtype != got.dtype || want.shape != got.shape)
      fail_at(eqn.where, "operand " + std::to_string(i + 1) + " of " + std::string(prim_name(eqn.prim)) + " is " +
                             got.str() + " but its jaxpr's binder '" + body->vars[binder].name + "' is " + want.str());
  }
  if (eqn.outputs.size() != body->outvars.size())
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " binds " + std::to_string(eqn.outputs.size()) +
                           " output(s) but its jaxpr returns " + std::to_string(body->outvars.size()));
  for (size_t i = 0; i < eqn.outputs.size(); ++i) {
    const Type& want = body->type_of(body->outvars[i]);
    const Var& out = program.vars[eqn.outputs[i]];
    if (want.dtype != out.type.dtype || want.shape != out.type.shape)
      fail_at(eqn.where, "output '" + out.name + "' is declared " + out.type.str() + " but " +
                             std::string(prim_name(eqn.prim)) + "'s jaxpr returns " + want.str());
  }
}

// The meshes of the shard_maps and pmaps being verified, innermost last: a collective works over
// their axes (shard_map.py, parallel.py: an unbound axis name is an error).
thread_local std::vector<Mesh> enclosing_meshes;

// The programs the outermost verify_program has verified outside any mesh, where verifying a
// program cannot depend on where it is called: a shared sub-program called at many places (a
// `let f = {...}` in a jaxpr) is verified once, so verifying costs the equations written rather than
// the equations inlined (which double with each level of calls), and reports its problems once.
thread_local std::set<const Program*>* verified_outside_meshes = nullptr;

struct MeshScope {
  explicit MeshScope(Mesh mesh) { enclosing_meshes.push_back(std::move(mesh)); }
  ~MeshScope() { enclosing_meshes.pop_back(); }
  MeshScope(const MeshScope&) = delete;
  MeshScope& operator=(const MeshScope&) = delete;
};

void check_collective_axes(const Equation& eqn) {
  const std::vector<std::string> axes = collective_axes(eqn.params, eqn.where);
  const std::string name(prim_name(eqn.prim));
  if (enclosing_meshes.empty()) {
    if (eqn.prim == Prim::kShardMapIn || eqn.prim == Prim::kShardMapOut) return;
    fail_at(eqn.where, name + " over mesh axis '" + (axes.empty() ? std::string() : axes[0]) +
                           "' outside any shard_map or pmap: no mesh names the axis");
  }
  for (const std::string& a : axes)
    if (enclosing_meshes.back().index_of(a) < 0)
      fail_at(eqn.where, name + " over mesh axis '" + a + "', which the mesh (" + enclosing_meshes.back().str() +
                             ") does not have");
  const int64_t devices = axes_size(enclosing_meshes.back(), axes, eqn.where);
  if (eqn.prim == Prim::kPpermute) {  // parallel.py's _ppermute_abstract_eval: a permutation of the axis
    std::vector<bool> sources(static_cast<size_t>(devices), false), destinations(sources);
    const ParamValue* perm = eqn.params.find("perm");
    for (const ParamValue& pair : perm->is_sequence() ? perm->items : std::vector<ParamValue>{*perm}) {
      const bool ints = pair.is_sequence() && pair.items.size() == 2 && pair.items[0].kind == ParamValue::Kind::kInt &&
                        pair.items[1].kind == ParamValue::Kind::kInt;
      if (!ints || pair.items[0].integer < 0 || pair.items[0].integer >= devices || pair.items[1].integer < 0 ||
          pair.items[1].integer >= devices)
        fail_at(eqn.where, "ppermute's perm holds (source, destination) pairs of the axis's " + std::to_string(devices) +
                               " devices, found " + pair.str());
      auto once = [&](std::vector<bool>& seen, int64_t d, const char* what) {
        if (seen[static_cast<size_t>(d)]) fail_at(eqn.where, "ppermute's perm names " + std::string(what) + " " + std::to_string(d) + " twice");
        seen[static_cast<size_t>(d)] = true;
      };
      once(sources, pair.items[0].integer, "source");
      once(destinations, pair.items[1].integer, "destination");
    }
  }
  if (const ParamValue* source = eqn.params.find("source"); source && (source->integer < 0 || source->integer >= devices))
    fail_at(eqn.where, "pbroadcast's source " + std::to_string(source->integer) + " is not a device of its axis (" +
                           std::to_string(devices) + ")");
  if (const ParamValue* size = eqn.params.find("axis_size"); size && size->kind == ParamValue::Kind::kInt) {
    if (size->integer != devices)
      fail_at(eqn.where, name + "'s axis_size=" + std::to_string(size->integer) + " but its mesh axes have " +
                             std::to_string(devices) + " devices");
  }
}

// shard_map and xla_pmap: the body, typed per device, against the operands and results split and
// joined over the mesh.
void verify_mapped_call(const Program& program, const Equation& eqn, std::vector<std::string>* problems) {
  check_params(eqn.prim, eqn.params, eqn.where);
  const std::string name(prim_name(eqn.prim));
  const ParamValue* b = eqn.params.find(std::string(body_param(eqn.prim)));
  if (!b || b->kind != ParamValue::Kind::kProgram)
    fail_at(eqn.where, name + " needs a " + std::string(body_param(eqn.prim)) + "={...} parameter");
  const Program& body = *b->program;
  Mesh mesh = mapped_call_mesh(eqn);
  if (!enclosing_meshes.empty())
    fail_at(eqn.where, name + " inside a shard_map or pmap is not supported: rematkit runs one mesh level");
  {
    const MeshScope scope(mesh);
    verify_program(body, problems);
  }
  const size_t n_in = body.constvars.size() + body.invars.size();
  if (eqn.inputs.size() != n_in)
    fail_at(eqn.where, name + " passes " + std::to_string(eqn.inputs.size()) + " operand(s) to a jaxpr that takes " +
                           std::to_string(n_in));
  const std::vector<MappedValue> ins = mapped_call_values(eqn, false, n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const int binder = i < body.constvars.size() ? body.constvars[i] : body.invars[i - body.constvars.size()];
    const Type& want = body.vars[binder].type;
    const Type got = mapped_value_type(program.type_of(eqn.inputs[i]), ins[i], mesh, true, eqn.where,
                                 "operand " + std::to_string(i + 1) + " of " + name);
    if (want.dtype != got.dtype || want.shape != got.shape)
      fail_at(eqn.where, "operand " + std::to_string(i + 1) + " of " + name + " is " +
                             program.type_of(eqn.inputs[i]).str() + ", " + got.str() + " per device, but its jaxpr's binder '" +
                             body.vars[binder].name + "' is " + want.str());
  }
  if (eqn.outputs.size() != body.outvars.size())
    fail_at(eqn.where, name + " binds " + std::to_string(eqn.outputs.size()) + " output(s) but its jaxpr returns " +
                           std::to_string(body.outvars.size()));
  const std::vector<MappedValue> outs = mapped_call_values(eqn, true, eqn.outputs.size());
  for (size_t i = 0; i < eqn.outputs.size(); ++i) {
    const Var& out = program.vars[eqn.outputs[i]];
    const Type want = mapped_value_type(body.type_of(body.outvars[i]), outs[i], mesh, false, eqn.where, "result '" + out.name + "'");
    if (want.dtype != out.type.dtype || want.shape != out.type.shape)
      fail_at(eqn.where, "output '" + out.name + "' is declared " + out.type.str() + " but " + name + " joins its jaxpr's " +
                             body.type_of(body.outvars[i]).str() + " per device into " + want.str());
  }
}

// One equation's output types against what its primitive computes (a call: against its body,
// which is verified first).
void verify_equation(const Program& program, const Equation& eqn, std::vector<std::string>* problems) {
  std::vector<Type> inputs;
  for (const Atom& a : eqn.inputs) inputs.push_back(program.type_of(a));
  if (is_control_flow(eqn.prim)) {  // its sub-programs first: the type rule reads their binders
    check_params(eqn.prim, eqn.params, eqn.where);
    for (const Program* sub : sub_programs(eqn.params)) verify_program(*sub, problems);
  }
  if (is_mapped_call(eqn.prim)) return verify_mapped_call(program, eqn, problems);
  if (is_collective(eqn.prim)) {
    check_params(eqn.prim, eqn.params, eqn.where);
    check_collective_axes(eqn);
  }
  if (has_body(eqn.prim)) {
    check_params(eqn.prim, eqn.params, eqn.where);
    verify_program(*eqn.body(), problems);
    verify_call(program, eqn);
    return;
  }
  std::vector<Type> computed = infer_types(eqn.prim, eqn.params, inputs, eqn.where);
  if (computed.size() != eqn.outputs.size())
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " has " + std::to_string(computed.size()) +
                           " output(s), the equation binds " + std::to_string(eqn.outputs.size()));
  for (size_t i = 0; i < computed.size(); ++i) {
    const Var& out = program.vars[eqn.outputs[i]];
    // Memory space is a property of where a residual is kept, not of what the primitive computes.
    if (computed[i].dtype != out.type.dtype || computed[i].shape != out.type.shape)
      fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " of " + types_str(inputs) + " computes " +
                             computed[i].str() + " but '" + out.name + "' is declared " + out.type.str());
  }
}

}  // namespace

void verify_program(const Program& program, std::vector<std::string>* problems) {
  static thread_local int depth = 0;  // sub-programs are verified before the equation that holds them
  const NestingGuard nesting(depth, "programs (in the verifier)", program);
  std::set<const Program*> verified;
  struct Outermost {
    explicit Outermost(std::set<const Program*>& set) : owns(!verified_outside_meshes) {
      if (owns) verified_outside_meshes = &set;
    }
    ~Outermost() {
      if (owns) verified_outside_meshes = nullptr;
    }
    Outermost(const Outermost&) = delete;
    Outermost& operator=(const Outermost&) = delete;
    const bool owns;
  } outermost(verified);
  if (enclosing_meshes.empty() && !verified_outside_meshes->insert(&program).second) return;
  for (const Equation& eqn : program.eqns) {
    if (!problems) {
      verify_equation(program, eqn, nullptr);
      continue;
    }
    try {
      verify_equation(program, eqn, problems);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      problems->push_back(e.what());
    }
  }
}

}  // namespace rematkit
