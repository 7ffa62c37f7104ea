// A budget solution as people read it, as the solved('FILE') policy reads it, and as a JAX policy.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "rematkit/budget_solver.hpp"
#include "rematkit/analysis/memory_report.hpp"

namespace rematkit {
namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string cost_unit(const BudgetSolution& s) { return s.cost_kind == RecomputeCost::kFlops ? "FLOP" : "ns"; }

double gap_of(const BudgetSolution& s) { return s.cost > 0 ? (s.cost - s.lower_bound) / s.cost : 0.0; }

}  // namespace

const char* decision_word(Decision d) {
  switch (d) {
    case Decision::kSaveable: return "saveable";
    case Decision::kRecompute: return "recompute";
    case Decision::kOffloadable: return "offloadable";
  }
  return "?";
}

std::string format_budget_solution(const BudgetSolution& s) {
  std::string out;
  size_t read = 0;
  for (const SolvedEquation& e : s.equations) read += e.read_by_backward;
  out += "decisions: " + std::to_string(s.equations.size()) + " equation(s) inside " +
         (s.whole_program ? std::string("the program (no checkpoint: decided as a whole)") : std::string("its checkpoints")) +
         ", " + std::to_string(read) + " of them read by the backward pass\n";
  for (const SolvedEquation& e : s.equations) {
    if (!e.read_by_backward) continue;
    out += "  " + std::string(decision_word(e.decision)) + "  " + e.type + " output of " + e.primitive + " from " +
           e.where.str() + " [" + e.site + "]\n    ";
    if (e.iterations > 1) out += "in a scan body, for all " + std::to_string(e.iterations) + " iterations: ";
    switch (e.decision) {
      case Decision::kSaveable:
        out += "kept: " + human_bytes(e.bytes) + " held from the forward pass" + (e.iterations > 1 ? " (stacked)" : "") +
               "; recomputing it would cost " + number(e.cost) + " " + cost_unit(s);
        break;
      case Decision::kRecompute:
        out += "recomputed in its checkpoint's backward pass: " + number(e.cost) + " " + cost_unit(s) + ", " +
               human_bytes(e.bytes) + " not held from the forward pass";
        break;
      case Decision::kOffloadable: out += "kept in pinned host memory: " + human_bytes(e.bytes) + " off the device"; break;
    }
    out += "\n";
  }
  if (read < s.equations.size())
    out += "  (" + std::to_string(s.equations.size() - read) +
           " more the backward pass never reads, kept saveable: their answer changes nothing)\n";
  out += "peak: " + human_bytes(s.peak_bytes) + " (" + std::to_string(s.peak_bytes) + " bytes) planned, within the budget " +
         human_bytes(s.budget_bytes) + " (" + std::to_string(s.budget_bytes) + " bytes); smallest feasible peak found " +
         human_bytes(s.smallest_peak) + "; a fraction's 0 is " + human_bytes(s.fraction_zero_peak) +
         ", its 1 everything_saveable's " + human_bytes(s.everything_peak) + "\n";
  out += "recompute: " + number(s.recompute_flops) + " FLOP; residuals " + human_bytes(s.residual_bytes) + "\n";
  out += "method: " + s.method;
  if (s.proven_optimal && !s.optimal_among.empty()) {
    out += "; optimal for the memory model among " + s.optimal_among;
  } else if (!s.proven_optimal && s.cost > 0) {
    out += "; cost " + number(s.cost) + " " + cost_unit(s);
    if (s.bound_known) out += ", model bound " + number(s.lower_bound) + " (gap " + number(100 * gap_of(s)) + "%)";
    else out += ", no bound proven";
  }
  out += "\nsolved in " + number(s.seconds) + " s with " + std::to_string(s.planner_calls) + " planner call(s)\n";
  return out;
}

std::string decisions_json(const BudgetSolution& s) {
  nlohmann::json doc;
  doc["format"] = "rematkit-decisions/1";
  doc["match"] = "site";
  doc["otherwise"] = "saveable";
  doc["apply"] = s.whole_program ? "whole-program" : "checkpoints";
  doc["budget_bytes"] = s.budget_bytes;
  doc["peak_bytes"] = s.peak_bytes;
  doc["recompute_flops"] = s.recompute_flops;
  nlohmann::json list = nlohmann::json::array();
  for (const SolvedEquation& e : s.equations)
    list.push_back({{"site", e.site}, {"primitive", e.primitive}, {"where", e.where.str()},
                    {"decision", decision_word(e.decision)}, {"bytes", e.bytes}, {"read_by_backward", e.read_by_backward}});
  doc["decisions"] = std::move(list);
  return doc.dump(2) + "\n";
}

namespace {

std::string jax_policy_header(const BudgetSolution& s) {
  return "# A jax.checkpoint policy written by `rematkit solve --export-jax`: the cheapest decisions it found\n"
         "# under a budget of " + std::to_string(s.budget_bytes) + " bytes (planned peak " + std::to_string(s.peak_bytes) +
         " bytes, " + number(s.recompute_flops) + " FLOP recomputed).\n"
         "# Use: jax.checkpoint(f, policy=policy), or flax.linen.remat(Module, policy=policy).\n";
}

std::string python_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + nlohmann::json(names[i]).dump();
  return out;
}

// JAX's names policy (jax/_src/ad_checkpoint.py: save_only_these_names,
// save_and_offload_only_these_names, whose names must not intersect): a dataclass, so jax_remat3
// reads it too, where a Python function policy is never called.
std::string names_policy_python(const BudgetSolution& s, const NamesPolicy& names) {
  std::string py = jax_policy_header(s) +
                   "# The answer keeps exactly the checkpoint_name values named here and recomputes the rest, so\n"
                   "# JAX's names policy says it, with or without jax_remat3.\n\n"
                   "import jax\n\n";
  if (names.offloaded.empty())
    return py + "policy = jax.checkpoint_policies.save_only_these_names(" + python_names(names.saved) + ")\n";
  return py + "policy = jax.checkpoint_policies.save_and_offload_only_these_names(\n"
              "    names_which_can_be_saved=[" + python_names(names.saved) + "],\n"
              "    names_which_can_be_offloaded=[" + python_names(names.offloaded) + "],\n"
              "    offload_src=\"device\", offload_dst=\"pinned_host\")\n";
}

}  // namespace

std::string jax_policy_python(const BudgetSolution& s) {
  const NamesPolicy names = names_policy_of(s);
  if (names.sayable) return names_policy_python(s, names);
  std::map<std::string, bool> saved;  // by signature; the solver gave each one answer
  for (const SolvedEquation& e : s.equations) {
    if (e.decision == Decision::kOffloadable)
      fail("--export-jax: an offloading answer has a JAX-policy form only as names, and names do not say this one (" +
           names.why_not + "); solve without --offload");
    const auto [it, fresh] = saved.try_emplace(e.signature, e.decision == Decision::kSaveable);
    if (!fresh && it->second != (e.decision == Decision::kSaveable))
      fail("--export-jax needs an answer solved with one decision per JAX signature (solve with --export-jax)");
  }
  std::string py =
      jax_policy_header(s) +
      "# It decides by primitive, operand shapes and dtypes (and checkpoint_name's name), as rematkit's\n"
      "# solver did; equations it has not seen are saveable.\n"
      "# Not a names policy: " + names.why_not + ".\n"
      "# Under jax_remat3 (JAX 0.10.2 on) a Python function policy is not called: everything is recomputed.\n\n"
      "_SHORT_DTYPES = {'float32': 'f32', 'bfloat16': 'bf16', 'float16': 'f16', 'float64': 'f64', 'int32': 'i32',\n"
      "                 'int64': 'i64', 'uint32': 'u32', 'uint8': 'u8', 'int8': 'i8', 'bool': 'bool'}\n\n"
      "SAVEABLE = {\n";
  for (const auto& [signature, yes] : saved) py += "    " + nlohmann::json(signature).dump() + ": " + (yes ? "True" : "False") + ",\n";
  py +=
      "}\n\n\n"
      "def signature(prim, *avals, **params):\n"
      "    key = prim.name\n"
      "    for a in avals:\n"
      "        dtype = _SHORT_DTYPES.get(a.dtype.name, a.dtype.name)\n"
      "        key += ' %s[%s]' % (dtype, ','.join(str(d) for d in a.shape))\n"
      "    if prim.name == 'name':\n"
      "        key += ' name=%s' % params.get('name')\n"
      "    return key\n\n\n"
      "def policy(prim, *avals, **params):\n"
      "    return SAVEABLE.get(signature(prim, *avals, **params), True)\n";
  return py;
}

}  // namespace rematkit
