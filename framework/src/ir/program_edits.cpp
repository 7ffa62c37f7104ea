#include "rematkit/program_edits.hpp"

#include <algorithm>
#include <charconv>

#include "rematkit/parser.hpp"

namespace rematkit {
namespace {

std::string argument_list(const Program& program) {
  std::string names;
  for (size_t i = 0; i < program.invars.size(); ++i)
    names += (i ? ", " : "") + program.vars[program.invars[i]].name;
  return names.empty() ? "none" : names;
}

// A copy of `program` whose checkpoints all have `policy`; counts them in `count`.
Program retargeted(const Program& program, const ParamValue& policy, int& count) {
  Program out = program;
  for (Equation& eqn : out.eqns) {
    if (!has_body(eqn.prim)) continue;
    const std::string key(body_param(eqn.prim));
    eqn.params.set(key, ParamValue::of_program(std::make_shared<const Program>(retargeted(*eqn.body(), policy, count))));
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
