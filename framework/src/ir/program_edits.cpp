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

}  // namespace rematkit
