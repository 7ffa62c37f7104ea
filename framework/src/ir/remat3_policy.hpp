// jax_remat3's checkpoint policy, as RematTraced prints it, read as the policy spec rematkit's
// checkpoint takes. Internal to the parser.
#pragma once
#include "rematkit/params.hpp"

namespace rematkit::detail {

// The spec a RematTraced's printed 'policy' is read as.
ParamValue remat3_policy(const ParamValue& printed);

}  // namespace rematkit::detail
