#include "plugin_policy.hpp"

#include <memory>

#include "c_values.hpp"
#include "equation_view.hpp"
#include "host_api.hpp"

namespace rematkit::plugin_host {
namespace {

MemorySpace space_of(int32_t space, const std::string& spec) {
  if (space == RK_MEMORY_DEVICE) return MemorySpace::kDevice;
  if (space == RK_MEMORY_PINNED_HOST) return MemorySpace::kPinnedHost;
  fail("policy " + spec + " answered an unknown memory space " + std::to_string(space));
}

}  // namespace

PluginPolicy::~PluginPolicy() {
  if (api_->destroy) api_->destroy(instance_);
}

PolicyAnswer PluginPolicy::decide(const EquationView& eqn) const {
  const CEquationView view(eqn.primitive, eqn.params, eqn.inputs, eqn.outputs, eqn.site, eqn.flops);
  rk_decision d{sizeof(rk_decision), RK_RECOMPUTE, RK_MEMORY_DEVICE, RK_MEMORY_PINNED_HOST, RK_MUST};
  if (rk_error* error = api_->decide(instance_, view.get(), &d)) fail("policy " + spec_ + ": " + take_error(error));
  PolicyAnswer answer;
  switch (d.kind) {
    case RK_SAVEABLE: answer.decision = Decision::kSaveable; break;
    case RK_RECOMPUTE: answer.decision = Decision::kRecompute; break;
    case RK_OFFLOADABLE:
      answer.decision = Decision::kOffloadable;
      answer.offload_src = space_of(d.offload_src, spec_);
      answer.offload_dst = space_of(d.offload_dst, spec_);
      break;
    default: fail("policy " + spec_ + " answered an unknown decision " + std::to_string(d.kind));
  }
  // Every field of the answer is checked against the ABI's values: a plugin that answers anything
  // else is an error that names it, never a guess.
  if (d.strength == RK_PREFER) answer.strength = Strength::kPrefer;
  else if (d.strength == RK_MUST) answer.strength = Strength::kMust;
  else fail("policy " + spec_ + " answered an unknown decision strength " + std::to_string(d.strength));
  return answer;
}

void PluginPolicy::survey(const std::vector<EquationView>& eqns) const {
  if (!RK_HAS_FIELD(api_, rk_policy_api, survey) || !api_->survey) return;
  std::vector<std::unique_ptr<CEquationView>> owned;  // the views point into these
  std::vector<rk_equation_view> views;
  owned.reserve(eqns.size());
  views.reserve(eqns.size());
  for (const EquationView& e : eqns) {
    owned.push_back(std::make_unique<CEquationView>(e.primitive, e.params, e.inputs, e.outputs, e.site, e.flops));
    views.push_back(*owned.back()->get());
  }
  if (rk_error* error = api_->survey(instance_, views.data(), views.size()))
    fail("policy " + spec_ + " (survey): " + take_error(error));
}

PolicyFactory plugin_policy_factory(const rk_policy_api* api) {
  return [api](const std::vector<ParamValue>& args, const PolicyRegistry& registry) -> PolicyPtr {
    CValues values;
    std::vector<PolicyPtr> nested;
    const std::vector<rk_value> c_args = values.policy_args(args, registry, nested);
    rk_policy* instance = nullptr;
    if (rk_error* error = api->create(c_args.data(), c_args.size(), &instance)) fail(take_error(error));
    if (!instance) fail("policy " + std::string(api->name) + ": create returned no policy and no error");
    std::string spec = api->name;
    if (!args.empty()) {
      spec += "(";
      for (size_t i = 0; i < args.size(); ++i) spec += (i ? ", " : "") + args[i].str();
      spec += ")";
    }
    return std::make_shared<PluginPolicy>(api, instance, std::move(nested), std::move(spec));
  };
}

}  // namespace rematkit::plugin_host
