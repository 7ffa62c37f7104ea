// The blas backend plugin: f32 dot_general through OpenBLAS's cblas_sgemm, one call per product of
// a batch, whenever each operand's batch, free and contracted dims read as one strided dim and one
// of each operand's two matrix dims steps by one float (a [B, S, D] activation times a weight, its
// gradient over (B, S), attention batched over (B, H)). A transposed operand is CblasTrans and a
// batch is a base pointer stepped per product, never a copy. Everything else (other dtypes, empty
// operands, dims that read as no single stride) is declined and runs on the next backend listed.
// It asks for no workspace: OpenBLAS packs into buffers of its own, allocated at its first product
// and kept, so they are outside a step's memory plan.
// Threads: num_threads=N, or OpenBLAS's own count when the plugin loads (every core unless
// OPENBLAS_NUM_THREADS says otherwise); blas_threads.hpp shares OpenBLAS's one count between them.
// Kernels: blas_core.hpp; REMATKIT_LOG=1 shows which OpenBLAS runs.
// Placement: expected_ns estimates a product on one thread, so that listed after oneDNN it takes
// the products OpenBLAS runs faster and leaves the others. Not in the default list: on two threads
// the same placement made steps slower (docs/performance.md, "blas and xsmm, settled").
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "blas_core.hpp"
#include "blas_threads.hpp"
#include "../strided_product.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::Prim;
using rematkit::plugin::ArgumentError;
using rematkit::plugin::guarded;

int default_threads = 1;  // OpenBLAS's count when the plugin loaded, before any backend set it

struct Backend {
  int threads = default_threads;
};

using rematkit::backends::BlasMatrix;
using rematkit::backends::Dim;

CBLAS_TRANSPOSE cblas_transpose(const BlasMatrix& m) { return m.transposed ? CblasTrans : CblasNoTrans; }

// C = A B per product of the batch: A (m, k), B (k, n), C (m, n) row-major with ldc = n, which is
// dot_general's output (batch, lhs free, rhs free).
struct Gemm {
  int threads = 1;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  BlasMatrix a, b;
  int64_t a_step = 0, b_step = 0;  // floats between the batch's products
};

// How cblas_sgemm runs `e`, or nullopt when this backend does not.
std::optional<Gemm> gemm_for(const rk_equation_view* e) {
  const auto product = rematkit::backends::strided_f32_product(e);
  if (!product) return std::nullopt;
  const Dim *batch_l = &product->batch_l, *batch_r = &product->batch_r, *m = &product->m, *n = &product->n,
            *k_l = &product->k_l, *k_r = &product->k_r;
  const auto a = rematkit::backends::blas_matrix(*m, *k_l), b = rematkit::backends::blas_matrix(*k_r, *n);
  if (!a || !b) return std::nullopt;
  // Debian's OpenBLAS takes 32-bit sizes (not its ILP64 build).
  for (int64_t v : {m->size, n->size, k_l->size, a->leading, b->leading})
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
  return g;
}

rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  return guarded([&] {
    auto backend = std::make_unique<Backend>();
    for (size_t i = 0; i < n; ++i) {
      const std::string name = options[i].name ? options[i].name : "";
      if (name == "num_threads" && options[i].kind == RK_VALUE_INT && options[i].int_value >= 1 &&
          options[i].int_value <= INT_MAX)
        backend->threads = static_cast<int>(options[i].int_value);
      else
        throw ArgumentError("the blas backend takes num_threads=N (N >= 1)");
    }
    // Said when a backend is made, not when the plugin loads: only programs that use it hear it.
    if (const std::string mismatch = rematkit_blas::core_mismatch(); !mismatch.empty())
      rematkit::plugin::log(RK_LOG_WARN, mismatch);
    rematkit::plugin::log(RK_LOG_DEBUG, "blas: up to " + std::to_string(backend->threads) + " OpenBLAS thread(s) per product");
    *out = reinterpret_cast<rk_backend*>(backend.release());
  });
}
void destroy(rk_backend* backend) { delete reinterpret_cast<Backend*>(backend); }

int32_t supports(const rk_backend*, const rk_equation_view* e) {
  try {  // supports() never fails: an equation it cannot read is one it does not run
    if (rematkit::plugin::has_complex_operand(e)) return 0;  // real arithmetic only
    return gemm_for(e) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// One product's time on one thread, by multiply-adds of one product of the batch: the plain (A B)
// products rematkit_product_backends_bench measured for blas (docs/performance.md, "blas and xsmm,
// settled", has the rows and oneDNN's beside them); the layouts that measured slower cost more.
// Where blas and oneDNN are level the estimate sits a little above oneDNN's, so that oneDNN keeps
// those products and the bias and activation it fuses into them. The same on every thread count:
// which backend runs a product decides its bits, and a step gives the same bits on any (the MPI
// ranks check it against the simulated mesh's).
double expected_ns(const rk_backend*, const rk_equation_view* e) {
  try {
    const std::optional<Gemm> g = gemm_for(e);
    if (!g) return -1;
    const double multiply_adds = static_cast<double>(g->m) * static_cast<double>(g->n) * static_cast<double>(g->k);
    double ns = static_cast<double>(g->batch) *
                rematkit::plugin::measured_ns({{320, 200}, {262144, 8400}, {1048576, 30300}, {8388608, 209500},
                                               {33554432, 812000}, {67108864, 1520000}, {134217728, 2980000},
                                               {268435456, 6080000}, {536870912, 13800000}, {1073741824, 26500000},
                                               {2415919104, 57500000}},
                                              multiply_adds);
    if (g->b.transposed) ns *= 1.5;
    else if (g->a.transposed) ns *= g->k <= 128 ? 1.4 : g->k < 1024 ? 1.3 : 1.0;
    return ns;
  } catch (...) {
    return -1;
  }
}

rk_error* prepare(rk_backend* handle, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    std::optional<Gemm> g = gemm_for(e);
    if (!g) throw std::runtime_error(std::string("blas does not run ") + e->primitive + " in this form");
    g->threads = reinterpret_cast<const Backend*>(handle)->threads;
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
    auto i32 = [](int64_t v) { return static_cast<blasint>(v); };
    rematkit_blas::thread_count().run_on(g.threads, [&] {
      for (int64_t p = 0; p < g.batch; ++p)  // beta 0: C is written, never read (the host's buffer is not cleared)
        cblas_sgemm(CblasRowMajor, cblas_transpose(g.a), cblas_transpose(g.b), i32(g.m), i32(g.n), i32(g.k), 1.0f,
                    a + p * g.a_step, i32(g.a.leading), b + p * g.b_step, i32(g.b.leading), 0.0f, c + p * g.m * g.n,
                    i32(g.n));
    });
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Gemm*>(kernel); }

// Names the kernels OpenBLAS chose (REMATKIT_LOG=1 shows it) and remembers its thread count.
rk_error* initialize(const rk_host_api* host) {
  rematkit::plugin::remember_host(host);
  default_threads = std::max(1, openblas_get_num_threads());
  rematkit::plugin::log(RK_LOG_INFO, rematkit_blas::core_report());
  return nullptr;
}

// execute() may run on several threads at once: OpenBLAS's pthreads build takes concurrent calls.
const rk_backend_api kBackend = {sizeof(rk_backend_api), "blas", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, &expected_ns};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "blas-backend", "0.1.0",
                            &initialize, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
