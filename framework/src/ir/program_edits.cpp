#include "rematkit/ir/program_edits.hpp"

#include <algorithm>
#include <charconv>

#include "rematkit/ir/parser.hpp"

namespace rematkit {
namespace {

std::string argument_list(const Program& program) {
  std::string names;
  for (size_t i = 0; i < program.invars.size(); ++i)
    names += (i ? ", " : "") + program.vars[program.invars[i]].name;
  return names.empty() ? "none" : names;
}

Program retargeted(const Program& program, const ParamValue& policy, int& count);

// `value` with every sub-program in it retargeted: a call's body, a loop's body, cond's branches.
ParamValue retargeted_param(const ParamValue& value, const ParamValue& policy, int& count) {
  if (value.kind == ParamValue::Kind::kProgram && value.program)
    return ParamValue::of_program(std::make_shared<const Program>(retargeted(*value.program, policy, count)));
  if (!value.is_sequence()) return value;
  ParamValue out = value;
  for (ParamValue& item : out.items) item = retargeted_param(item, policy, count);
  return out;
}

// A copy of `program` whose checkpoints all have `policy`, inside calls and control flow too (a
// checkpoint in a scan body is how nn.scan(nn.remat(Block)) writes a model); counts them in `count`.
Program retargeted(const Program& program, const ParamValue& policy, int& count) {
  Program out = program;
  for (Equation& eqn : out.eqns) {
    for (auto& [key, value] : eqn.params.entries)
      if (key != "policy") value = retargeted_param(value, policy, count);
    if (eqn.prim == Prim::kCheckpoint) {
      eqn.params.set("policy", policy);
      ++count;
    }
  }
  return out;
}

}  // namespace

std::vector<size_t> argument_indices(const Program& program, const std::vector<std::string>& selection,
                                     const std::string& what) {
  if (selection.empty()) fail(what + " names no argument (the arguments: " + argument_list(program) + ")");
  std::vector<size_t> indices;
  for (const std::string& item : selection) {
    size_t index = program.invars.size();
    size_t number = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), number);
    if (ec == std::errc() && end == item.data() + item.size()) {
      index = number;
    } else {
      for (size_t i = 0; i < program.invars.size(); ++i)
        if (program.vars[program.invars[i]].name == item) index = i;
    }
    if (index >= program.invars.size())
      fail(what + ": '" + item + "' is not an argument of the program (the arguments: " + argument_list(program) + ")");
    const Var& var = program.vars[program.invars[index]];
    if (!is_floating(var.type.dtype))
      fail(what + ": argument '" + var.name + "' is " + var.type.str() + "; only floating arguments have gradients");
    if (std::find(indices.begin(), indices.end(), index) == indices.end()) indices.push_back(index);
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

Program retarget_checkpoint_policies(const Program& program, const std::string& spec, const std::string& what) {
  const ParamValue policy = parse_param_value(spec, what);
  int count = 0;
  Program out = retargeted(program, policy, count);
  if (count == 0)
    fail(what + ": the program has no checkpoint whose policy could be replaced (to checkpoint the whole program "
                "with a policy, give it as the policy)");
  return out;
}

Program split_arguments_over_axis(const Program& program, const std::vector<size_t>& arguments, const std::string& axis,
                                  int64_t size) {
  Program out = program;
  std::vector<Equation> constraints;
  std::vector<int> replaced(program.vars.size(), -1);
  for (size_t a : arguments) {
    const int var = program.invars.at(a);
    const Type& t = program.vars[static_cast<size_t>(var)].type;
    int dim = -1;
    for (int d = 0; d < t.rank(); ++d)
      if (t.shape[static_cast<size_t>(d)] % size == 0 && (dim < 0 || t.shape[static_cast<size_t>(d)] > t.shape[static_cast<size_t>(dim)]))
        dim = d;
    if (dim < 0) continue;
    std::string spec;
    for (int d = 0; d < t.rank(); ++d) spec += std::string(d ? ", " : "") + (d == dim ? "'" + axis + "'" : "None");
    Equation eqn;
    eqn.prim = Prim::kShardingConstraint;
    eqn.params.set("sharding", ParamValue::of_raw("NamedSharding(mesh=Mesh('" + axis + "': " + std::to_string(size) +
                                                  "), spec=PartitionSpec(" + spec + "))"));
    eqn.params.set("unconstrained_dims", ParamValue::of_raw("frozenset()"));
    eqn.inputs.push_back(Atom::of_var(var));
    out.vars.push_back(Var{program.vars[static_cast<size_t>(var)].name + "_" + axis, t, ""});
    eqn.outputs.push_back(static_cast<int>(out.vars.size()) - 1);
    replaced[static_cast<size_t>(var)] = eqn.outputs[0];
    constraints.push_back(std::move(eqn));
  }
  auto remap = [&](Atom& atom) {
    if (!atom.is_literal() && atom.var >= 0 && static_cast<size_t>(atom.var) < replaced.size() && replaced[static_cast<size_t>(atom.var)] >= 0)
      atom.var = replaced[static_cast<size_t>(atom.var)];
  };
  for (Equation& eqn : out.eqns)
    for (Atom& a : eqn.inputs) remap(a);
  for (Atom& a : out.outvars) remap(a);
  out.eqns.insert(out.eqns.begin(), constraints.begin(), constraints.end());
  return out;
}

}  // namespace rematkit
