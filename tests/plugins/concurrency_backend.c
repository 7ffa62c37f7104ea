/* A backend that runs `neg` and reports an error whenever two of its executes overlap in time
 * (each takes about a millisecond). Built twice: without RK_BACKEND_THREAD_SAFE, where the host must
 * never let two executes overlap, and with it (FIXTURE_THREAD_SAFE), where they may, which shows that
 * the fixture does detect an overlap. */
#define _POSIX_C_SOURCE 199309L
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "rematkit/plugin/rk_backend.h"

#ifdef FIXTURE_THREAD_SAFE
#define FIXTURE_NAME "fixture_parallel"
#define FIXTURE_FLAGS RK_BACKEND_THREAD_SAFE
#else
#define FIXTURE_NAME "fixture_serial"
#define FIXTURE_FLAGS 0u
#endif

static const rk_host_api* host;
static atomic_int in_flight;
static int instance, kernel;

static rk_error* initialize(const rk_host_api* api) {
  host = api;
  return NULL;
}
static rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  (void)options;
  (void)n;
  *out = (rk_backend*)&instance;
  return NULL;
}
static void destroy(rk_backend* b) { (void)b; }
static int32_t supports(const rk_backend* b, const rk_equation_view* e) {
  (void)b;
  return strcmp(e->primitive, "neg") == 0 && e->inputs[0].dtype == RK_DTYPE_F32;
}
static rk_error* prepare(rk_backend* b, const rk_equation_view* e, rk_kernel** k, size_t* workspace) {
  (void)b;
  (void)e;
  *k = (rk_kernel*)&kernel;
  *workspace = 0;
  return NULL;
}
static rk_error* execute(rk_kernel* k, const rk_tensor_view* in, size_t n_in, const rk_tensor_view* out, size_t n_out,
                         void* workspace, size_t workspace_bytes) {
  (void)k;
  (void)n_in;
  (void)n_out;
  (void)workspace;
  (void)workspace_bytes;
  const int others = atomic_fetch_add(&in_flight, 1);
  const struct timespec a_millisecond = {0, 1000000};
  nanosleep(&a_millisecond, NULL);
  int64_t count = 1;
  for (int32_t d = 0; d < in[0].type.rank; ++d) count *= in[0].type.shape[d];
  for (int64_t i = 0; i < count; ++i) ((float*)out[0].data)[i] = -((const float*)in[0].data)[i];
  atomic_fetch_sub(&in_flight, 1);
  return others ? host->error_new(RK_FAILED_PRECONDITION, "two executes at once") : NULL;
}
static void kernel_destroy(rk_kernel* k) { (void)k; }

static const rk_backend_api backend = {sizeof(rk_backend_api), FIXTURE_NAME, FIXTURE_FLAGS, create, destroy, supports,
                                       prepare, execute, kernel_destroy, NULL};
static const rk_backend_api* const backends[] = {&backend};
static const rk_plugin_api plugin = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, FIXTURE_NAME, "1.0.0",
                                     initialize, 0, NULL, 1, backends};

RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &plugin; }
