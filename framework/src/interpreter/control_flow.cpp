// Forward semantics of jax/_src/lax/control_flow: scan's loop over the leading dim of its xs
// (loops.py, _scan_impl), cond's clamped branch index (conditionals.py, _cond_impl) and while's
// loop (loops.py, _while_loop_impl).
#include "control_flow.hpp"

#include <algorithm>
#include <cmath>

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/interpreter/interpreter.hpp"

namespace rematkit::interpreter {
namespace {

std::vector<Tensor> scan(const Equation& eqn, const std::vector<Tensor>& in, Arithmetic arithmetic) {
  const ScanParams s = scan_params(eqn.params, eqn.where);
  const size_t n_xs = in.size() - s.num_consts - s.num_carry;
  std::vector<Tensor> carry(in.begin() + static_cast<long>(s.num_consts),
                            in.begin() + static_cast<long>(s.num_consts + s.num_carry));
  std::vector<Tensor> ys;
  for (size_t j = s.num_carry; j < s.body->outvars.size(); ++j) {
    Type t = s.body->type_of(s.body->outvars[j]);
    t.shape.insert(t.shape.begin(), s.length);
    ys.push_back(Tensor::filled(t, 0.0));
  }
  for (int64_t step = 0; step < s.length; ++step) {
    const int64_t i = s.reverse ? s.length - 1 - step : step;
    std::vector<Tensor> args(in.begin(), in.begin() + static_cast<long>(s.num_consts));
    args.insert(args.end(), carry.begin(), carry.end());
    for (size_t k = 0; k < n_xs; ++k) args.push_back(leading_row(in[s.num_consts + s.num_carry + k], i));
    std::vector<Tensor> out = evaluate_program(*s.body, {}, args, arithmetic);
    for (size_t j = 0; j < s.num_carry; ++j) carry[j] = std::move(out[j]);
    for (size_t k = 0; k < ys.size(); ++k) set_leading_row(ys[k], i, out[s.num_carry + k]);
  }
  carry.insert(carry.end(), ys.begin(), ys.end());
  return carry;
}

std::vector<Tensor> cond(const Equation& eqn, const std::vector<Tensor>& in, Arithmetic arithmetic) {
  const auto branches = cond_branches(eqn.params, eqn.where);
  // lax.switch clamps the index into range before binding cond_p; cond_p's own impl does too.
  const double raw = in[0].data.at(0);
  const int64_t last = static_cast<int64_t>(branches.size()) - 1;
  const int64_t index = std::clamp<int64_t>(static_cast<int64_t>(raw), 0, last);
  return evaluate_program(*branches[static_cast<size_t>(index)], {}, std::vector<Tensor>(in.begin() + 1, in.end()),
                          arithmetic);
}

std::vector<Tensor> while_loop(const Equation& eqn, const std::vector<Tensor>& in, Arithmetic arithmetic) {
  const WhileParams w = while_params(eqn.params, eqn.where);
  const auto consts_end = in.begin() + static_cast<long>(w.cond_nconsts + w.body_nconsts);
  const std::vector<Tensor> cond_consts(in.begin(), in.begin() + static_cast<long>(w.cond_nconsts));
  const std::vector<Tensor> body_consts(in.begin() + static_cast<long>(w.cond_nconsts), consts_end);
  std::vector<Tensor> carry(consts_end, in.end());
  auto with = [](std::vector<Tensor> consts, const std::vector<Tensor>& values) {
    consts.insert(consts.end(), values.begin(), values.end());
    return consts;
  };
  while (evaluate_program(*w.cond, {}, with(cond_consts, carry), arithmetic).at(0).data.at(0) != 0.0)
    carry = evaluate_program(*w.body, {}, with(body_consts, carry), arithmetic);
  return carry;
}

}  // namespace

std::vector<Tensor> evaluate_control_flow(const Equation& eqn, const std::vector<Tensor>& inputs, Arithmetic arithmetic) {
  if (eqn.prim == Prim::kScan) return scan(eqn, inputs, arithmetic);
  if (eqn.prim == Prim::kCond) return cond(eqn, inputs, arithmetic);
  if (eqn.prim == Prim::kWhile) return while_loop(eqn, inputs, arithmetic);
  internal_error("evaluate_control_flow: " + std::string(prim_name(eqn.prim)) + " is not control flow");
}

}  // namespace rematkit::interpreter
