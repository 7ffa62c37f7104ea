/* rematkit plugin ABI: execution backends. The host owns every buffer; a backend says which
 * equations it supports, prepares a kernel per equation at plan time, and runs it. */
#ifndef REMATKIT_PLUGIN_RK_BACKEND_H_
#define REMATKIT_PLUGIN_RK_BACKEND_H_

#include "rematkit/plugin/rk_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_backend rk_backend; /* opaque, owned by the plugin */
typedef struct rk_kernel rk_kernel;   /* opaque, owned by the plugin */

typedef struct rk_tensor_view {
  size_t struct_size;
  rk_type type;
  void* data; /* host-owned, row-major, 64-byte aligned */
} rk_tensor_view;

enum {
  RK_BACKEND_THREAD_SAFE = 1u << 0 /* execute() may run on several threads at once */
};

typedef struct rk_backend_api {
  size_t struct_size;
  const char* name; /* e.g. "reference", "highway", "onednn" */
  uint32_t flags;   /* RK_BACKEND_* bits */
  rk_error* (*create)(const rk_value* options, size_t num_options, rk_backend** out);
  void (*destroy)(rk_backend* backend); /* NULL-safe */
  /* Nonzero if the backend can run `eqn`; cheap, never fails. */
  int32_t (*supports)(const rk_backend* backend, const rk_equation_view* eqn);
  /* Plan time: a kernel for `eqn` and the scratch bytes each execute() needs. A step program
   * places them in its arena (counted in its predicted peak): report every byte a run uses, so
   * that execute() needs to allocate nothing. */
  rk_error* (*prepare)(rk_backend* backend, const rk_equation_view* eqn, rk_kernel** kernel,
                       size_t* workspace_bytes);
  /* Run time: outputs are allocated by the host; workspace has workspace_bytes bytes, 64-byte
   * aligned (NULL when workspace_bytes is 0), and is the caller's for this call only. */
  rk_error* (*execute)(rk_kernel* kernel, const rk_tensor_view* inputs, size_t num_inputs,
                       const rk_tensor_view* outputs, size_t num_outputs, void* workspace,
                       size_t workspace_bytes);
  void (*kernel_destroy)(rk_kernel* kernel); /* NULL-safe */
  /* ABI 1.7, optional (NULL: no estimate): the nanoseconds one execute() of `eqn` is expected to
   * take on one thread, from the backend's own measured table; negative for none. A backend later
   * in the preference list takes an equation from an earlier one only when both estimate it and
   * its estimate is the lower (small elementwise ops, where a per-call cost dominates). Depends on
   * the equation alone, so that every program gives an equation the same backend. */
  double (*expected_ns)(const rk_backend* backend, const rk_equation_view* eqn);
} rk_backend_api;

#ifdef __cplusplus
}
#endif
#endif /* REMATKIT_PLUGIN_RK_BACKEND_H_ */
