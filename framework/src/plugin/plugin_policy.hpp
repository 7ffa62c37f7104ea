// A Policy implemented by a plugin through rk_policy_api. Internal to the plugin host.
#pragma once
#include <string>
#include <vector>

#include "rematkit/plugin/rk_policy.h"
#include "rematkit/policy/policy.hpp"

namespace rematkit::plugin_host {

class PluginPolicy final : public Policy {
 public:
  // Takes ownership of `instance`; `nested` are the policies given to it as arguments.
  PluginPolicy(const rk_policy_api* api, rk_policy* instance, std::vector<PolicyPtr> nested, std::string spec)
      : api_(api), instance_(instance), nested_(std::move(nested)), spec_(std::move(spec)) {}
  ~PluginPolicy() override;
  PluginPolicy(const PluginPolicy&) = delete;
  PluginPolicy& operator=(const PluginPolicy&) = delete;

  PolicyAnswer decide(const EquationView& eqn) const override;
  void survey(const std::vector<EquationView>& eqns) const override;
  std::string spec() const override { return spec_; }
  const rk_policy_api* api() const { return api_; }
  rk_policy* instance() const { return instance_; }

 private:
  const rk_policy_api* api_;
  rk_policy* instance_;
  std::vector<PolicyPtr> nested_;  // outlive instance_, which may call them
  std::string spec_;
};

// The factory the registry keeps for a plugin's policy.
PolicyFactory plugin_policy_factory(const rk_policy_api* api);

}  // namespace rematkit::plugin_host
