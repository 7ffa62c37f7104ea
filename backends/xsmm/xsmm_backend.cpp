// The xsmm backend plugin: f32 dot_general through libxsmm 1.17's JIT-generated small-matrix
// kernels (Debian's libxsmm-dev, linked statically into this plugin and hidden in it). It takes a
// product, or a batch of them, only where libxsmm reads the operands as they lie, never a copy:
// each operand's batch, free and contracted dims read as one strided dim (as on the blas backend),
// the lhs A (m, k) plain or transposed (a weight's gradient, A^T B), the rhs B (k, n) plain.
//
// libxsmm is column-major: the row-major C = A B is the column-major C^T = B^T A^T, so the kernel's
// "a" is B (M = n, lda = B's row stride) and its "b" is A (N = m, ldb = A's row stride), with
// ldc = n. A row-major A^T is then libxsmm's TRANS_B, which 1.17 generates; a row-major B^T would
// be its TRANS_A, which 1.17 does not (dispatch returns NULL), so those products (a data gradient,
// A B^T) are declined and run on the next backend listed, as are other dtypes, empty operands,
// dims that read as no single stride, fused (rk_fusion) equations, and products past kMaxMnk.
//
// Each kernel is dispatched (JIT-compiled, or found in libxsmm's registry) when it is prepared and
// kept; execute() calls it once per product of the batch, on the calling thread only. One thread
// per call is deliberate: libxsmm wins on small products (against oneDNN's matmul, measured
// single-threaded; docs/performance.md has the figures), where splitting a product between
// threads costs more than it saves; larger products go to the backends that thread them.
// It asks for no workspace and libxsmm allocates nothing per call. expected_ns estimates a
// product, so that listed after oneDNN it takes the small ones only. Not in the default list: a
// product it takes loses the bias and activation oneDNN fuses into it, which cost a gpt step more
// than its faster products saved (docs/performance.md, "blas and xsmm, settled").
#include <libxsmm.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../strided_product.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::Prim;
using rematkit::plugin::ArgumentError;
using rematkit::plugin::guarded;

// The largest product (m * n * k) this backend claims. libxsmm's kernels do not block for the
// caches or split between threads; the measured wins stop near 256^3, and a larger product runs
// faster on oneDNN's or Highway's threaded GEMMs.
constexpr int64_t kMaxMnk = int64_t{256} * 256 * 256;

struct Backend {};  // no state: libxsmm's registry is the process's

using rematkit::backends::Dim;

// A (rows, cols) operand in row-major terms: plain when a row's elements are adjacent, transposed
// when a column's are; `leading` is the floats between rows (between columns when transposed).
struct Matrix {
  bool transposed = false;
  int64_t leading = 1;
};
std::optional<Matrix> plain(Dim rows, Dim cols) {
  if (cols.size != 1 && cols.stride != 1) return std::nullopt;
  const int64_t leading = rows.size == 1 ? cols.size : rows.stride;
  if (leading < cols.size) return std::nullopt;
  return Matrix{false, leading};
}
std::optional<Matrix> transposed(Dim rows, Dim cols) {
  if (rows.size != 1 && rows.stride != 1) return std::nullopt;
  const int64_t leading = cols.size == 1 ? rows.size : cols.stride;
  if (leading < rows.size) return std::nullopt;
  return Matrix{true, leading};
}

// C = op(A) B per product of the batch, row-major: A (m, k) or stored (k, m), B (k, n), C (m, n)
// with ldc = n, which is dot_general's output (batch, lhs free, rhs free).
struct Gemm {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  Matrix a, b;
  int64_t a_step = 0, b_step = 0;  // floats between the batch's products
  libxsmm_smmfunction kernel = nullptr;
};

// libxsmm's kernel for `g` (column-major C^T = B^T op(A)^T, beta 0: C is written, never read), or
// nullptr where libxsmm generates none. Thread-safe: libxsmm's registry takes concurrent calls,
// and a second call for the same product returns the kernel the first generated.
libxsmm_smmfunction dispatch(const Gemm& g) {
  const auto i = [](int64_t v) { return static_cast<libxsmm_blasint>(v); };
  const libxsmm_blasint lda = i(g.b.leading), ldb = i(g.a.leading), ldc = i(g.n);
  const float alpha = 1.0f, beta = 0.0f;
  const int flags = g.a.transposed ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  return libxsmm_smmdispatch(i(g.n), i(g.m), i(g.k), &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
}

// How libxsmm runs `e` (its kernel dispatched), or nullopt when this backend does not.
std::optional<Gemm> gemm_for(const rk_equation_view* e) {
  const auto product = rematkit::backends::strided_f32_product(e);
  if (!product) return std::nullopt;
  const Dim *batch_l = &product->batch_l, *batch_r = &product->batch_r, *m = &product->m, *n = &product->n,
            *k_l = &product->k_l, *k_r = &product->k_r;
  // A plain or transposed (TRANS_B to libxsmm); B plain only (its transpose is libxsmm's TRANS_A).
  std::optional<Matrix> a = plain(*m, *k_l);
  if (!a) a = transposed(*m, *k_l);
  const std::optional<Matrix> b = plain(*k_r, *n);
  if (!a || !b) return std::nullopt;
  if (m->size > kMaxMnk / n->size / k_l->size) return std::nullopt;  // m n k > kMaxMnk, without overflow
  for (int64_t v : {m->size, n->size, k_l->size, a->leading, b->leading})  // libxsmm_blasint is 32-bit here
    if (v > INT_MAX) return std::nullopt;
  Gemm g;
  g.batch = batch_l->size;
  g.m = m->size;
  g.n = n->size;
  g.k = k_l->size;
  g.a = *a;
  g.b = *b;
  g.a_step = batch_l->stride;
  g.b_step = batch_r->stride;
  g.kernel = dispatch(g);
  if (!g.kernel) return std::nullopt;
  return g;
}

// num_threads=N (N >= 1) is taken, as every backend is created with the step's thread count, and
// changes nothing: each product runs on the thread that calls it (the step's threads run several
// products at once, since execute() is thread-safe).
rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  return guarded([&] {
    for (size_t i = 0; i < n; ++i) {
      const std::string name = options[i].name ? options[i].name : "";
      if (name != "num_threads" || options[i].kind != RK_VALUE_INT || options[i].int_value < 1)
        throw ArgumentError("the xsmm backend takes num_threads=N (N >= 1; each product runs on one thread)");
    }
    *out = reinterpret_cast<rk_backend*>(new Backend);
  });
}
void destroy(rk_backend* backend) { delete reinterpret_cast<Backend*>(backend); }

// Dispatches the kernel too (libxsmm keeps it, so prepare() finds it again): a product libxsmm
// would generate no kernel for is declined, not failed at prepare().
int32_t supports(const rk_backend*, const rk_equation_view* e) {
  try {  // supports() never fails: an equation it cannot read is one it does not run
    if (rematkit::plugin::has_complex_operand(e)) return 0;  // real arithmetic only
    return gemm_for(e) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// One product's time on its one thread: rematkit_product_backends_bench's xsmm rows on this 2-core
// AVX2 EPYC (JIT target hsw), by multiply-adds of one product of the batch. Against oneDNN's matmul
// there (docs/performance.md, "blas and xsmm, settled"): up to about 1 M multiply-adds faster (a
// oneDNN call costs near a microsecond before any work), level at 8 M, and the 512x64x512
// products of GPT-2's attention gradient 1.6x slower (its kernels do not block for the caches).
// The estimate holds on any thread count: oneDNN runs products this small on one thread too.
double expected_ns(const rk_backend*, const rk_equation_view* e) {
  try {
    const std::optional<Gemm> g = gemm_for(e);
    if (!g) return -1;
    const double multiply_adds = static_cast<double>(g->m) * static_cast<double>(g->n) * static_cast<double>(g->k);
    return static_cast<double>(g->batch) *
           rematkit::plugin::measured_ns({{320, 100}, {16384, 390}, {262144, 5700}, {1048576, 23300}, {8388608, 186000},
                                          {16777216, 1198000}},
                                         multiply_adds);
  } catch (...) {
    return -1;
  }
}

rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    const std::optional<Gemm> g = gemm_for(e);
    if (!g) throw std::runtime_error(std::string("xsmm does not run ") + e->primitive + " in this form");
    *workspace_bytes = 0;
    *kernel = reinterpret_cast<rk_kernel*>(new Gemm(*g));
  });
}

rk_error* execute(rk_kernel* handle, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void*, size_t) {
  return guarded([&] {
    const Gemm& g = *reinterpret_cast<const Gemm*>(handle);
    const auto* a = static_cast<const float*>(in[0].data);
    const auto* b = static_cast<const float*>(in[1].data);
    auto* c = static_cast<float*>(out[0].data);
    for (int64_t p = 0; p < g.batch; ++p)  // column-major: B is the kernel's "a", A its "b"
      g.kernel(b + p * g.b_step, a + p * g.a_step, c + p * g.m * g.n);
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Gemm*>(kernel); }

// Sets libxsmm up (its CPU id, the JIT target) once, when the plugin loads; REMATKIT_LOG=1 names
// the target it generates code for.
rk_error* initialize(const rk_host_api* host) {
  rematkit::plugin::remember_host(host);
  libxsmm_init();
  rematkit::plugin::log(RK_LOG_INFO, std::string("xsmm: libxsmm ") + LIBXSMM_VERSION + ", JIT target " +
                                         libxsmm_get_target_arch());
  return nullptr;
}

// execute() may run on several threads at once: a dispatched kernel is a pure function of its
// three pointers (it keeps no state), and libxsmm's dispatch is thread-safe ("multiple application
// threads can call LIBXSMM's routines concurrently", its README).
const rk_backend_api kBackend = {sizeof(rk_backend_api), "xsmm", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, &expected_ns};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "xsmm-backend", "0.1.0",
                            &initialize, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
