#include "rematkit/ir/control_flow_params.hpp"

#include <string>

#include "rematkit/ir/program.hpp"

namespace rematkit {
namespace {

std::shared_ptr<const Program> program_param(const Params& params, const std::string& key, const SourceLocation& where) {
  const ParamValue* v = params.find(key);
  if (!v) fail_at(where, "missing parameter '" + key + "'");
  if (v->kind != ParamValue::Kind::kProgram || !v->program)
    fail_at(where, key + " must be a sub-program, got " + v->str());
  return v->program;
}

size_t count_param(const Params& params, const std::string& key, const SourceLocation& where) {
  const int64_t n = param_int(params, key, where);
  if (n < 0) fail_at(where, key + " must be at least 0, not " + std::to_string(n));
  return static_cast<size_t>(n);
}

// The leaves of one group of a FlatTree as JAX 0.11 prints it: None, or Right(..) of a filtered
// tree (RightsOnly(...)); a Left(..) is filtered out and takes no operand.
size_t tree_leaves(const ParamValue& v) {
  if (v.kind == ParamValue::Kind::kNone) return 1;
  if (v.kind == ParamValue::Kind::kCall && v.text == "Left") return 0;
  if (v.kind == ParamValue::Kind::kCall && v.text == "Right") return 1;
  size_t n = 0;
  for (const ParamValue& item : v.items) n += tree_leaves(item);
  return n;
}

// num_consts and num_carry from ft_in=((consts...), (carries...), (xs...)) (loops.py after JAX
// 0.11's "Use FlatTree to structure scan arguments").
void counts_from_flat_tree(const Params& params, const SourceLocation& where, ScanParams& s) {
  const ParamValue* ft = params.find("ft_in");
  if (!ft || ft->kind != ParamValue::Kind::kTuple || ft->items.size() != 3)
    fail_at(where, "scan needs num_consts and num_carry, or ft_in=((consts...), (carries...), (xs...)) as JAX 0.11 "
                   "prints it" + (ft ? ", not ft_in=" + ft->str() : std::string()));
  s.num_consts = tree_leaves(ft->items[0]);
  s.num_carry = tree_leaves(ft->items[1]);
}

void collect(const ParamValue& v, std::vector<const Program*>& out) {
  if (v.kind == ParamValue::Kind::kProgram && v.program) out.push_back(v.program.get());
  if (v.is_sequence())
    for (const ParamValue& item : v.items) collect(item, out);
}

}  // namespace

ScanParams scan_params(const Params& params, const SourceLocation& where) {
  ScanParams s;
  s.body = program_param(params, "jaxpr", where);
  s.length = param_int(params, "length", where);
  if (s.length < 0) fail_at(where, "length must be at least 0, not " + std::to_string(s.length));
  if (params.find("num_consts") && params.find("num_carry")) {
    s.num_consts = count_param(params, "num_consts", where);
    s.num_carry = count_param(params, "num_carry", where);
  } else {
    counts_from_flat_tree(params, where, s);
  }
  s.reverse = params.find("reverse") && param_bool(params, "reverse", where);
  return s;
}

WhileParams while_params(const Params& params, const SourceLocation& where) {
  WhileParams w;
  w.cond = program_param(params, "cond_jaxpr", where);
  w.body = program_param(params, "body_jaxpr", where);
  w.cond_nconsts = count_param(params, "cond_nconsts", where);
  w.body_nconsts = count_param(params, "body_nconsts", where);
  return w;
}

std::vector<std::shared_ptr<const Program>> cond_branches(const Params& params, const SourceLocation& where) {
  const ParamValue* v = params.find("branches");
  if (!v) fail_at(where, "missing parameter 'branches'");
  std::vector<std::shared_ptr<const Program>> branches;
  if (v->kind == ParamValue::Kind::kProgram) branches.push_back(v->program);
  else if (v->is_sequence())
    for (const ParamValue& item : v->items) {
      if (item.kind != ParamValue::Kind::kProgram || !item.program)
        fail_at(where, "branches must be sub-programs, got " + item.str());
      branches.push_back(item.program);
    }
  if (branches.empty()) fail_at(where, "branches must be a tuple of sub-programs, got " + v->str());
  return branches;
}

std::vector<const Program*> sub_programs(const Params& params) {
  std::vector<const Program*> out;
  for (const auto& [key, value] : params.entries) collect(value, out);
  return out;
}

Params scan_params_of(std::shared_ptr<const Program> body, int64_t length, size_t num_consts, size_t num_carry,
                      bool reverse) {
  const size_t n = body->invars.size();
  std::vector<ParamValue> linear(n, ParamValue::of_bool(false));
  Params p;
  p.set("_split_transpose", ParamValue::of_bool(false));
  p.set("jaxpr", ParamValue::of_program(std::move(body)));
  p.set("length", ParamValue::of_int(length));
  p.set("linear", ParamValue::of_tuple(std::move(linear)));
  p.set("num_carry", ParamValue::of_int(static_cast<int64_t>(num_carry)));
  p.set("num_consts", ParamValue::of_int(static_cast<int64_t>(num_consts)));
  p.set("reverse", ParamValue::of_bool(reverse));
  p.set("unroll", ParamValue::of_int(1));
  return p;
}

}  // namespace rematkit
