#include "rematkit/flax/parallel_step.hpp"

#include <map>
#include <memory>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/primitive_params.hpp"
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

std::string axes_text(const ParallelConfig& p) {
  std::string text = "Mesh('data': " + std::to_string(p.data) + ", 'fsdp': " + std::to_string(p.fsdp);
  if (p.tensor > 1) text += ", 'tensor': " + std::to_string(p.tensor);
  return text + ")";
}

// ('a',) or ('a', 'b'), as Python prints a tuple of axis names.
std::string axes_tuple(const std::vector<std::string>& axes) {
  std::string text = "(";
  for (size_t k = 0; k < axes.size(); ++k) text += (k ? ", '" : "'") + axes[k] + "'";
  return text + (axes.size() == 1 ? ",)" : ")");
}

// One argument of the step, as the shard_map takes it (the whole model's, or a fused param seen in
// its parts), and which of its dims the mesh axes split.
struct Operand {
  std::string name;
  Type type;
  bool in_parts = false;
  std::map<int64_t, std::vector<std::string>> split;  // dim -> mesh axes, major first
};

// Argument `i`: its operand, the device's block of it as the body's argument, and the equations that
// give the model's equations the param they read (the parts put back together, the FSDP gathers).
Operand bind_argument(Program& body, size_t i, const Var& whole, const TensorSplit& split, const ParallelConfig& p,
                      const std::string& model) {
  const int invar = body.invars[i];
  const Type share = body.vars[static_cast<size_t>(invar)].type;  // the per-device model's
  const Type& w = whole.type;
  Operand op{whole.name, w, false, {}};
  bool param = true;
  if (split.dim >= 0) {
    const auto d = static_cast<size_t>(split.dim);
    Shape expected = w.shape;
    if (d < expected.size() && expected[d] % (split.parts * p.tensor) == 0) expected[d] /= p.tensor;
    if (d >= w.shape.size() || share.shape != expected || w.shape[d] % (split.parts * p.tensor) != 0)
      fail(model + ": " + whole.name + " is " + w.str() + ", which parallel: {tensor: " + std::to_string(p.tensor) +
           "} cannot split into the device's " + share.str());
    int64_t dim = split.dim;
    if (split.parts > 1) {  // [.., n, ..] seen as [.., parts, n / parts, ..]: each part split over 'tensor'
      op.in_parts = true;
      op.type.shape[d] /= split.parts;
      op.type.shape.insert(op.type.shape.begin() + split.dim, split.parts);
      ++dim;
    }
    op.split[dim].push_back("tensor");
  } else if (w != share) {
    if (w.rank() == 0 || share.rank() != w.rank() || w.shape[0] != share.shape[0] * p.batch_shards())
      internal_error(model + ": argument " + whole.name + " is " + share.str() + " on a device but " + w.str() + " whole");
    op.split[0] = {"data", "fsdp"};  // the batch's rows, device after device
    param = false;
  }
  Type block = op.type;
  for (const auto& [dim, axes] : op.split)
    for (const std::string& axis : axes)
      block.shape[static_cast<size_t>(dim)] /= axis == "data" ? p.data : axis == "fsdp" ? p.fsdp : p.tensor;
  const bool fsdp = param && p.fsdp > 1 && block.rank() > 0 && block.shape[0] % p.fsdp == 0;
  if (fsdp) {
    op.split[0].push_back("fsdp");
    block.shape[0] /= p.fsdp;
  }
  body.vars[static_cast<size_t>(invar)].type = block;
  int read = invar;  // what the model's equations read
  if (op.in_parts) {
    read = static_cast<int>(body.vars.size());
    Type joined = share;
    if (fsdp) joined.shape[0] /= p.fsdp;
    body.vars.push_back(Var{body.vars[static_cast<size_t>(invar)].name, joined, ""});
    body.vars[static_cast<size_t>(invar)].name += "_parts";
    rename_reads(body, invar, read, 0);
    Equation reshape;
    reshape.prim = Prim::kReshape;
    reshape.params = reshape_params(joined.shape);
    reshape.inputs = {Atom::of_var(invar)};
    reshape.outputs = {read};
    body.eqns.insert(body.eqns.begin(), reshape);
  }
  if (fsdp) gather_param(body, read, share, p.fsdp, model);
  return op;
}

}  // namespace

Program parallel_step(const Program& per_device, const Program& whole, const ParallelConfig& p, const std::string& model,
                      const std::vector<TensorSplit>& tensor_splits) {
  if (p.data < 1 || p.fsdp < 1 || p.tensor < 1) fail(model + ": parallel: data, fsdp and tensor must be at least 1");
  if (per_device.invars.size() != whole.invars.size() || !per_device.constvars.empty() || per_device.outvars.size() != 1)
    internal_error(model + ": the per-device and the whole step differ in their arguments");
  if (p.tensor > 1 && tensor_splits.size() != whole.invars.size())
    internal_error(model + ": parallel: {tensor} needs the model's tensor splits, one per argument");
  Program body = per_device;
  std::vector<Operand> operands;
  for (size_t i = 0; i < whole.invars.size(); ++i)
    operands.push_back(bind_argument(body, i, whole.vars[static_cast<size_t>(whole.invars[i])],
                                     p.tensor > 1 ? tensor_splits[i] : TensorSplit{}, p, model));
  // The loss: each device's mean over its rows, averaged over the devices with rows of their own.
  const Type loss = body.type_of(body.outvars[0]);
  const int summed = static_cast<int>(body.vars.size());
  body.vars.push_back(Var{"loss_summed", loss, ""});
  const int mean = static_cast<int>(body.vars.size());
  body.vars.push_back(Var{"loss_mean", loss, ""});
  Equation psum;
  psum.prim = Prim::kPsum;
  psum.params = psum_params({"data", "fsdp"});
  psum.inputs = {body.outvars[0]};
  psum.outputs = {summed};
  Equation divide;
  divide.prim = Prim::kDiv;
  divide.inputs = {Atom::of_var(summed), Atom::of_literal(static_cast<double>(p.batch_shards()), Type{loss.dtype, {}})};
  divide.outputs = {mean};
  body.eqns.push_back(psum);
  body.eqns.push_back(divide);
  body.outvars = {Atom::of_var(mean)};

  // The step: the arguments, one shard_map (JAX 0.4's printed form); printed and read back, so that
  // every equation has a line to point at.
  std::string text = "{ lambda ; ", in_names, names;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& op = operands[i];
    text += (i ? " " : "") + op.name + ":" + op.type.str();
    std::string split;
    for (const auto& [dim, axes] : op.split) split += (split.empty() ? "" : ", ") + std::to_string(dim) + ": " + axes_tuple(axes);
    in_names += (i ? ", {" : "{") + split + "}";
    names += " " + op.name;
  }
  text += ". let\n    loss:" + loss.str() + " = shard_map[auto=frozenset() check_rep=False in_names=(" + in_names +
          (operands.size() == 1 ? "," : "") + ") jaxpr=" + print_program(body, 4) + " mesh=" + axes_text(p) +
          " out_names=({},) rewrite=False]" + names + "\n  in (loss,) }\n";
  return parse_program(text, "<" + model + " on " + axes_text(p) + ">");
}

std::vector<Tensor> step_arguments(std::vector<Tensor> whole, const Program& step) {
  if (whole.size() != step.invars.size()) internal_error("step_arguments: the whole model's arguments are not the step's");
  for (size_t i = 0; i < whole.size(); ++i) {
    const Type& t = step.vars[static_cast<size_t>(step.invars[i])].type;
    if (t.num_elements() != whole[i].type.num_elements())
      internal_error("step_arguments: argument " + std::to_string(i) + " is " + whole[i].type.str() + ", not " + t.str());
    whole[i].type = t;
  }
  return whole;
}

}  // namespace rematkit
