// JAX's checkpoint policies (jax/_src/ad_checkpoint.py, classic remat semantics), with the same
// predicates and argument checks, under their public names, aliases and 0.10.2+ class names.
#include <algorithm>
#include <set>

#include "rematkit/policy.hpp"

namespace rematkit {
namespace {

using Kind = ParamValue::Kind;
using Names = std::set<std::string>;

std::string names_str(const Names& names) {
  std::string out = "(";
  size_t i = 0;
  for (const std::string& n : names) out += (i++ ? ", '" : "'") + n + "'";
  return out + (names.size() == 1 ? ",)" : ")");
}

bool has_batch_dims(const EquationView& e) {
  const ParamValue* dn = e.params.find("dimension_numbers");
  if (!dn) return false;
  DotDims d = param_dot_dims(e.params, {});
  return !d.lhs_batch.empty() || !d.rhs_batch.empty();
}

std::string name_param(const EquationView& e) {
  const ParamValue* n = e.params.find("name");
  return n ? n->text : std::string();
}

// A policy given by a predicate and the spec that recreates it.
class FunctionPolicy final : public Policy {
 public:
  FunctionPolicy(std::string spec, std::function<PolicyAnswer(const EquationView&)> fn)
      : spec_(std::move(spec)), fn_(std::move(fn)) {}
  PolicyAnswer decide(const EquationView& e) const override { return fn_(e); }
  std::string spec() const override { return spec_; }

 private:
  std::string spec_;
  std::function<PolicyAnswer(const EquationView&)> fn_;
};

PolicyPtr make_policy(std::string spec, std::function<PolicyAnswer(const EquationView&)> fn) {
  return std::make_shared<FunctionPolicy>(std::move(spec), std::move(fn));
}

// --- argument helpers -----------------------------------------------------------------------

void expect_no_args(const std::vector<ParamValue>& args) {
  if (!args.empty()) fail("takes no arguments");
}

// Names given as strings, or a frozenset/set/tuple/list of strings (as JAX's reprs print them).
Names names_of(const ParamValue& v, const std::string& what) {
  Names out;
  if (v.kind == Kind::kString) return {v.text};
  const ParamValue* seq = &v;
  if (v.kind == Kind::kCall && (v.text == "frozenset" || v.text == "set")) {
    if (v.items.empty()) return out;
    seq = &v.items.at(0);
  }
  if (!seq->is_sequence())
    fail(what + " must be names given as strings, e.g. 'a', got " + v.str());
  for (const ParamValue& item : seq->items) {
    if (item.kind != Kind::kString) fail(what + " must be names given as strings, e.g. 'a', got " + item.str());
    out.insert(item.text);
  }
  return out;
}

// save_only_these_names('a', 'b'): every positional argument is a name.
Names varargs_names(const std::vector<ParamValue>& args, const std::string& what) {
  Names out;
  for (const ParamValue& a : args) {
    if (a.kind == Kind::kKeyword) fail("takes names as positional strings, not " + a.text + "=...");
    if (a.kind != Kind::kString) fail(what + " must be strings, e.g. 'a', got " + a.str());
    out.insert(a.text);
  }
  return out;
}

// Keyword or positional arguments matched to `params` in order, as Python binds them.
std::map<std::string, ParamValue> bind_args(const std::vector<ParamValue>& args, const std::vector<std::string>& params,
                                            bool keyword_only) {
  std::map<std::string, ParamValue> out;
  size_t position = 0;
  for (const ParamValue& a : args) {
    if (a.kind == Kind::kKeyword) {
      if (std::find(params.begin(), params.end(), a.text) == params.end())
        fail("unexpected argument '" + a.text + "'");
      if (out.count(a.text)) fail("argument '" + a.text + "' given twice");
      out[a.text] = a.items.at(0);
    } else {
      if (keyword_only) fail("takes keyword arguments only (" + params.front() + "=..., ...)");
      if (position >= params.size()) fail("takes " + std::to_string(params.size()) + " arguments");
      out[params[position++]] = a;
    }
  }
  for (const std::string& p : params)
    if (!out.count(p)) fail("missing argument '" + p + "'");
  return out;
}

MemorySpace memory_space_of(const ParamValue& v, const std::string& what) {
  if (v.kind != Kind::kString && v.kind != Kind::kIdent) fail(what + " must be a memory kind string, got " + v.str());
  if (v.text == "device") return MemorySpace::kDevice;
  if (v.text == "pinned_host") return MemorySpace::kPinnedHost;
  fail(what + " must be 'device' or 'pinned_host', got '" + v.text + "'");
}

bool bool_of(const ParamValue& v, const std::string& what) {
  if (v.kind != Kind::kBool) fail(what + " must be True or False, got " + v.str());
  return v.boolean;
}

std::string space_arg(MemorySpace s) { return "'" + std::string(memory_space_name(s)) + "'"; }

// --- the policies ---------------------------------------------------------------------------

PolicyPtr dots_saveable(bool only_if_no_batch_dims) {
  if (only_if_no_batch_dims)
    return make_policy("dots_with_no_batch_dims_saveable", [](const EquationView& e) {
      return PolicyAnswer::saveable(e.primitive == "dot_general" && !has_batch_dims(e));
    });
  return make_policy("dots_saveable", [](const EquationView& e) {
    return PolicyAnswer::saveable(e.primitive == "dot_general" || e.primitive == "conv_general_dilated");
  });
}

PolicyPtr offload_dots(MemorySpace src, MemorySpace dst) {
  return make_policy("offload_dot_with_no_batch_dims(" + space_arg(src) + ", " + space_arg(dst) + ")",
                     [src, dst](const EquationView& e) {
                       if (e.primitive == "dot_general" && !has_batch_dims(e))
                         return PolicyAnswer{Decision::kOffloadable, src, dst};
                       return PolicyAnswer{Decision::kRecompute};
                     });
}

PolicyPtr save_only_these_names(Names names) {
  return make_policy("save_only_these_names" + names_str(names), [names](const EquationView& e) {
    return PolicyAnswer::saveable(e.primitive == "name" && names.count(name_param(e)));
  });
}

PolicyPtr save_any_names_but_these(Names names) {
  return make_policy("save_any_names_but_these" + names_str(names), [names](const EquationView& e) {
    return PolicyAnswer::saveable(e.primitive == "name" && !names.count(name_param(e)));
  });
}

PolicyPtr save_and_offload(const std::map<std::string, ParamValue>& a) {
  Names saved = names_of(a.at("names_which_can_be_saved"), "names_which_can_be_saved");
  Names offloaded = names_of(a.at("names_which_can_be_offloaded"), "names_which_can_be_offloaded");
  MemorySpace src = memory_space_of(a.at("offload_src"), "offload_src");
  MemorySpace dst = memory_space_of(a.at("offload_dst"), "offload_dst");
  Names both;
  for (const std::string& n : saved)
    if (offloaded.count(n)) both.insert(n);
  if (!both.empty())
    fail("the names should be exclusive and should not intersect in names_which_can_be_saved and "
         "names_which_can_be_offloaded; the intersection is " + names_str(both));
  std::string spec = "save_and_offload_only_these_names(names_which_can_be_saved=" + names_str(saved) +
                     ", names_which_can_be_offloaded=" + names_str(offloaded) + ", offload_src=" + space_arg(src) +
                     ", offload_dst=" + space_arg(dst) + ")";
  return make_policy(spec, [saved, offloaded, src, dst](const EquationView& e) {
    if (e.primitive == "name" && saved.count(name_param(e))) return PolicyAnswer{Decision::kSaveable};
    if (e.primitive == "name" && offloaded.count(name_param(e))) return PolicyAnswer{Decision::kOffloadable, src, dst};
    return PolicyAnswer{Decision::kRecompute};
  });
}

PolicyPtr sub_policy(const ParamValue& v, const PolicyRegistry& registry) {
  return registry.build(v.kind == Kind::kKeyword ? v.items.at(0) : v);
}

PolicyPtr save_from_both(PolicyPtr p1, PolicyPtr p2) {
  return make_policy("save_from_both_policies(" + p1->spec() + ", " + p2->spec() + ")",
                     [p1, p2](const EquationView& e) {
                       PolicyAnswer a = p1->decide(e), b = p2->decide(e);
                       if (a.decision == Decision::kOffloadable || b.decision == Decision::kOffloadable)
                         fail("save_from_both_policies: the return value of the policies should be a boolean "
                              "(Saveable or Recompute), but " +
                              (a.decision == Decision::kOffloadable ? p1->spec() : p2->spec()) +
                              " answered Offloadable for " + std::string(e.primitive) +
                              "; write a policy that combines them directly");
                       return PolicyAnswer::saveable(a.decision == Decision::kSaveable ||
                                                     b.decision == Decision::kSaveable);
                     });
}

}  // namespace

void register_builtin_policies(PolicyRegistry& r) {
  auto constant = [](const char* name, bool saveable) {
    return [name, saveable](const std::vector<ParamValue>& args, const PolicyRegistry&) {
      expect_no_args(args);
      return make_policy(name, [saveable](const EquationView&) { return PolicyAnswer::saveable(saveable); });
    };
  };
  r.add("everything_saveable", constant("everything_saveable", true));
  r.add("nothing_saveable", constant("nothing_saveable", false));

  auto dots = [](bool no_batch) {
    return [no_batch](const std::vector<ParamValue>& args, const PolicyRegistry&) {
      expect_no_args(args);
      return dots_saveable(no_batch);
    };
  };
  // Public names, the older aliases, and the function names older JAX prints in <function ...>.
  for (const char* n : {"dots_saveable", "checkpoint_dots"}) r.add(n, dots(false));
  for (const char* n : {"dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims",
                        "dot_with_no_batch_dims_saveable", "dot_with_no_batch_dims"})
    r.add(n, dots(true));
  r.add("DotsSaveable", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return dots_saveable(bool_of(bind_args(args, {"only_if_no_batch_dims"}, false).at("only_if_no_batch_dims"),
                                 "only_if_no_batch_dims"));
  });

  auto offload = [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    auto a = bind_args(args, {"offload_src", "offload_dst"}, false);
    return offload_dots(memory_space_of(a.at("offload_src"), "offload_src"),
                        memory_space_of(a.at("offload_dst"), "offload_dst"));
  };
  r.add("offload_dot_with_no_batch_dims", offload);
  r.add("OffloadDotWithNoBatchDims", offload);

  r.add("save_only_these_names", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_only_these_names(varargs_names(args, "save_only_these_names' names"));
  });
  r.add("SaveOnlyTheseNames", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_only_these_names(names_of(bind_args(args, {"saveable_names"}, false).at("saveable_names"),
                                          "saveable_names"));
  });
  r.add("save_any_names_but_these", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_any_names_but_these(varargs_names(args, "save_any_names_but_these' names"));
  });
  r.add("SaveAnyNamesButThese", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_any_names_but_these(names_of(bind_args(args, {"names"}, false).at("names"), "names"));
  });
  // Classic semantics (JAX 0.4.2 to 0.10.1): anything may be saved except the named values listed.
  r.add("save_anything_except_these_names", [](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    Names names = varargs_names(args, "save_anything_except_these_names' names");
    return make_policy("save_anything_except_these_names" + names_str(names), [names](const EquationView& e) {
      return PolicyAnswer::saveable(e.primitive != "name" || !names.count(name_param(e)));
    });
  });

  const std::vector<std::string> offload_names = {"names_which_can_be_saved", "names_which_can_be_offloaded",
                                                  "offload_src", "offload_dst"};
  r.add("save_and_offload_only_these_names", [offload_names](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_and_offload(bind_args(args, offload_names, true));
  });
  r.add("SaveAndOffloadOnlyTheseNames", [offload_names](const std::vector<ParamValue>& args, const PolicyRegistry&) {
    return save_and_offload(bind_args(args, offload_names, false));
  });

  r.add("save_from_both_policies", [](const std::vector<ParamValue>& args, const PolicyRegistry& registry) {
    if (args.size() != 2) fail("takes two policies, e.g. save_from_both_policies(dots_saveable, nothing_saveable)");
    return save_from_both(sub_policy(args[0], registry), sub_policy(args[1], registry));
  });
}

}  // namespace rematkit
