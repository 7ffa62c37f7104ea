/* The custom policies some residual cases need (JAX lambdas there), written as a user would:
 * C source against the plugin SDK, built by CMake (rematkit_add_plugin) as a plugin out of tree would be.
 *   save_cos_only: saveable iff the primitive is cos   (lambda prim, *_, **__: str(prim) == 'cos')
 *   save_mul_only: saveable iff 'mul' is in its name    (lambda p, *_, **__: 'mul' in str(p))
 *   prefer_saving_cos: save_cos_only, answered as a preference (RK_PREFER) rather than a rule */
#include <string.h>

#include "rematkit/plugin/rk_policy.h"

static int dummy_instance;

static rk_error* create(const rk_value* args, size_t num_args, rk_policy** out) {
  (void)args;
  (void)num_args;
  *out = (rk_policy*)&dummy_instance;
  return NULL;
}

static void destroy(rk_policy* policy) { (void)policy; }

static rk_error* decide_cos(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  (void)policy;
  out->kind = strcmp(eqn->primitive, "cos") == 0 ? RK_SAVEABLE : RK_RECOMPUTE;
  return NULL;
}

static rk_error* decide_mul(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  (void)policy;
  out->kind = strstr(eqn->primitive, "mul") ? RK_SAVEABLE : RK_RECOMPUTE;
  return NULL;
}

static rk_error* decide_cos_preferred(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  decide_cos(policy, eqn, out);
  out->strength = RK_PREFER;
  return NULL;
}

static const rk_policy_api save_cos = {sizeof(rk_policy_api), "save_cos_only", create, destroy, decide_cos, "save_cos_only"};
static const rk_policy_api save_mul = {sizeof(rk_policy_api), "save_mul_only", create, destroy, decide_mul, "save_mul_only"};
static const rk_policy_api prefer_cos = {sizeof(rk_policy_api), "prefer_saving_cos", create, destroy,
                                         decide_cos_preferred, "prefer_saving_cos"};
static const rk_policy_api* const policies[] = {&save_cos, &save_mul, &prefer_cos};
static const rk_plugin_api plugin = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "test-custom-policies", "1.0.0",
                                     NULL, 3, policies, 0, NULL};

RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &plugin; }
