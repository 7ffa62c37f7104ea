/* rematkit plugin ABI: checkpoint policies (JAX's policy(prim, *avals, **params)).
 * A policy is created from arguments, then asked about one primal equation at a time. */
#ifndef REMATKIT_PLUGIN_RK_POLICY_H_
#define REMATKIT_PLUGIN_RK_POLICY_H_

#include "rematkit/plugin/rk_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rk_decision_kind {
  RK_SAVEABLE = 0,   /* the outputs may be kept for the backward pass */
  RK_RECOMPUTE = 1,  /* the backward pass recomputes them */
  RK_OFFLOADABLE = 2 /* a copy is kept in offload_dst and brought back to offload_src */
} rk_decision_kind;

typedef enum rk_decision_strength {
  RK_MUST = 0,  /* a hard rule (every JAX policy) */
  RK_PREFER = 1 /* a preference a memory-budget solver may override (since ABI 1.1) */
} rk_decision_strength;

typedef struct rk_decision {
  size_t struct_size;
  int32_t kind;        /* an rk_decision_kind */
  int32_t offload_src; /* an rk_memory_space, for RK_OFFLOADABLE */
  int32_t offload_dst; /* an rk_memory_space, for RK_OFFLOADABLE */
  int32_t strength;    /* an rk_decision_strength; since ABI 1.1 */
} rk_decision;

typedef struct rk_policy rk_policy; /* opaque, owned by the plugin */

typedef struct rk_policy_api {
  size_t struct_size;
  const char* name; /* how programs and --policy name it */
  /* Builds a policy from its call arguments (none for a bare name). Argument errors come back as
   * RK_INVALID_ARGUMENT with a message saying what is wrong. */
  rk_error* (*create)(const rk_value* args, size_t num_args, rk_policy** out);
  void (*destroy)(rk_policy* policy); /* NULL-safe */
  /* The answer for one equation. `out` arrives with struct_size set by the host and kind
   * RK_RECOMPUTE, strength RK_MUST. A policy is never called from two threads at once. */
  rk_error* (*decide)(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out);
  /* Since ABI 1.1: one line on how to call it, e.g. "save_only_these_names('a', ...)". */
  const char* signature;
  /* Since ABI 1.4, may be NULL: called once, before the first decide of a linearization, with every
   * equation this policy may then be asked about, in program order, each with its site and flops.
   * A policy that weighs equations against each other (a knapsack on their bytes) decides here. */
  rk_error* (*survey)(rk_policy* policy, const rk_equation_view* eqns, size_t num_eqns);
} rk_policy_api;

#ifdef __cplusplus
}
#endif
#endif /* REMATKIT_PLUGIN_RK_POLICY_H_ */
