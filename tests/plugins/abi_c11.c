/* The plugin headers compile as C11 with -Wall -Wextra -pedantic -Werror (built by CMake; a
 * failure fails the build). Also checks, in C, that RK_STRUCT_SIZE and RK_HAS_FIELD work. */
#include "rematkit/plugin/rk_backend.h"
#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/plugin/rk_policy.h"

_Static_assert(RK_STRUCT_SIZE(rk_policy_api, survey) == sizeof(rk_policy_api), "survey is the last field");
_Static_assert(RK_STRUCT_SIZE(rk_equation_view, flops) == sizeof(rk_equation_view), "flops is the last field");
_Static_assert(RK_STRUCT_SIZE(rk_decision, strength) == sizeof(rk_decision), "strength is the last field");

int rematkit_abi_c11_check(const rk_policy_api* api);
int rematkit_abi_c11_check(const rk_policy_api* api) { return RK_HAS_FIELD(api, rk_policy_api, signature); }
