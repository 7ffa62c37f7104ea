// Tracing a program into the flat JVP graph: calls are inlined (a checkpoint opens a region for
// its policy unless it is nested in one, whose policy then decides; a custom derivative call uses
// JAX's rule where rematkit has it), and every primitive emits its primal equation followed by its
// JVP rule's equations.
#include <algorithm>
#include <utility>

#include "custom_jvp_rules.hpp"
#include "jvp_rules.hpp"
#include "passes.hpp"
#include "cond_jvp.hpp"
#include "scan_jvp.hpp"
#include "../policy/default_registry.hpp"
#include "rematkit/ir/nesting_limit.hpp"

namespace rematkit::autodiff {
namespace {

struct Slot {
  ValueId primal = kNoValue;
  ValueId tangent = kNoValue;  // kNoValue: symbolically zero
};

// Sub-programs open on this thread: calls recurse through trace, scan and cond bodies through
// linearize, which partial evaluation, transposition and the planner then follow as nested.
thread_local int trace_depth = 0;

// The mesh met so far by the trace on this thread (a loop's body is traced into its own graph,
// which passes what it met on to the graph around it).
thread_local std::optional<Mesh> traced_mesh;

void meet_mesh(const Mesh& mesh, const SourceLocation& where) {
  if (traced_mesh && !(*traced_mesh == mesh))
    fail_at(where, "a second mesh (" + mesh.str() + ") in a program that runs on " + traced_mesh->str() +
                       ": rematkit runs a program on one mesh");
  traced_mesh = mesh;
}


class JvpTracer {
 public:
  JvpTracer(FlatGraph& graph, const PolicyRegistry& policies) : graph_(graph), policies_(policies) {}

  // `region`: the outermost checkpoint around the program (its policy governs the forward pass);
  // `scope`: the innermost one.
  std::vector<Slot> trace(const Program& program, const std::vector<Slot>& inputs, int region, int scope, int jit) {
    const NestingGuard nesting(trace_depth, "programs (in linearize)", program);
    std::vector<Slot> env(program.vars.size());
    size_t i = 0;
    for (int v : program.constvars) env[v] = inputs.at(i++);
    for (int v : program.invars) env[v] = inputs.at(i++);
    auto slot_of = [&](const Atom& a) {
      if (!a.is_literal()) return env[a.var];
      Value lit;
      lit.type = a.type;
      lit.origin = ValueOrigin::kLiteral;
      lit.literal = a.literal;
      lit.literal_imag = a.literal_imag;
      return Slot{graph_.add_value(std::move(lit)), kNoValue};
    };
    for (const Equation& eqn : program.eqns) {
      std::vector<Slot> in;
      for (const Atom& a : eqn.inputs) in.push_back(slot_of(a));
      std::vector<Slot> out = eqn.body()                 ? trace_call(eqn, in, region, scope, jit)
                              : is_mapped_call(eqn.prim) ? trace_mapped_call(eqn, in, region, scope, jit)
                                                         : trace_primitive(eqn, in, region, scope, jit);
      for (size_t k = 0; k < eqn.outputs.size(); ++k) env[eqn.outputs[k]] = out[k];
    }
    std::vector<Slot> outs;
    for (const Atom& a : program.outvars) outs.push_back(slot_of(a));
    return outs;
  }

  int open_region(PolicyPtr policy, const SourceLocation& where, int parent) {
    graph_.regions.push_back(Region{std::move(policy), where, parent});
    return static_cast<int>(graph_.regions.size()) - 1;
  }

 private:
  std::vector<Slot> trace_call(const Equation& eqn, const std::vector<Slot>& in, int region, int scope, int jit) {
    if (is_custom_derivative_call(eqn.prim)) return trace_custom_call(eqn, in, region, scope, jit);
    if (eqn.prim == Prim::kCheckpoint) {
      const ParamValue* spec = eqn.params.find("policy");
      scope = open_region(policies_.make(spec ? *spec : ParamValue::none(), eqn.where), eqn.where, scope);
      // The outermost checkpoint's policy decides the forward pass; nested ones decide later, when
      // their enclosing checkpoint's backward pass recomputes them.
      if (region == 0) region = scope;
    } else if (jit < 0) {
      const ParamValue* name = eqn.params.find("name");
      graph_.jit_names.push_back(name ? name->text : std::string("<unnamed>"));
      jit = static_cast<int>(graph_.jit_names.size()) - 1;
    }
    return trace(*eqn.body(), in, region, scope, jit);
  }

  // shard_map and xla_pmap: each operand split into the device's block (shard_map_in; pmap's
  // mapped dim then dropped), the body traced as the device's code, each result joined from the
  // devices' blocks (shard_map_out). The graph then runs once per device; its collectives and
  // blocks find the device's place on the mesh as they run.
  std::vector<Slot> trace_mapped_call(const Equation& eqn, const std::vector<Slot>& in, int region, int scope, int jit) {
    const Mesh mesh = mapped_call_mesh(eqn);
    meet_mesh(mesh, eqn.where);
    const Program& body = *eqn.params.find(std::string(body_param(eqn.prim)))->program;
    const std::vector<MappedValue> ins = mapped_call_values(eqn, false, in.size());
    auto step = [&](Prim prim, const Slot& s, Params params) {
      Equation one;
      one.prim = prim;
      one.params = std::move(params);
      one.where = eqn.where;
      return trace_primitive(one, {s}, region, scope, jit).at(0);
    };
    std::vector<Slot> local;
    for (size_t i = 0; i < in.size(); ++i) {
      Slot s = step(Prim::kShardMapIn, in[i], mapped_value_params(ins[i], mesh, eqn.where));
      if (ins[i].squeezed >= 0) {
        Shape shape = graph_.values[s.primal].type.shape;
        shape.erase(shape.begin() + ins[i].squeezed);
        s = step(Prim::kReshape, s, reshape_params(shape));
      }
      local.push_back(s);
    }
    std::vector<Slot> out = trace(body, local, region, scope, jit);
    const std::vector<MappedValue> outs = mapped_call_values(eqn, true, out.size());
    for (size_t k = 0; k < out.size(); ++k) {
      if (outs[k].squeezed >= 0) {
        Shape shape = graph_.values[out[k].primal].type.shape;
        shape.insert(shape.begin() + outs[k].squeezed, 1);
        out[k] = step(Prim::kReshape, out[k], reshape_params(shape));
      }
      out[k] = step(Prim::kShardMapOut, out[k], mapped_value_params(outs[k], mesh, eqn.where));
    }
    return out;
  }

  // A custom_jvp_call with JAX's rule for its function runs its body primal-only and takes the
  // tangent from the rule (ad.py's process_custom_jvp_call); any other custom_jvp_call or
  // custom_vjp_call is differentiated through its body, and the graph records which was done.
  std::vector<Slot> trace_custom_call(const Equation& eqn, const std::vector<Slot>& in, int region, int scope,
                                      int jit) {
    auto text = [&](const char* key) {
      const ParamValue* v = eqn.params.find(key);
      return v ? v->text : std::string();
    };
    CustomCall call{eqn.prim, text("name"), text(eqn.prim == Prim::kCustomJvpCall ? "jvp" : "bwd"), eqn.where, false};
    std::vector<Type> operand_types;
    for (const Slot& s : in) operand_types.push_back(graph_.values[s.primal].type);
    const std::optional<CustomJvpRule> rule = eqn.prim == Prim::kCustomJvpCall
                                                  ? find_custom_jvp_rule(call.name, *eqn.body(), operand_types)
                                                  : std::nullopt;
    call.uses_jax_rule = rule.has_value();
    graph_.custom_calls.push_back(std::move(call));
    if (!rule) return trace(*eqn.body(), in, region, scope, jit);

    const int index = static_cast<int>(graph_.custom_calls.size()) - 1;
    std::vector<Slot> primal_in;
    for (const Slot& s : in) primal_in.push_back(Slot{s.primal, kNoValue});
    const size_t first = graph_.eqns.size();
    std::vector<Slot> out = trace(*eqn.body(), primal_in, region, scope, jit);
    for (size_t e = first; e < graph_.eqns.size(); ++e) {
      graph_.eqns[e].custom_call = index;
      graph_.eqns[e].jit = jit;  // the call, not a jit inside it, computed these (as JAX reports them)
    }
    std::vector<ValueId> x, y, t;
    for (const Slot& s : in) {
      x.push_back(s.primal);
      t.push_back(s.tangent);
    }
    for (const Slot& s : out) y.push_back(s.primal);
    if (std::any_of(t.begin(), t.end(), [](ValueId v) { return v != kNoValue; })) {
      Emitter em(graph_, region, scope, jit, eqn.prim, eqn.where);
      out[0].tangent = custom_jvp_tangent(em, *rule, x, y, t);
    }
    return out;
  }

  std::vector<Slot> trace_primitive(const Equation& eqn, const std::vector<Slot>& in, int region, int scope, int jit) {
    Emitter em(graph_, region, scope, jit, eqn.prim, eqn.where);
    std::vector<ValueId> x, t;
    bool any_tangent = false;
    for (const Slot& s : in) {
      x.push_back(s.primal);
      t.push_back(s.tangent);
      any_tangent |= s.tangent != kNoValue;
    }
    if (eqn.prim == Prim::kScan || eqn.prim == Prim::kCond) {
      const ScanTrace traced = eqn.prim == Prim::kScan ? trace_scan(graph_, policies_, eqn, x, t, region, scope, jit)
                                                       : trace_cond(graph_, policies_, eqn, x, t, region, scope, jit);
      std::vector<Slot> out;
      for (size_t k = 0; k < traced.primals.size(); ++k) out.push_back(Slot{traced.primals[k], traced.tangents[k]});
      return out;
    }
    if (eqn.prim == Prim::kWhile) return trace_while(em, eqn, x, t, any_tangent, region, scope, jit);
    // ad_checkpoint.py, remat_partial_eval: an IO effect is not in remat_allowed_effects.
    if (eqn.prim == Prim::kIoCallback && region != 0)
      fail_at(eqn.where, "Effects not supported in AD of `checkpoint`/`remat`: [IO] (an io_callback inside a "
                         "checkpoint, as jax/_src/ad_checkpoint.py refuses it)");
    std::vector<ValueId> y = em.emit_all(EqnRole::kPrimal, eqn.prim, x, eqn.params);
    std::vector<ValueId> ty(y.size(), kNoValue);
    bool floating_out = false;
    for (ValueId v : y) floating_out |= is_inexact(graph_.values[v].type.dtype);
    if (any_tangent && floating_out) ty = jvp_rule(em, eqn.prim, eqn.params, x, y, t);
    std::vector<Slot> out;
    for (size_t k = 0; k < y.size(); ++k) out.push_back(Slot{y[k], ty[k]});
    return out;
  }

  // loops.py: JAX linearizes a while_loop (_while_loop_jvp) but cannot transpose it
  // (_while_transpose_error). Its tangents are one linear equation that fails when transposed, so a
  // while whose tangent nothing reads is differentiated as JAX differentiates it.
  std::vector<Slot> trace_while(Emitter& em, const Equation& eqn, const std::vector<ValueId>& x,
                                const std::vector<ValueId>& t, bool any_tangent, int region, int scope, int jit) {
    const std::vector<ValueId> y = em.emit_all(EqnRole::kPrimal, eqn.prim, x, eqn.params);
    std::vector<Slot> out;
    for (ValueId v : y) out.push_back(Slot{v, kNoValue});
    if (!any_tangent) return out;
    FlatEquation linear;
    linear.prim = Prim::kWhile;
    linear.params = eqn.params;
    for (ValueId v : t)
      if (v != kNoValue) linear.inputs.push_back(v);
    linear.role = EqnRole::kTangent;
    linear.region = region;
    linear.scope = scope;
    linear.jit = jit;
    linear.origin = Prim::kWhile;
    linear.where = eqn.where;
    std::vector<Type> types;
    std::vector<size_t> floating;
    for (size_t k = 0; k < y.size(); ++k)
      if (is_inexact(graph_.values[y[k]].type.dtype)) {
        types.push_back(graph_.values[y[k]].type);
        floating.push_back(k);
      }
    if (types.empty()) return out;
    const std::vector<ValueId> tangents = graph_.add_equation(std::move(linear), types).outputs;
    for (size_t i = 0; i < floating.size(); ++i) out[floating[i]].tangent = tangents[i];
    return out;
  }

  FlatGraph& graph_;
  const PolicyRegistry& policies_;
};

}  // namespace

void trace_jvp(const Program& program, const LinearizeOptions& options, Linearization& lin) {
  const PolicyRegistry& policies = options.policies ? *options.policies : installed_default_policies();
  const PolicyPtr whole_program_policy =
      options.policy.empty() ? nullptr : policies.parse(options.policy, {options.policy_source, 0, 0});
  for (size_t a : options.differentiate)
    if (a >= program.invars.size())
      fail("cannot differentiate with respect to argument " + std::to_string(a) + ": the program has " +
           std::to_string(program.invars.size()) + " arguments");
  FlatGraph& g = lin.graph;
  g.site_prefix = options.site_prefix;
  const std::optional<Mesh> outer_mesh = std::exchange(traced_mesh, std::nullopt);
  JvpTracer tracer(g, policies);
  std::vector<Slot> inputs;
  auto binder_value = [&](int var, ValueOrigin origin, int position) {
    Value v;
    v.type = program.vars[var].type;
    v.type.space = MemorySpace::kDevice;
    v.origin = origin;
    v.binder = position;
    v.name = program.vars[var].name;
    v.sharding = program.vars[var].sharding;
    return g.add_value(std::move(v));
  };
  for (size_t i = 0; i < program.constvars.size(); ++i) {
    ValueId c = binder_value(program.constvars[i], ValueOrigin::kConstant, static_cast<int>(i));
    lin.constants.push_back(c);
    inputs.push_back(Slot{c, kNoValue});  // constants are never differentiated
  }
  for (size_t i = 0; i < program.invars.size(); ++i) {
    ValueId a = binder_value(program.invars[i], ValueOrigin::kArgument, static_cast<int>(i));
    lin.arguments.push_back(a);
    ValueId tangent = kNoValue;
    const bool wanted = !options.differentiate_nothing && (options.differentiate.empty() ||
                        std::find(options.differentiate.begin(), options.differentiate.end(), i) != options.differentiate.end());
    if (wanted && is_inexact(g.values[a].type.dtype)) {
      Value t;
      t.type = g.values[a].type;
      t.origin = ValueOrigin::kTangentInput;
      t.binder = static_cast<int>(i);
      t.is_tangent = true;
      tangent = g.add_value(std::move(t));
    }
    lin.argument_tangents.push_back(tangent);
    inputs.push_back(Slot{a, tangent});
  }
  const int region = whole_program_policy ? tracer.open_region(whole_program_policy, {}, 0) : 0;
  try {
    for (const Slot& s : tracer.trace(program, inputs, region, region, -1)) {
      lin.outputs.push_back(s.primal);
      lin.output_tangents.push_back(s.tangent);
    }
  } catch (...) {
    traced_mesh = outer_mesh;
    throw;
  }
  g.mesh = traced_mesh;
  const std::optional<Mesh> inner = std::exchange(traced_mesh, outer_mesh);
  if (inner && trace_depth > 0) meet_mesh(*inner, {});  // a loop's body: the graph around it runs on the mesh too
}

}  // namespace rematkit::autodiff
