// jax/_src/lax/control_flow/loops.py (_scan_abstract_eval, _scan_typecheck, _while_loop_abstract_eval)
// and conditionals.py (_cond_abstract_eval, _cond_typecheck).
#include "control_flow_types.hpp"

#include <string>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit::ir {
namespace {

bool same_type(const Type& a, const Type& b) { return a.dtype == b.dtype && a.shape == b.shape; }

// A sub-program's binders: closed-over constants are values the printed program does not carry.
std::vector<Type> binder_types(const Program& p, const char* what, const SourceLocation& where) {
  if (!p.constvars.empty())
    fail_at(where, std::string(what) + " closes over " + std::to_string(p.constvars.size()) +
                       " constant(s) the program does not print; pass them as operands");
  std::vector<Type> types;
  for (int v : p.invars) types.push_back(p.vars[v].type);
  return types;
}

std::vector<Type> result_types(const Program& p) {
  std::vector<Type> types;
  for (const Atom& a : p.outvars) types.push_back(p.type_of(a));
  return types;
}

void expect_operand(const Type& got, const Type& want, size_t index, const char* prim, const char* role,
                    const SourceLocation& where) {
  if (!same_type(got, want))
    fail_at(where, std::string(prim) + ": operand " + std::to_string(index + 1) + " (" + role + ") is " + got.str() +
                       " but its jaxpr's binder is " + want.str());
}

}  // namespace

std::vector<Type> scan_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const ScanParams s = scan_params(params, where);
  const std::vector<Type> binders = binder_types(*s.body, "scan's jaxpr", where);
  if (in.size() != binders.size())
    fail_at(where, "scan passes " + std::to_string(in.size()) + " operand(s) to a jaxpr that takes " +
                       std::to_string(binders.size()));
  if (s.num_consts + s.num_carry > in.size())
    fail_at(where, "scan: num_consts=" + std::to_string(s.num_consts) + " plus num_carry=" + std::to_string(s.num_carry) +
                       " is more than its " + std::to_string(in.size()) + " operand(s)");
  for (size_t i = 0; i < in.size(); ++i) {
    if (i < s.num_consts + s.num_carry) {
      expect_operand(in[i], binders[i], i, "scan", i < s.num_consts ? "a const" : "a carry", where);
      continue;
    }
    // An xs operand is stacked: its leading dim is the length, the body sees one slice.
    if (in[i].rank() < 1 || in[i].shape[0] != s.length)
      fail_at(where, "scan: operand " + std::to_string(i + 1) + " (an xs) is " + in[i].str() +
                         " but a scan of length " + std::to_string(s.length) + " needs a leading dim of " +
                         std::to_string(s.length));
    Type slice = in[i];
    slice.shape.erase(slice.shape.begin());
    expect_operand(slice, binders[i], i, "scan", "a slice of an xs", where);
  }
  const std::vector<Type> outs = result_types(*s.body);
  if (outs.size() < s.num_carry)
    fail_at(where, "scan's jaxpr returns " + std::to_string(outs.size()) + " value(s), fewer than its num_carry=" +
                       std::to_string(s.num_carry) + " carries");
  std::vector<Type> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (j < s.num_carry) {
      if (!same_type(outs[j], binders[s.num_consts + j]))
        fail_at(where, "scan's jaxpr returns carry " + std::to_string(j) + " as " + outs[j].str() +
                           " but takes it as " + binders[s.num_consts + j].str());
      result.push_back(outs[j]);
      continue;
    }
    Type stacked = outs[j];
    stacked.shape.insert(stacked.shape.begin(), s.length);
    result.push_back(stacked);
  }
  return result;
}

std::vector<Type> cond_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const auto branches = cond_branches(params, where);
  // The index: lax.cond converts a predicate to int32 before binding cond_p.
  if (in.empty() || in[0].rank() != 0 || !is_integer(in[0].dtype))
    fail_at(where, "cond's first operand is the branch index, an integer scalar, not " +
                       (in.empty() ? std::string("nothing") : in[0].str()));
  std::vector<Type> result;
  for (size_t b = 0; b < branches.size(); ++b) {
    const std::vector<Type> binders = binder_types(*branches[b], "a cond branch", where);
    if (binders.size() + 1 != in.size())
      fail_at(where, "cond passes " + std::to_string(in.size() - 1) + " operand(s) to branch " + std::to_string(b) +
                         ", which takes " + std::to_string(binders.size()));
    for (size_t i = 0; i < binders.size(); ++i) expect_operand(in[i + 1], binders[i], i + 1, "cond", "a branch operand", where);
    const std::vector<Type> outs = result_types(*branches[b]);
    if (b == 0) {
      result = outs;
      continue;
    }
    bool same = outs.size() == result.size();
    for (size_t j = 0; same && j < outs.size(); ++j) same = same_type(outs[j], result[j]);
    if (!same) fail_at(where, "cond's branches 0 and " + std::to_string(b) + " return different types: " +
                                  types_str(result) + " and " + types_str(outs));
  }
  return result;
}

std::vector<Type> while_result(const Params& params, const std::vector<Type>& in, const SourceLocation& where) {
  const WhileParams w = while_params(params, where);
  const std::vector<Type> cond_in = binder_types(*w.cond, "while's cond_jaxpr", where);
  const std::vector<Type> body_in = binder_types(*w.body, "while's body_jaxpr", where);
  if (w.cond_nconsts + w.body_nconsts > in.size())
    fail_at(where, "while: cond_nconsts plus body_nconsts is more than its " + std::to_string(in.size()) + " operand(s)");
  const size_t n_carry = in.size() - w.cond_nconsts - w.body_nconsts;
  if (cond_in.size() != w.cond_nconsts + n_carry || body_in.size() != w.body_nconsts + n_carry)
    fail_at(where, "while's cond_jaxpr and body_jaxpr must take their consts and the " + std::to_string(n_carry) +
                       " carried value(s)");
  std::vector<Type> carries(in.begin() + static_cast<long>(w.cond_nconsts + w.body_nconsts), in.end());
  for (size_t i = 0; i < w.cond_nconsts; ++i) expect_operand(in[i], cond_in[i], i, "while", "a cond const", where);
  for (size_t i = 0; i < w.body_nconsts; ++i)
    expect_operand(in[w.cond_nconsts + i], body_in[i], w.cond_nconsts + i, "while", "a body const", where);
  for (size_t j = 0; j < n_carry; ++j) {
    const size_t at = w.cond_nconsts + w.body_nconsts + j;
    expect_operand(in[at], cond_in[w.cond_nconsts + j], at, "while", "a carry", where);
    expect_operand(in[at], body_in[w.body_nconsts + j], at, "while", "a carry", where);
  }
  const std::vector<Type> pred = result_types(*w.cond);
  if (pred.size() != 1 || pred[0].dtype != DType::kBool || pred[0].rank() != 0)
    fail_at(where, "while's cond_jaxpr must return one bool[], not " + types_str(pred));
  const std::vector<Type> outs = result_types(*w.body);
  bool same = outs.size() == carries.size();
  for (size_t j = 0; same && j < outs.size(); ++j) same = same_type(outs[j], carries[j]);
  if (!same) fail_at(where, "while's body_jaxpr returns " + types_str(outs) + " for carries " + types_str(carries));
  return carries;
}

}  // namespace rematkit::ir
