// The oneDNN backend plugin (oneDNN 2.6, whose CPU runtime is OpenMP): dot_general through
// dnnl::matmul, 2-D and batched, with transposed operands expressed as strides rather than copies.
// Primitives are created at plan time and cached by shape. Threads: each execute() sets the
// calling thread's OpenMP team to the backend's num_threads option (default: every core), so a
// scheduler that runs several plans at once gives each a share and never oversubscribes the cores.
// Equations it does not run are declined at plan time and go to the next backend listed.
#include <omp.h>

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <thread>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::plugin::ArgumentError;
using rematkit::plugin::find_param;
using rematkit::plugin::guarded;
using rematkit::plugin::ints_of;
using Dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

struct Backend {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::mutex mutex;                          // guards the cache: plans may be built in parallel
  std::map<std::string, dnnl::matmul> cache;  // by shape and strides
};

struct Kernel {
  Backend* backend;
  dnnl::matmul matmul;
  dnnl::memory::desc a, b, c;
};

// An operand of a matrix product as oneDNN sees it: logical dims (batch, rows, cols) and the
// strides that read them from the row-major buffer.
struct Layout {
  Dims dims, strides;
};

// Logical [batch?, rows, cols] of a row-major operand of `shape` whose dim `contract` is the shared
// k: for lhs (rows = m, cols = k), for rhs (rows = k, cols = n). Vectors become 1-row / 1-column.
bool layout(const Dims& shape, int64_t contract, bool batched, bool is_lhs, Layout& out) {
  const int64_t nb = batched ? 1 : 0;
  const int64_t rank = static_cast<int64_t>(shape.size()) - nb;
  if (rank < 1 || rank > 2 || contract < nb) return false;
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * shape[i + 1];
  int64_t k = shape[contract], k_stride = st[contract], free = 1, free_stride = 1;
  if (rank == 2) {
    const int64_t other = contract == nb ? nb + 1 : nb;
    free = shape[other];
    free_stride = st[other];
  }
  Dims dims = is_lhs ? Dims{free, k} : Dims{k, free};
  Dims strides = is_lhs ? Dims{free_stride, k_stride} : Dims{k_stride, free_stride};
  if (batched) {
    dims.insert(dims.begin(), shape[0]);
    strides.insert(strides.begin(), st[0]);
  }
  out = {dims, strides};
  return true;
}

bool plan(const rk_equation_view* e, Layout& a, Layout& b, Layout& c) {
  if (std::string(e->primitive) != "dot_general" || e->num_inputs != 2) return false;
  for (size_t i = 0; i < 2; ++i)
    if (e->inputs[i].dtype != RK_DTYPE_F32) return false;
  const rk_value* dn = find_param(e, "dimension_numbers");
  if (!dn || dn->num_items != 2) return false;
  const Dims lc = ints_of(dn->items[0].items[0]), rc = ints_of(dn->items[0].items[1]);
  const Dims lb = ints_of(dn->items[1].items[0]), rb = ints_of(dn->items[1].items[1]);
  if (lc.size() != 1 || rc.size() != 1 || lb != rb || lb.size() > 1 || (lb.size() == 1 && lb[0] != 0)) return false;
  const bool batched = !lb.empty();
  const Dims ls(e->inputs[0].shape, e->inputs[0].shape + e->inputs[0].rank);
  const Dims rs(e->inputs[1].shape, e->inputs[1].shape + e->inputs[1].rank);
  if (!layout(ls, lc[0], batched, true, a) || !layout(rs, rc[0], batched, false, b)) return false;
  // The output is row-major (batch, m, n), which is dot_general's (batch, lhs free, rhs free).
  const size_t r = a.dims.size();
  Dims dims = a.dims;
  dims[r - 1] = b.dims[r - 1];
  Dims strides(r, 1);
  for (int i = static_cast<int>(r) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  c = {dims, strides};
  return true;
}

std::string key(const Layout& a, const Layout& b) {
  std::string k;
  for (const Dims* d : {&a.dims, &a.strides, &b.dims, &b.strides}) {
    for (int64_t x : *d) k += std::to_string(x) + ",";
    k += ";";
  }
  return k;
}

rk_error* create(const rk_value* options, size_t n, rk_backend** out) {
  return guarded([&] {
    auto backend = std::make_unique<Backend>();
    for (size_t i = 0; i < n; ++i) {
      if (!options[i].name || std::string(options[i].name) != "num_threads" || options[i].kind != RK_VALUE_INT ||
          options[i].int_value < 1)
        throw ArgumentError("the onednn backend takes one option, num_threads=N (N >= 1)");
      backend->threads = static_cast<int>(options[i].int_value);
    }
    *out = reinterpret_cast<rk_backend*>(backend.release());
  });
}
void destroy(rk_backend* backend) { delete reinterpret_cast<Backend*>(backend); }

int32_t supports(const rk_backend*, const rk_equation_view* e) {
  Layout a, b, c;
  return plan(e, a, b, c) ? 1 : 0;
}

rk_error* prepare(rk_backend* handle, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    Backend& backend = *reinterpret_cast<Backend*>(handle);
    Layout a, b, c;
    if (!plan(e, a, b, c)) throw std::runtime_error("onednn does not run this dot_general");
    auto k = std::make_unique<Kernel>();
    k->backend = &backend;
    k->a = dnnl::memory::desc(a.dims, dt::f32, a.strides);
    k->b = dnnl::memory::desc(b.dims, dt::f32, b.strides);
    k->c = dnnl::memory::desc(c.dims, dt::f32, c.strides);
    std::lock_guard<std::mutex> lock(backend.mutex);
    auto [it, fresh] = backend.cache.try_emplace(key(a, b));
    if (fresh)  // the oneDNN 2.x API: an operation descriptor, then its primitive descriptor
      it->second = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(k->a, k->b, k->c), backend.engine));
    k->matmul = it->second;
    *kernel = reinterpret_cast<rk_kernel*>(k.release());
    *workspace_bytes = 0;
  });
}

rk_error* execute(rk_kernel* handle, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void*, size_t) {
  return guarded([&] {
    const Kernel& k = *reinterpret_cast<const Kernel*>(handle);
    omp_set_num_threads(k.backend->threads);  // this calling thread's OpenMP team
    dnnl::stream stream(k.backend->engine);
    dnnl::memory a(k.a, k.backend->engine, in[0].data), b(k.b, k.backend->engine, in[1].data),
        c(k.c, k.backend->engine, out[0].data);
    k.matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

// execute() is called from several threads at once only with distinct streams: it makes its own.
const rk_backend_api kBackend = {sizeof(rk_backend_api), "onednn", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "onednn-backend", "0.1.0",
                            &rematkit::plugin::remember_host, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
