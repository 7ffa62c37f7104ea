/* A policy plugin whose answers come from a script of bytes, for the tests of broken answers and
 * for the plugin fuzz target: it answers what the bytes say, in or out of the ABI's ranges.
 *
 * rk_scripted_policy_set(bytes, n) sets the script (the plugin keeps a copy). Each call to create,
 * survey and decide reads the next bytes, wrapping around; an empty script answers "saveable".
 *   create: byte b. b % 8 == 6: an error (code and message as below); 7: no policy and no error.
 *   survey: byte b. b % 8 == 5: an error.
 *   decide: bytes k, s, a, d as signed values: kind k, strength s, offload spaces a and d, except that
 *           k == 100 is an error whose code is the next byte and whose message is NULL, "" or words
 *           as the byte after says (0, 1, else). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rematkit/plugin/rk_policy.h"

static const rk_host_api* host;
static unsigned char script[4096];
static size_t script_size, next;
static int instance;

RK_PLUGIN_EXPORT void rk_scripted_policy_set(const unsigned char* bytes, size_t n) {
  script_size = n < sizeof script ? n : sizeof script;
  if (script_size) memcpy(script, bytes, script_size);
  next = 0;
}

static int next_byte(void) {
  if (!script_size) return 0;
  const int b = (signed char)script[next % script_size];
  next++;
  return b;
}

static rk_error* scripted_error(void) {
  const int32_t code = next_byte();
  const int words = next_byte();
  return host->error_new(code, words == 0 ? NULL : words == 1 ? "" : "the script says no");
}

static rk_error* initialize(const rk_host_api* h) {
  host = h;
  return NULL;
}

static rk_error* create(const rk_value* args, size_t num_args, rk_policy** out) {
  (void)args;
  (void)num_args;
  const int b = next_byte() & 7;
  if (b == 6) return scripted_error();
  *out = b == 7 ? NULL : (rk_policy*)&instance;
  return NULL;
}

static void destroy(rk_policy* policy) { (void)policy; }

static rk_error* survey(rk_policy* policy, const rk_equation_view* eqns, size_t num_eqns) {
  (void)policy;
  (void)eqns;
  (void)num_eqns;
  return (next_byte() & 7) == 5 ? scripted_error() : NULL;
}

static rk_error* decide(rk_policy* policy, const rk_equation_view* eqn, rk_decision* out) {
  (void)policy;
  (void)eqn;
  if (!script_size) {
    out->kind = RK_SAVEABLE;
    return NULL;
  }
  const int kind = next_byte();
  if (kind == 100) return scripted_error();
  out->kind = kind;
  out->strength = next_byte();
  out->offload_src = next_byte();
  out->offload_dst = next_byte();
  return NULL;
}

static const rk_policy_api scripted = {sizeof(rk_policy_api), "scripted", create, destroy, decide, "scripted", survey};
static const rk_policy_api* const policies[] = {&scripted};
static const rk_plugin_api plugin = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "test-scripted-policy", "1.0.0",
                                     initialize, 1, policies, 0, NULL};

RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &plugin; }
