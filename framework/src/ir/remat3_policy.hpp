// jax_remat3's checkpoint policy, as RematTraced prints it, read as the policy spec rematkit's
// checkpoint takes. Internal to the parser.
#pragma once
#include "rematkit/ir/params.hpp"

namespace rematkit::detail {

// The spec a RematTraced's printed 'policy' is read as.
ParamValue remat3_policy(const ParamValue& printed);

// Whether `printed` is a callable remat3 never calls (everything recomputed): the checkpoint keeps
// it as the param "ignored_callable_policy", which `rematkit check` and `residuals` note.
bool remat3_ignores_callable(const ParamValue& printed);

}  // namespace rematkit::detail
