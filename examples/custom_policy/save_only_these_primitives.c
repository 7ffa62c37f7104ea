/* An example rematkit policy plugin in C: save_only_these_primitives('cos', 'dot_general', ...)
 * saves the outputs of the listed primitives and recomputes everything else.
 *
 * Build it (see docs/plugins.md, "Write a policy plugin"):
 *   cc -std=c11 -O2 -shared -fPIC -I<rematkit>/plugins/include (or -I<prefix>/include once installed) save_only_these_primitives.c \
 *      -o libsave_only_these_primitives.so
 * then pass --plugin libsave_only_these_primitives.so, or put it in a folder on REMATKIT_PLUGIN_PATH. */
#include <stdlib.h>
#include <string.h>

#include "rematkit/plugin/rk_policy.h"

static const rk_host_api* host;

/* The instance: the primitive names to save. */
typedef struct {
  size_t count;
  char** names;
} primitives;

static void destroy(rk_policy* policy) {
  primitives* p = (primitives*)policy;
  if (!p) return;
  for (size_t i = 0; i < p->count; ++i) free(p->names[i]);
  free(p->names);
  free(p);
}

static rk_error* create(const rk_value* args, size_t num_args, rk_policy** out) {
  if (num_args == 0) return host->error_new(RK_INVALID_ARGUMENT, "needs primitive names, e.g. ('cos', 'sin')");
  primitives* p = calloc(1, sizeof *p);
  if (p) p->names = calloc(num_args, sizeof *p->names);
  if (!p || !p->names) {
    destroy((rk_policy*)p);
    return host->error_new(RK_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (args[i].kind != RK_VALUE_STRING || args[i].name) {
      destroy((rk_policy*)p);
      return host->error_new(RK_INVALID_ARGUMENT, "takes primitive names as positional strings, e.g. 'cos'");
    }
    p->names[i] = malloc(strlen(args[i].string_value) + 1);
    if (!p->names[i]) {
      destroy((rk_policy*)p);
      return host->error_new(RK_RESOURCE_EXHAUSTED, "out of memory");
    }
    strcpy(p->names[i], args[i].string_value);
    p->count = i + 1;
  }
  *out = (rk_policy*)p;
  return NULL;
}

static rk_error* decide(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  const primitives* p = (const primitives*)policy;
  for (size_t i = 0; i < p->count; ++i)
    if (strcmp(eqn->primitive, p->names[i]) == 0) out->kind = RK_SAVEABLE;
  return NULL; /* anything else keeps the default answer, RK_RECOMPUTE */
}

static rk_error* initialize(const rk_host_api* h) {
  host = h;
  return NULL;
}

static const rk_policy_api policy = {sizeof(rk_policy_api), "save_only_these_primitives", create, destroy, decide,
                                     "save_only_these_primitives('cos', ...)"};
static const rk_policy_api* const policies[] = {&policy};
static const rk_plugin_api plugin = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "example-primitives",
                                     "1.0.0", initialize, 1, policies, 0, NULL};

RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &plugin; }
