// Policy combinators beyond JAX's single OR: all_of, any_of, not_ and a size rule. They combine
// three-valued answers (Saveable, Offloadable, Recompute), so offload policies compose too.
#include <cstdlib>
#include <string>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::plugin::ArgumentError;
using rematkit::plugin::decide_nested;
using rematkit::plugin::policy_table;
using Instance = rematkit::plugin::DecisionFunction;

std::vector<rk_value> policies_of(const rk_value* args, size_t n, const char* what) {
  std::vector<rk_value> out;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].kind != RK_VALUE_POLICY) throw ArgumentError(std::string(what) + " takes policies as arguments");
    out.push_back(args[i]);
  }
  if (out.empty()) throw ArgumentError(std::string(what) + " needs at least one policy");
  return out;
}

// A combined answer is only a preference if one of the answers it rests on is.
int32_t weakest(int32_t a, int32_t b) { return a == RK_PREFER || b == RK_PREFER ? RK_PREFER : RK_MUST; }

// Saveable if any is; else Offloadable (the first such answer) if any is; else Recompute.
Instance any_of(const rk_value* args, size_t n) {
  const std::vector<rk_value> parts = policies_of(args, n, "any_of");
  return {[parts](const rk_equation_view* e, rk_decision* out) {
    rk_decision result = *out, offload = *out;
    bool offloadable = false, saveable = false;
    for (const rk_value& p : parts) {
      rk_decision d = *out;
      decide_nested(p, e, &d);
      if (d.kind == RK_SAVEABLE && !saveable) result = d, saveable = true;
      if (d.kind == RK_OFFLOADABLE && !offloadable) offload = d, offloadable = true;
    }
    *out = saveable ? result : offloadable ? offload : *out;
  }};
}

// Recompute if any says so; else Offloadable if any is; else Saveable.
Instance all_of(const rk_value* args, size_t n) {
  const std::vector<rk_value> parts = policies_of(args, n, "all_of");
  return {[parts](const rk_equation_view* e, rk_decision* out) {
    rk_decision result = *out;
    result.kind = RK_SAVEABLE;
    int32_t strength = RK_MUST;
    for (const rk_value& p : parts) {
      rk_decision d = *out;
      decide_nested(p, e, &d);
      strength = weakest(strength, d.strength);
      if (d.kind == RK_RECOMPUTE) {
        result = d;
        break;
      }
      if (d.kind == RK_OFFLOADABLE && result.kind == RK_SAVEABLE) result = d;
    }
    result.strength = weakest(strength, result.strength);
    *out = result;
  }};
}

// Saves what p recomputes; recomputes what p saves or offloads.
Instance not_(const rk_value* args, size_t n) {
  const std::vector<rk_value> parts = policies_of(args, n, "not_");
  if (parts.size() != 1) throw ArgumentError("not_ takes one policy");
  const rk_value p = parts[0];
  return {[p](const rk_equation_view* e, rk_decision* out) {
    decide_nested(p, e, out);
    out->kind = out->kind == RK_RECOMPUTE ? RK_SAVEABLE : RK_RECOMPUTE;
  }};
}

// p's answer for equations whose outputs take at least N bytes; Recompute for smaller ones.
Instance save_if_bytes_at_least(const rk_value* args, size_t n) {
  if (n != 2 || args[0].kind != RK_VALUE_POLICY || args[1].kind != RK_VALUE_INT || args[1].int_value < 0)
    throw ArgumentError("takes a policy and a byte count, e.g. save_if_bytes_at_least(dots_saveable, 4096)");
  const rk_value p = args[0];
  const double threshold = static_cast<double>(args[1].int_value);
  return {[p, threshold](const rk_equation_view* e, rk_decision* out) {
    if (rematkit::plugin::output_bytes(e) >= threshold) decide_nested(p, e, out);
  }};
}

const rk_policy_api kAnyOf = policy_table<any_of>("any_of", "any_of(p1, p2, ...)");
const rk_policy_api kAllOf = policy_table<all_of>("all_of", "all_of(p1, p2, ...)");
const rk_policy_api kNot = policy_table<not_>("not_", "not_(p)");
const rk_policy_api kBytes = policy_table<save_if_bytes_at_least>("save_if_bytes_at_least", "save_if_bytes_at_least(p, N)");
const rk_policy_api* const kPolicies[] = {&kAnyOf, &kAllOf, &kNot, &kBytes};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "policy-combinators", "1.0.0",
                            &rematkit::plugin::remember_host, 4, kPolicies, 0, nullptr};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
