#include "default_registry.hpp"

#include "rematkit/ir/error.hpp"

namespace rematkit {
namespace {

// Constant-initialized, so installing it during another file's static initialization is safe.
constinit DefaultPolicySource installed = nullptr;

}  // namespace

void install_default_policies(DefaultPolicySource source) { installed = source; }

const PolicyRegistry& installed_default_policies() {
  if (!installed) throw Error(ErrorKind::kInternal, "no default policy registry is installed");
  return installed();
}

}  // namespace rematkit
