// Checkpoint policies: JAX's `policy(prim, *avals, **params)` as a C++ interface, and the registry
// that turns a policy spec (`save_only_these_names('a')`, as programs and --policy write it) into one.
// The policies themselves come from plugins (PluginRegistry); the core keeps none of its own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

enum class Decision { kSaveable, kRecompute, kOffloadable };

// How binding an answer is: every JAX policy answers kMust; kPrefer leaves room to a memory-budget solver.
enum class Strength { kMust, kPrefer };

struct PolicyAnswer {
  Decision decision = Decision::kRecompute;
  MemorySpace offload_src = MemorySpace::kDevice;     // for kOffloadable
  MemorySpace offload_dst = MemorySpace::kPinnedHost;
  Strength strength = Strength::kMust;

  static PolicyAnswer saveable(bool yes) { return {yes ? Decision::kSaveable : Decision::kRecompute}; }
};

// What a policy sees of one primal equation of the JVP program.
struct EquationView {
  std::string_view primitive;  // JAX's name: "dot_general", "cos", "name", ...
  const Params& params;
  const std::vector<Type>& inputs;
  const std::vector<Type>& outputs;
  // Its stable name in the program, "LINE:COL#N" (rk_equation_view::site), and its FLOPs; empty and 0
  // where there are none (a loop body's equations).
  std::string_view site = {};
  double flops = 0.0;
};

class REMATKIT_CORE_EXPORT Policy {
 public:
  virtual ~Policy() = default;
  // May throw a bad-input Error (e.g. save_from_both_policies given a non-boolean sub-policy).
  virtual PolicyAnswer decide(const EquationView& eqn) const = 0;
  // Every equation decide() may be asked about in one linearization, in program order, before the
  // first decide: a policy that weighs equations against each other decides here. Default: nothing.
  virtual void survey(const std::vector<EquationView>& eqns) const { (void)eqns; }
  // The spec that builds this policy, e.g. "save_only_these_names('a')".
  virtual std::string spec() const = 0;
};

using PolicyPtr = std::shared_ptr<const Policy>;
class PolicyRegistry;

// Builds a policy from its call arguments (empty for a bare name). Throws a bad-input Error whose
// message says what is wrong with the arguments; the registry prefixes the location.
using PolicyFactory =
    std::function<PolicyPtr(const std::vector<ParamValue>& args, const PolicyRegistry& registry)>;

class REMATKIT_CORE_EXPORT PolicyRegistry {
 public:
  void add(const std::string& name, PolicyFactory factory);
  bool contains(const std::string& name) const { return factories_.count(name) != 0; }
  bool empty() const { return factories_.empty(); }
  std::vector<std::string> names() const;

  // A policy from a parsed spec: an identifier, a call, or a JAX function repr. `None` means
  // nothing_saveable. Errors are located at `where`.
  PolicyPtr make(const ParamValue& spec, const SourceLocation& where) const;
  // The same, with errors not yet located (for policies nested in other policies' arguments).
  PolicyPtr build(const ParamValue& spec) const;
  // A policy from spec text such as "save_from_both_policies(dots_saveable, save_only_these_names('a'))".
  PolicyPtr parse(std::string_view text, const SourceLocation& where) const;

 private:
  std::map<std::string, PolicyFactory> factories_;
};

}  // namespace rematkit
