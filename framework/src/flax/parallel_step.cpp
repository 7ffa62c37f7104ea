#include "rematkit/flax/parallel_step.hpp"

#include <memory>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/printer.hpp"

namespace rematkit {
namespace {

ParamValue value(const std::string& text) { return parse_param_value(text, "parallel_step"); }

// Replaces every read of var `from` by `to` in eqns [first, end) and the outputs.
void rename_reads(Program& p, int from, int to, size_t first) {
  for (size_t e = first; e < p.eqns.size(); ++e)
    for (Atom& a : p.eqns[e].inputs)
      if (a.var == from) a.var = to;
  for (Atom& a : p.outvars)
    if (a.var == from) a.var = to;
}

// At `at` in `p`: gathered = all_gather over fsdp of `block`, named gathered_<param>; the reads of
// `block` after it read the name's output instead. Returns how many equations it added.
size_t insert_gather(Program& p, size_t at, int block, const Type& whole, const std::string& param, int64_t fsdp) {
  const int gathered = static_cast<int>(p.vars.size());
  p.vars.push_back(Var{param + "_gathered", whole, ""});
  const int named = static_cast<int>(p.vars.size());
  p.vars.push_back(Var{param + "_named", whole, ""});
  rename_reads(p, block, named, at);
  Equation gather;
  gather.prim = Prim::kAllGather;
  gather.params.set("all_gather_dimension", ParamValue::of_int(0));
  gather.params.set("axis_index_groups", value("None"));
  gather.params.set("axis_name", value("('fsdp',)"));
  gather.params.set("axis_size", ParamValue::of_int(fsdp));
  gather.params.set("tiled", ParamValue::of_bool(true));
  gather.inputs = {Atom::of_var(block)};
  gather.outputs = {gathered};
  Equation name;
  name.prim = Prim::kName;
  name.params.set("name", ParamValue::of_ident("gathered_" + param));
  name.inputs = {Atom::of_var(gathered)};
  name.outputs = {named};
  p.eqns.insert(p.eqns.begin() + static_cast<std::ptrdiff_t>(at), {gather, name});
  return 2;
}

bool reads(const Equation& eqn, int var) {
  for (const Atom& a : eqn.inputs)
    if (a.var == var) return true;
  return false;
}

// The param `var` of the body split over fsdp: each checkpoint that takes it gathers it first thing
// in its body; the body's own reads gather it before the first.
void gather_param(Program& body, int var, const Type& whole, int64_t fsdp, const std::string& model) {
  const std::string param = body.vars[static_cast<size_t>(var)].name;  // a copy: gathers add vars
  bool gathered_here = false;
  for (size_t e = 0; e < body.eqns.size(); ++e) {
    Equation& eqn = body.eqns[e];
    if (!reads(eqn, var)) continue;
    if (eqn.prim == Prim::kCheckpoint) {
      Program inner = *eqn.body();
      for (size_t k = 0; k < eqn.inputs.size(); ++k) {
        if (eqn.inputs[k].var != var) continue;
        const int inner_var = inner.invars.at(k);
        for (const Equation& i : inner.eqns)
          if (!sub_programs(i.params).empty() && reads(i, inner_var))
            fail(model + ": parallel: {fsdp} gathers a param inside its layer's checkpoint, whose body here nests "
                         "another (layers scanned): use loop: none");
        inner.vars[static_cast<size_t>(inner_var)].type.shape[0] /= fsdp;
        insert_gather(inner, 0, inner_var, whole, param, fsdp);
      }
      ParamValue jaxpr = *eqn.params.find("jaxpr");
      jaxpr.program = std::make_shared<const Program>(std::move(inner));
      eqn.params.set("jaxpr", std::move(jaxpr));
      continue;
    }
    if (!sub_programs(eqn.params).empty())
      fail(model + ": parallel: {fsdp} needs the layers unrolled (loop: none), not in a " + std::string(prim_name(eqn.prim)));
    if (!gathered_here) {
      e += insert_gather(body, e, var, whole, param, fsdp) - 1;
      gathered_here = true;
    }
  }
}

std::string axes_text(const ParallelConfig& p) { return "Mesh('data': " + std::to_string(p.data) + ", 'fsdp': " + std::to_string(p.fsdp) + ")"; }

}  // namespace

Program parallel_step(const Program& per_device, const Program& whole, const ParallelConfig& p, const std::string& model) {
  if (p.data < 1 || p.fsdp < 1) fail(model + ": parallel: data and fsdp must be at least 1");
  if (per_device.invars.size() != whole.invars.size() || !per_device.constvars.empty() || per_device.outvars.size() != 1)
    internal_error(model + ": the per-device and the whole step differ in their arguments");
  Program body = per_device;
  std::string in_names;
  for (size_t i = 0; i < whole.invars.size(); ++i) {
    const Type& w = whole.vars[static_cast<size_t>(whole.invars[i])].type;
    Var& d = body.vars[static_cast<size_t>(body.invars[i])];
    std::string names = "{}";
    if (w == d.type) {  // a param, the same in both
      if (p.fsdp > 1 && w.rank() > 0 && w.shape[0] % p.fsdp == 0) {
        d.type.shape[0] /= p.fsdp;
        gather_param(body, body.invars[i], w, p.fsdp, model);
        names = "{0: ('fsdp',)}";
      }
    } else if (w.rank() > 0 && d.type.rank() == w.rank() && w.shape[0] == d.type.shape[0] * p.devices()) {
      names = "{0: ('data', 'fsdp')}";  // the batch's rows, device after device
    } else {
      internal_error(model + ": argument " + d.name + " is " + d.type.str() + " on a device but " + w.str() + " whole");
    }
    in_names += (i ? ", " : "") + names;
  }
  // The loss: each device's mean over its rows, averaged over the devices.
  const Type loss = body.type_of(body.outvars[0]);
  const int summed = static_cast<int>(body.vars.size());
  body.vars.push_back(Var{"loss_summed", loss, ""});
  const int mean = static_cast<int>(body.vars.size());
  body.vars.push_back(Var{"loss_mean", loss, ""});
  Equation psum;
  psum.prim = Prim::kPsum;
  psum.params.set("axes", value("('data', 'fsdp')"));
  psum.params.set("axis_index_groups", value("None"));
  psum.inputs = {body.outvars[0]};
  psum.outputs = {summed};
  Equation divide;
  divide.prim = Prim::kDiv;
  divide.inputs = {Atom::of_var(summed), Atom::of_literal(static_cast<double>(p.devices()), Type{loss.dtype, {}})};
  divide.outputs = {mean};
  body.eqns.push_back(psum);
  body.eqns.push_back(divide);
  body.outvars = {Atom::of_var(mean)};

  // The step: the whole arguments, one shard_map (JAX 0.4's printed form), printed and read back so
  // that every equation has a line to point at.
  std::string text = "{ lambda ; ";
  std::string operands;
  for (size_t i = 0; i < whole.invars.size(); ++i) {
    const Var& v = whole.vars[static_cast<size_t>(whole.invars[i])];
    text += (i ? " " : "") + v.name + ":" + v.type.str();
    operands += " " + v.name;
  }
  text += ". let\n    loss:" + loss.str() + " = shard_map[auto=frozenset() check_rep=False in_names=(" + in_names +
          (whole.invars.size() == 1 ? "," : "") + ") jaxpr=" + print_program(body, 4) + " mesh=" + axes_text(p) +
          " out_names=({},) rewrite=False]" + operands + "\n  in (loss,) }\n";
  return parse_program(text, "<" + model + " on " + axes_text(p) + ">");
}

}  // namespace rematkit
