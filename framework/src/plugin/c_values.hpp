// Params and policy arguments as the C ABI's rk_value trees, with the storage they point into.
// Internal to the plugin host.
#pragma once
#include <deque>
#include <string>
#include <vector>

#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/policy/policy.hpp"

namespace rematkit::plugin_host {

class CValues {
 public:
  // An equation's params, named; identifiers become strings.
  std::vector<rk_value> params(const Params& params);
  // A policy's call arguments. Arguments that name a policy become RK_VALUE_POLICY, built with
  // `registry` and kept alive in `nested`.
  std::vector<rk_value> policy_args(const std::vector<ParamValue>& args, const PolicyRegistry& registry,
                                    std::vector<PolicyPtr>& nested);

 private:
  rk_value convert(const ParamValue& v, const PolicyRegistry* registry, std::vector<PolicyPtr>* nested);
  const char* keep(std::string s);

  std::deque<std::string> strings_;
  std::deque<std::vector<rk_value>> lists_;
};

}  // namespace rematkit::plugin_host
