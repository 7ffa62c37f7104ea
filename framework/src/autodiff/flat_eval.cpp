#include "flat_eval.hpp"

#include <algorithm>

#include "../interpreter/control_flow.hpp"
#include "rematkit/autodiff/cond_linearization.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit::autodiff {
namespace {

using Values = std::vector<std::optional<Tensor>>;

Tensor empty_stack(Type row, int64_t length) {
  row.shape.insert(row.shape.begin(), length);
  return Tensor::filled(row, 0.0);
}

std::vector<Tensor> scan_part(const FlatEquation& eqn, const std::vector<const Tensor*>& in, Arithmetic arithmetic) {
  const ScanLinearization& s = *eqn.scan;
  const Linearization& body = s.body;
  const FlatGraph& bg = body.graph;
  const size_t n_args = s.num_consts + s.num_carry + s.num_xs;
  auto fresh = [&] { return Values(bg.values.size()); };
  auto type_of = [&](ValueId v) { return bg.values[v].type; };
  if (eqn.part == ControlFlowPart::kForward || eqn.part == ControlFlowPart::kRecompute) {
    const bool forward = eqn.part == ControlFlowPart::kForward;
    std::vector<Tensor> carry;
    for (size_t j = 0; j < s.num_carry; ++j) carry.push_back(*in[s.num_consts + j]);
    std::vector<ValueId> stacked_values;  // forward: ys, saved; recompute: recomputed
    if (forward) {
      stacked_values.assign(body.outputs.begin() + static_cast<long>(s.num_carry), body.outputs.end());
      stacked_values.insert(stacked_values.end(), s.saved.begin(), s.saved.end());
    } else {
      stacked_values = s.recomputed;
    }
    std::vector<Tensor> stacks;
    for (ValueId v : stacked_values) stacks.push_back(empty_stack(type_of(v), s.length));
    for (int64_t step = 0; step < s.length; ++step) {
      const int64_t r = s.row_of(step);
      Values values = fresh();
      for (size_t i = 0; i < n_args; ++i) {
        if (i < s.num_consts) values[body.arguments[i]] = *in[i];
        else if (i < s.num_consts + s.num_carry) values[body.arguments[i]] = carry[i - s.num_consts];
        else values[body.arguments[i]] = leading_row(*in[i], r);
      }
      for (size_t h = 0; h < s.hoisted.size(); ++h) values[s.hoisted[h]] = *in[n_args + h];
      if (!forward)
        for (size_t k = 0; k < s.saved.size(); ++k) values[s.saved[k]] = leading_row(*in[n_args + s.hoisted.size() + k], r);
      evaluate_flat(bg, forward ? s.forward_eqns : s.recompute_eqns, values, arithmetic, "scan");
      for (size_t k = 0; k < stacked_values.size(); ++k) set_leading_row(stacks[k], r, read_value(bg, values, stacked_values[k], "scan"));
      for (size_t j = 0; j < s.num_carry; ++j) carry[j] = read_value(bg, values, body.outputs[j], "scan");
    }
    std::vector<Tensor> out;
    if (forward) out = carry;
    out.insert(out.end(), stacks.begin(), stacks.end());
    return out;
  }
  // The transpose: the other way round, the consts' cotangents summed, the carries' carried.
  const size_t n_res = s.residuals.size();
  std::vector<const Tensor*> output_ct(s.tangent_out.size(), nullptr);
  size_t next = n_res;
  for (size_t k = 0; k < s.tangent_out.size(); ++k)
    if (s.tangent_out[k]) output_ct[k] = in[next++];
  std::vector<std::optional<Tensor>> carry_ct(s.num_carry), const_ct(s.num_consts);
  for (size_t j = 0; j < s.num_carry; ++j)
    if (output_ct[j]) carry_ct[j] = *output_ct[j];
  std::vector<std::optional<Tensor>> xs_ct(s.num_xs);
  for (size_t k = 0; k < s.num_xs; ++k)
    if (s.differentiated[s.num_consts + s.num_carry + k])
      xs_ct[k] = empty_stack(type_of(body.arguments[s.num_consts + s.num_carry + k]), s.length);
  for (int64_t step = s.length - 1; step >= 0; --step) {
    const int64_t r = s.row_of(step);
    Values values = fresh();
    for (size_t k = 0; k < n_res; ++k) {
      const ScanResidual::Kind kind = s.residuals[k].kind;
      const bool whole = kind == ScanResidual::Kind::kConst || kind == ScanResidual::Kind::kHoisted;
      values[body.residuals[k].value] = whole ? *in[k] : leading_row(*in[k], r);
    }
    for (size_t k = 0; k < body.cotangent_seeds.size(); ++k) {
      if (body.cotangent_seeds[k] == kNoValue) continue;
      values[body.cotangent_seeds[k]] = k < s.num_carry ? *carry_ct[k] : leading_row(*output_ct[k], r);
    }
    evaluate_flat(bg, body.backward, values, arithmetic, "scan transpose");
    for (size_t i = 0; i < s.differentiated.size(); ++i) {
      if (!s.differentiated[i]) continue;
      const Tensor& g = read_value(bg, values, body.gradients[i], "scan transpose");
      if (i < s.num_consts) {
        if (!const_ct[i]) const_ct[i] = g;
        else
          for (auto [sum, term] : {std::pair{&const_ct[i]->data, &g.data}, std::pair{&const_ct[i]->imag, &g.imag}})
            for (size_t e = 0; e < term->size(); ++e)
              (*sum)[e] = round_to_dtype((*sum)[e] + (*term)[e], g.type.dtype, arithmetic);
      } else if (i < s.num_consts + s.num_carry) {
        carry_ct[i - s.num_consts] = g;
      } else {
        set_leading_row(*xs_ct[i - s.num_consts - s.num_carry], r, g);
      }
    }
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < s.tangent_given.size(); ++i) {
    if (!s.tangent_given[i]) continue;
    if (i < s.num_consts) out.push_back(const_ct[i] ? *const_ct[i] : Tensor::filled(type_of(body.arguments[i]), 0.0));
    else if (i < s.num_consts + s.num_carry) out.push_back(*carry_ct[i - s.num_consts]);
    else out.push_back(*xs_ct[i - s.num_consts - s.num_carry]);
  }
  return out;
}

std::vector<Tensor> cond_part(const FlatEquation& eqn, const std::vector<const Tensor*>& in, Arithmetic arithmetic) {
  const CondLinearization& c = *eqn.cond;
  const int64_t last = static_cast<int64_t>(c.branches.size()) - 1;
  const size_t b = static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(in[0]->data.at(0)), 0, last));
  const Linearization& branch = c.branches[b];
  const FlatGraph& bg = branch.graph;
  Values values(bg.values.size());
  const size_t n_out = c.tangent_out.size();
  if (eqn.part == ControlFlowPart::kForward) {
    for (size_t i = 0; i < branch.arguments.size(); ++i) values[branch.arguments[i]] = *in[1 + i];
    evaluate_flat(bg, branch.forward, values, arithmetic, "cond");
    std::vector<Tensor> out;
    for (ValueId v : branch.outputs) out.push_back(read_value(bg, values, v, "cond"));
    if (eqn.outputs.size() == n_out) return out;
    for (const Type& slot : c.slots) out.push_back(Tensor::filled(slot, 0.0));
    for (size_t r = 0; r < c.kept[b].size(); ++r) out[n_out + c.slot_of[b][r]] = read_value(bg, values, c.kept[b][r], "cond");
    return out;
  }
  for (size_t r = 0; r < c.kept[b].size(); ++r) values[c.kept[b][r]] = *in[1 + c.slot_of[b][r]];
  size_t next = 1 + c.slots.size();
  if (c.operands_kept)
    for (size_t i = 0; i < branch.arguments.size(); ++i) values[branch.arguments[i]] = *in[next++];
  evaluate_flat(bg, c.recompute_eqns[b], values, arithmetic, "cond recompute");
  for (size_t k = 0; k < n_out; ++k) {
    if (!c.tangent_out[k]) continue;
    const Tensor* ct = in[next++];
    if (branch.cotangent_seeds[k] != kNoValue) values[branch.cotangent_seeds[k]] = *ct;
  }
  evaluate_flat(bg, branch.backward, values, arithmetic, "cond transpose");
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.tangent_given.size(); ++i)
    if (c.tangent_given[i]) out.push_back(read_value(bg, values, branch.gradients[i], "cond transpose"));
  return out;
}

}  // namespace

const Tensor& read_value(const FlatGraph& g, Values& values, ValueId v, const char* pass) {
  if (!values[v]) {
    const Value& value = g.values[v];
    if (value.origin != ValueOrigin::kLiteral)
      internal_error(std::string("the ") + pass + " pass reads a value of type " + value.type.str() +
                     " that it neither computed nor was given");
    values[v] = Tensor::filled(value.type, value.literal, value.literal_imag);
  }
  return *values[v];
}

void evaluate_flat(const FlatGraph& g, const std::vector<int>& eqns, Values& values, Arithmetic arithmetic,
                   const char* pass) {
  for (int e : eqns) {
    const FlatEquation& eqn = g.eqns[e];
    std::vector<const Tensor*> in;
    for (ValueId v : eqn.inputs) in.push_back(&read_value(g, values, v, pass));
    std::vector<Tensor> out;
    if (eqn.scan) {
      out = scan_part(eqn, in, arithmetic);
    } else if (eqn.cond) {
      out = cond_part(eqn, in, arithmetic);
    } else if (is_control_flow(eqn.prim)) {
      Equation program_eqn;
      program_eqn.prim = eqn.prim;
      program_eqn.params = eqn.params;
      program_eqn.where = eqn.where;
      std::vector<Tensor> inputs;
      for (const Tensor* t : in) inputs.push_back(*t);
      out = interpreter::evaluate_control_flow(program_eqn, inputs, arithmetic);
    } else {
      std::vector<Type> out_types;
      for (ValueId v : eqn.outputs) out_types.push_back(g.values[v].type);
      out = apply_primitive(eqn.prim, eqn.params, in, out_types, arithmetic);
    }
    for (size_t i = 0; i < out.size(); ++i) values[eqn.outputs[i]] = std::move(out[i]);
  }
}

}  // namespace rematkit::autodiff
