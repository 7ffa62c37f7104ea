// JAX's checkpoint policies (jax/_src/ad_checkpoint.py, classic remat semantics) as a plugin:
// the same predicates and argument checks, under their public names, aliases and the 0.10.2+
// class names JAX prints.
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::plugin::ArgumentError;
using rematkit::plugin::policy_table;
using Instance = rematkit::plugin::DecisionFunction;
using Names = std::set<std::string>;

void saveable(rk_decision* out, bool yes) { out->kind = yes ? RK_SAVEABLE : RK_RECOMPUTE; }

bool is_dot_without_batch_dims(const rk_equation_view* e) {
  if (rematkit::plugin::primitive_of(e) != rematkit::Prim::kDotGeneral) return false;
  const rematkit::DotDims dims = rematkit::plugin::dot_dims(e);
  return dims.lhs_batch.empty() && dims.rhs_batch.empty();
}

std::string name_param(const rk_equation_view* e) {
  const rk_value* n = rematkit::plugin::find_param(e, "name");
  return n && n->string_value ? n->string_value : "";
}

// --- arguments --------------------------------------------------------------------------------

void expect_no_args(size_t num_args) {
  if (num_args) throw ArgumentError("takes no arguments");
}

Names names_of(const rk_value& v, const std::string& what) {
  if (v.kind == RK_VALUE_STRING) return {v.string_value};
  if (v.kind != RK_VALUE_LIST) throw ArgumentError(what + " must be names given as strings, e.g. 'a'");
  Names out;
  for (size_t i = 0; i < v.num_items; ++i) {
    if (v.items[i].kind != RK_VALUE_STRING) throw ArgumentError(what + " must be names given as strings, e.g. 'a'");
    out.insert(v.items[i].string_value);
  }
  return out;
}

Names positional_names(const rk_value* args, size_t n, const std::string& what) {
  Names out;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].name) throw ArgumentError(std::string("takes names as positional strings, not ") + args[i].name + "=...");
    if (args[i].kind != RK_VALUE_STRING) throw ArgumentError(what + " must be strings, e.g. 'a'");
    out.insert(args[i].string_value);
  }
  return out;
}

// Positional or keyword arguments bound to `params` in order, as Python binds them.
std::vector<const rk_value*> bind(const rk_value* args, size_t n, const std::vector<std::string>& params,
                                  bool keyword_only) {
  std::vector<const rk_value*> bound(params.size(), nullptr);
  size_t position = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t slot = position;
    if (args[i].name) {
      auto it = std::find(params.begin(), params.end(), args[i].name);
      if (it == params.end()) throw ArgumentError(std::string("unexpected argument '") + args[i].name + "'");
      slot = static_cast<size_t>(it - params.begin());
    } else {
      if (keyword_only) throw ArgumentError("takes keyword arguments only (" + params.front() + "=..., ...)");
      if (position >= params.size()) throw ArgumentError("takes " + std::to_string(params.size()) + " arguments");
      ++position;
    }
    if (bound[slot]) throw ArgumentError("argument '" + params[slot] + "' given twice");
    bound[slot] = &args[i];
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (!bound[i]) throw ArgumentError("missing argument '" + params[i] + "'");
  return bound;
}

int32_t memory_space_of(const rk_value& v, const std::string& what) {
  const std::string s = v.kind == RK_VALUE_STRING ? v.string_value : "";
  if (s == "device") return RK_MEMORY_DEVICE;
  if (s == "pinned_host") return RK_MEMORY_PINNED_HOST;
  throw ArgumentError(what + " must be 'device' or 'pinned_host'" + (s.empty() ? std::string() : ", got '" + s + "'"));
}

std::string names_str(const Names& names) {
  std::string out = "(";
  size_t i = 0;
  for (const std::string& n : names) out += (i++ ? ", '" : "'") + n + "'";
  return out + (names.size() == 1 ? ",)" : ")");
}

// --- the policies -----------------------------------------------------------------------------

Instance dots(bool only_if_no_batch_dims) {
  if (only_if_no_batch_dims) return {[](const rk_equation_view* e, rk_decision* out) { saveable(out, is_dot_without_batch_dims(e)); }};
  return {[](const rk_equation_view* e, rk_decision* out) {
    const auto p = rematkit::plugin::primitive(e);
    saveable(out, p == "dot_general" || p == "conv_general_dilated");
  }};
}

// DotsSaveable as jax_remat3 reads it: only dot_general's remat rule consults the policy
// (jax/_src/lax/lax.py's _dot_general_remat at cec06d1); conv_general_dilated has no remat rule
// there, so a convolution is recomputed even where remat2's DotsSaveable(False) saves it.
Instance remat3_dots(bool only_if_no_batch_dims) {
  if (only_if_no_batch_dims) return dots(true);
  return {[](const rk_equation_view* e, rk_decision* out) { saveable(out, rematkit::plugin::primitive(e) == "dot_general"); }};
}

Instance offload_dots(int32_t src, int32_t dst) {
  return {[src, dst](const rk_equation_view* e, rk_decision* out) {
    if (!is_dot_without_batch_dims(e)) return;  // Recompute
    out->kind = RK_OFFLOADABLE;
    out->offload_src = src;
    out->offload_dst = dst;
  }};
}

Instance save_and_offload(const std::vector<const rk_value*>& a) {
  const Names saved = names_of(*a[0], "names_which_can_be_saved");
  const Names offloaded = names_of(*a[1], "names_which_can_be_offloaded");
  const int32_t src = memory_space_of(*a[2], "offload_src");
  const int32_t dst = memory_space_of(*a[3], "offload_dst");
  Names both;
  for (const std::string& n : saved)
    if (offloaded.count(n)) both.insert(n);
  if (!both.empty())
    throw ArgumentError("the names should be exclusive and should not intersect in names_which_can_be_saved and "
                        "names_which_can_be_offloaded; the intersection is " + names_str(both));
  return {[saved, offloaded, src, dst](const rk_equation_view* e, rk_decision* out) {
    if (rematkit::plugin::primitive(e) != "name") return;
    const std::string n = name_param(e);
    if (saved.count(n)) {
      out->kind = RK_SAVEABLE;
    } else if (offloaded.count(n)) {
      out->kind = RK_OFFLOADABLE;
      out->offload_src = src;
      out->offload_dst = dst;
    }
  }};
}

// JAX raises when a sub-policy of save_from_both_policies answers anything but a boolean.
Instance save_from_both(const rk_value* args, size_t n) {
  if (n != 2 || args[0].kind != RK_VALUE_POLICY || args[1].kind != RK_VALUE_POLICY)
    throw ArgumentError("takes two policies, e.g. save_from_both_policies(dots_saveable, nothing_saveable)");
  const rk_value a = args[0], b = args[1];
  return {[a, b](const rk_equation_view* e, rk_decision* out) {
    rk_decision da = *out, db = *out;
    rematkit::plugin::decide_nested(a, e, &da);
    rematkit::plugin::decide_nested(b, e, &db);
    if (da.kind == RK_OFFLOADABLE || db.kind == RK_OFFLOADABLE)
      throw ArgumentError("save_from_both_policies: the return value of the policies should be a boolean "
                               "(Saveable or Recompute), but one answered Offloadable for " +
                               std::string(e->primitive) + "; write a policy that combines them directly");
    saveable(out, da.kind == RK_SAVEABLE || db.kind == RK_SAVEABLE);
  }};
}

constexpr const char* kSaveAndOffloadParams = "names_which_can_be_saved";

#define RK_POLICY(var, name, signature, factory) const rk_policy_api var = policy_table<factory>(name, signature)

Instance everything(const rk_value*, size_t n) { expect_no_args(n); return {[](const rk_equation_view*, rk_decision* o) { saveable(o, true); }}; }
Instance nothing(const rk_value*, size_t n) { expect_no_args(n); return {[](const rk_equation_view*, rk_decision* o) { saveable(o, false); }}; }
Instance dots_any(const rk_value*, size_t n) { expect_no_args(n); return dots(false); }
Instance dots_no_batch(const rk_value*, size_t n) { expect_no_args(n); return dots(true); }
// DotsSaveable's one field, as remat2's and remat3's readings both take it.
bool only_if_no_batch_dims(const rk_value* args, size_t n) {
  const auto a = bind(args, n, {"only_if_no_batch_dims"}, false);
  if (a[0]->kind != RK_VALUE_BOOL) throw ArgumentError("only_if_no_batch_dims must be True or False");
  return a[0]->int_value != 0;
}
Instance dots_class(const rk_value* args, size_t n) { return dots(only_if_no_batch_dims(args, n)); }
Instance remat3_dots_class(const rk_value* args, size_t n) { return remat3_dots(only_if_no_batch_dims(args, n)); }
Instance offload(const rk_value* args, size_t n) {
  const auto a = bind(args, n, {"offload_src", "offload_dst"}, false);
  return offload_dots(memory_space_of(*a[0], "offload_src"), memory_space_of(*a[1], "offload_dst"));
}
Instance only_names(const rk_value* args, size_t n) {
  const Names names = positional_names(args, n, "save_only_these_names' names");
  return {[names](const rk_equation_view* e, rk_decision* o) {
    saveable(o, rematkit::plugin::primitive(e) == "name" && names.count(name_param(e)));
  }};
}
Instance only_names_class(const rk_value* args, size_t n) {
  const Names names = names_of(*bind(args, n, {"saveable_names"}, false)[0], "saveable_names");
  return {[names](const rk_equation_view* e, rk_decision* o) {
    saveable(o, rematkit::plugin::primitive(e) == "name" && names.count(name_param(e)));
  }};
}
Instance any_names_but(const Names& names) {
  return {[names](const rk_equation_view* e, rk_decision* o) {
    saveable(o, rematkit::plugin::primitive(e) == "name" && !names.count(name_param(e)));
  }};
}
Instance any_names_but_fn(const rk_value* args, size_t n) {
  return any_names_but(positional_names(args, n, "save_any_names_but_these' names"));
}
Instance any_names_but_class(const rk_value* args, size_t n) {
  return any_names_but(names_of(*bind(args, n, {"names"}, false)[0], "names"));
}
// Classic semantics (JAX 0.4.2 to 0.10.1): anything may be saved except the named values listed.
Instance anything_except(const rk_value* args, size_t n) {
  const Names names = positional_names(args, n, "save_anything_except_these_names' names");
  return {[names](const rk_equation_view* e, rk_decision* o) {
    saveable(o, rematkit::plugin::primitive(e) != "name" || !names.count(name_param(e)));
  }};
}
const std::vector<std::string> kOffloadParams = {kSaveAndOffloadParams, "names_which_can_be_offloaded", "offload_src",
                                                 "offload_dst"};
Instance save_and_offload_fn(const rk_value* args, size_t n) { return save_and_offload(bind(args, n, kOffloadParams, true)); }
Instance save_and_offload_class(const rk_value* args, size_t n) { return save_and_offload(bind(args, n, kOffloadParams, false)); }

RK_POLICY(kEverything, "everything_saveable", "everything_saveable", everything);
RK_POLICY(kNothing, "nothing_saveable", "nothing_saveable", nothing);
RK_POLICY(kDots, "dots_saveable", "dots_saveable", dots_any);
RK_POLICY(kCheckpointDots, "checkpoint_dots", "checkpoint_dots (= dots_saveable)", dots_any);
RK_POLICY(kDotsNoBatch, "dots_with_no_batch_dims_saveable", "dots_with_no_batch_dims_saveable", dots_no_batch);
RK_POLICY(kCheckpointDotsNoBatch, "checkpoint_dots_with_no_batch_dims",
          "checkpoint_dots_with_no_batch_dims (= dots_with_no_batch_dims_saveable)", dots_no_batch);
RK_POLICY(kDotNoBatchOld, "dot_with_no_batch_dims_saveable", "(JAX 0.4.6-0.5 name of dots_with_no_batch_dims_saveable)", dots_no_batch);
RK_POLICY(kDotNoBatchOlder, "dot_with_no_batch_dims", "(JAX <= 0.4.1 name of dots_with_no_batch_dims_saveable)", dots_no_batch);
RK_POLICY(kDotsClass, "DotsSaveable", "DotsSaveable(only_if_no_batch_dims=BOOL)", dots_class);
RK_POLICY(kRemat3DotsClass, "remat3_DotsSaveable",
          "remat3_DotsSaveable(only_if_no_batch_dims=BOOL) (DotsSaveable under jax_remat3: dot_general only)",
          remat3_dots_class);
RK_POLICY(kOffload, "offload_dot_with_no_batch_dims", "offload_dot_with_no_batch_dims('device', 'pinned_host')", offload);
RK_POLICY(kOffloadClass, "OffloadDotWithNoBatchDims", "OffloadDotWithNoBatchDims(offload_src=..., offload_dst=...)", offload);
RK_POLICY(kOnlyNames, "save_only_these_names", "save_only_these_names('a', ...)", only_names);
RK_POLICY(kOnlyNamesClass, "SaveOnlyTheseNames", "SaveOnlyTheseNames(saveable_names=frozenset({...}))", only_names_class);
RK_POLICY(kAnyNamesBut, "save_any_names_but_these", "save_any_names_but_these('a', ...)", any_names_but_fn);
RK_POLICY(kAnyNamesButClass, "SaveAnyNamesButThese", "SaveAnyNamesButThese(names=frozenset({...}))", any_names_but_class);
RK_POLICY(kAnythingExcept, "save_anything_except_these_names", "save_anything_except_these_names('a', ...)", anything_except);
RK_POLICY(kSaveAndOffload, "save_and_offload_only_these_names",
          "save_and_offload_only_these_names(names_which_can_be_saved=(...), names_which_can_be_offloaded=(...), "
          "offload_src='device', offload_dst='pinned_host')", save_and_offload_fn);
RK_POLICY(kSaveAndOffloadClass, "SaveAndOffloadOnlyTheseNames", "SaveAndOffloadOnlyTheseNames(...)", save_and_offload_class);
RK_POLICY(kBoth, "save_from_both_policies", "save_from_both_policies(p1, p2)", save_from_both);

const rk_policy_api* const kPolicies[] = {
    &kEverything, &kNothing, &kDots, &kCheckpointDots, &kDotsNoBatch, &kCheckpointDotsNoBatch, &kDotNoBatchOld,
    &kDotNoBatchOlder, &kDotsClass, &kRemat3DotsClass, &kOffload, &kOffloadClass, &kOnlyNames, &kOnlyNamesClass, &kAnyNamesBut,
    &kAnyNamesButClass, &kAnythingExcept, &kSaveAndOffload, &kSaveAndOffloadClass, &kBoth};

const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "jax-policies", "1.0.0",
                            &rematkit::plugin::remember_host, sizeof(kPolicies) / sizeof(kPolicies[0]), kPolicies,
                            0, nullptr};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
