/* rematkit plugin ABI: the C interface between rematkit and plugin libraries.
 *
 * Versioning (docs/plugin-abi.md):
 *  - RK_ABI_MAJOR changes when a field is removed, retyped or reordered, or an enum value is
 *    renumbered. rematkit refuses plugins of another major.
 *  - RK_ABI_MINOR changes when a field is appended to a struct or a new enum value or function
 *    appears. Plugins of any minor load: every struct starts with its size, so each side reads a
 *    field only if the other side's struct is large enough to hold it (RK_HAS_FIELD).
 * Ownership: everything passed into a plugin call is borrowed for that call only, unless said
 * otherwise. Errors are made with the host's error_new and owned by the host.
 * No C++ exception may leave a plugin function. */
#ifndef REMATKIT_PLUGIN_RK_PLUGIN_H_
#define REMATKIT_PLUGIN_RK_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RK_ABI_MAJOR 1
#define RK_ABI_MINOR 8

/* The size of struct T up to and including field `last`. */
#define RK_STRUCT_SIZE(T, last) (offsetof(T, last) + sizeof(((T*)0)->last))
/* Whether the struct at p (of type T, from the other side) has field f. */
#define RK_HAS_FIELD(p, T, f) ((p)->struct_size >= RK_STRUCT_SIZE(T, f))

#if defined(_WIN32)
#define RK_PLUGIN_EXPORT __declspec(dllexport)
#else
#define RK_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

typedef struct rk_version {
  uint16_t major;
  uint16_t minor;
} rk_version;

/* ---- errors ------------------------------------------------------------------------------ */

typedef enum rk_code {
  RK_OK = 0,
  RK_INVALID_ARGUMENT = 3, /* e.g. a policy's arguments are wrong */
  RK_NOT_FOUND = 5,
  RK_ALREADY_EXISTS = 6,
  RK_RESOURCE_EXHAUSTED = 8,
  RK_FAILED_PRECONDITION = 9,
  RK_UNIMPLEMENTED = 12,
  RK_INTERNAL = 13
} rk_code;

typedef struct rk_error rk_error; /* opaque; NULL means success */

typedef enum rk_log_level { RK_LOG_DEBUG = 0, RK_LOG_INFO = 1, RK_LOG_WARN = 2, RK_LOG_ERROR = 3 } rk_log_level;

/* What the host gives a plugin in initialize(); valid for the life of the process. */
typedef struct rk_host_api {
  size_t struct_size;
  rk_version abi; /* the host's RK_ABI_MAJOR / RK_ABI_MINOR */
  /* A new error with `code` (an rk_code) and a copy of the NUL-terminated `message`. */
  rk_error* (*error_new)(int32_t code, const char* message);
  void (*log)(int32_t level, const char* message);
} rk_host_api;

/* ---- values: equation params and policy arguments ---------------------------------------- */

typedef enum rk_value_kind {
  RK_VALUE_NONE = 0,
  RK_VALUE_BOOL = 1,
  RK_VALUE_INT = 2,
  RK_VALUE_FLOAT = 3,
  RK_VALUE_STRING = 4, /* also identifiers such as float32 */
  RK_VALUE_LIST = 5,   /* tuples and lists: items; also a keyword call such as                 */
                       /* GatherDimensionNumbers(offset_dims=(1,), ...) (since 1.2): string_value */
                       /* is the call's name and each item's name its keyword                    */
  RK_VALUE_POLICY = 6  /* a policy built by the host from a nested spec: policy + policy_api */
} rk_value_kind;

struct rk_policy;
struct rk_policy_api;

typedef struct rk_value {
  size_t struct_size;
  int32_t kind;                          /* an rk_value_kind */
  const char* name;                      /* a param's or keyword argument's name; NULL if positional */
  int64_t int_value;                     /* RK_VALUE_BOOL (0/1) and RK_VALUE_INT */
  double float_value;                    /* RK_VALUE_FLOAT */
  const char* string_value;              /* RK_VALUE_STRING, NUL-terminated */
  const struct rk_value* items;          /* RK_VALUE_LIST */
  size_t num_items;
  struct rk_policy* policy;              /* RK_VALUE_POLICY: owned by the host, valid while the  */
  const struct rk_policy_api* policy_api; /* policy that received it as an argument exists       */
} rk_value;

/* ---- what a policy or a backend sees of one equation -------------------------------------- */

/* Buffers hold each dtype in its own size: bf16 and f16 2 bytes, f64 and i64 8, bool, u8 and i8 1.
 * A key<fry> element is 8 bytes: its two u32 words. A c64 element is its real part then its
 * imaginary part, two f32 (8 bytes); c128 two f64 (16). The values from BF16 on came in ABI 1.3,
 * C64 and C128 in 1.8; the host offers an equation only to a plugin of the ABI its dtypes came in. */
typedef enum rk_dtype {
  RK_DTYPE_F32 = 0,
  RK_DTYPE_I32 = 1,
  RK_DTYPE_BOOL = 2,
  RK_DTYPE_BF16 = 3,
  RK_DTYPE_F16 = 4,
  RK_DTYPE_F64 = 5,
  RK_DTYPE_I64 = 6,
  RK_DTYPE_U32 = 7,
  RK_DTYPE_U8 = 8,
  RK_DTYPE_I8 = 9,
  RK_DTYPE_KEY_FRY = 10, /* a threefry PRNG key, key<fry>: two u32 words, as random_unwrap gives them */
  RK_DTYPE_C64 = 11,
  RK_DTYPE_C128 = 12
} rk_dtype;
typedef enum rk_memory_space { RK_MEMORY_DEVICE = 0, RK_MEMORY_PINNED_HOST = 1 } rk_memory_space;

typedef struct rk_type {
  size_t struct_size;
  int32_t dtype;        /* an rk_dtype */
  int32_t memory_space; /* an rk_memory_space */
  int32_t rank;
  const int64_t* shape; /* rank entries */
} rk_type;

typedef struct rk_equation_view {
  size_t struct_size;
  const char* primitive;   /* JAX's name: "dot_general", "cos", "name", ... */
  const rk_value* params;  /* named: dimension_numbers as nested lists, name, axes, ... */
  size_t num_params;
  const rk_type* inputs;
  size_t num_inputs;
  const rk_type* outputs;
  size_t num_outputs;
  /* Since ABI 1.4; empty and 0 where the host has none (a backend's equation).
   * site: a stable name of this equation in its program, "LINE:COL#N": the line and column of the
   * program equation it comes from, and N counting the earlier equations from the same place (a
   * JVP rule emits several). In a scan body it starts with its scan's site and '/':
   * "12:9#0/14:20#1". The same program gives the same sites under every policy.
   * flops: its floating-point work, counted as `rematkit grad --flops` counts it. */
  const char* site;
  double flops;
} rk_equation_view;

/* ---- the plugin's table, returned by its one exported entry point -------------------------- */

typedef struct rk_plugin_api {
  size_t struct_size;
  rk_version abi;      /* the RK_ABI_MAJOR / RK_ABI_MINOR the plugin was compiled against */
  const char* name;    /* the plugin's name, e.g. "jax-policies" */
  const char* version; /* the plugin's own version, e.g. "1.0.0" */
  /* Called once before anything else; may be NULL. The host api stays valid. */
  rk_error* (*initialize)(const rk_host_api* host);
  size_t num_policies;
  const struct rk_policy_api* const* policies;
  size_t num_backends;
  const struct rk_backend_api* const* backends;
} rk_plugin_api;

#define RK_PLUGIN_ENTRY_SYMBOL "rk_plugin_get_api"
typedef const rk_plugin_api* (*rk_plugin_get_api_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* REMATKIT_PLUGIN_RK_PLUGIN_H_ */
