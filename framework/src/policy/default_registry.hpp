// The registry linearize() resolves policy specs with when its options name none. Autodiff asks
// for it here; the plugin layer above, which finds the policies (default_policies()), installs it
// when the library loads, so autodiff never reaches up into the plugin registry.
#pragma once

namespace rematkit {

class PolicyRegistry;

using DefaultPolicySource = const PolicyRegistry& (*)();

void install_default_policies(DefaultPolicySource source);
// The installed source's registry; an internal Error if none is installed.
const PolicyRegistry& installed_default_policies();

}  // namespace rematkit
