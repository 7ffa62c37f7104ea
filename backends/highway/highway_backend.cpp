// The Highway backend plugin: f32 elementwise kernels on same-shape (or scalar) operands, copies,
// and dot_general where it is a (batched) matrix product. It declines everything else at plan
// time, so a plan falls back to the next backend in the user's list.
#include <string>
#include <vector>

#include "highway/kernels.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::hwy_backend::Binary;
using rematkit::hwy_backend::Unary;
using rematkit::plugin::find_param;
using rematkit::plugin::guarded;
using rematkit::plugin::ints_of;
using Dims = std::vector<int64_t>;

struct Kernel {
  enum class Kind { kUnary, kBinary, kGemm } kind;
  int op = 0;
  bool a_scalar = false, b_scalar = false;
  size_t n = 0;                              // elements of the output
  size_t batch = 1, m = 0, cols = 0, k = 0;  // for kGemm
};

Dims shape_of(const rk_type& t) { return Dims(t.shape, t.shape + t.rank); }

size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t x : d) n *= static_cast<size_t>(x);
  return n;
}

bool all_f32(const rk_equation_view* e) {
  for (size_t i = 0; i < e->num_inputs; ++i)
    if (e->inputs[i].dtype != RK_DTYPE_F32) return false;
  for (size_t i = 0; i < e->num_outputs; ++i)
    if (e->outputs[i].dtype != RK_DTYPE_F32) return false;
  return true;
}

const std::pair<const char*, Unary> kUnaries[] = {
    {"neg", Unary::kNeg},   {"exp", Unary::kExp},           {"log", Unary::kLog},     {"sin", Unary::kSin},
    {"cos", Unary::kCos},   {"tanh", Unary::kTanh},         {"logistic", Unary::kLogistic},
    {"sqrt", Unary::kSqrt}, {"rsqrt", Unary::kRsqrt},       {"square", Unary::kSquare}, {"relu", Unary::kRelu},
    {"name", Unary::kCopy}, {"stop_gradient", Unary::kCopy}, {"reshape", Unary::kCopy}, {"squeeze", Unary::kCopy}};
const std::pair<const char*, Binary> kBinaries[] = {{"add", Binary::kAdd}, {"sub", Binary::kSub}, {"mul", Binary::kMul},
                                                    {"div", Binary::kDiv}, {"max", Binary::kMax}, {"min", Binary::kMin}};

// The kernel for `e`, or false when this backend does not run it.
bool plan(const rk_equation_view* e, Kernel& k) {
  if (!all_f32(e) || e->num_outputs != 1) return false;
  const std::string p = e->primitive;
  const Dims out = shape_of(e->outputs[0]);
  k.n = count(out);
  for (const auto& [name, op] : kUnaries) {
    if (p != name) continue;
    k.kind = Kernel::Kind::kUnary;
    k.op = static_cast<int>(op);
    return true;
  }
  for (const auto& [name, op] : kBinaries) {
    if (p != name) continue;
    const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
    k.a_scalar = a.empty() && !out.empty();
    k.b_scalar = b.empty() && !out.empty();
    if ((!k.a_scalar && a != out) || (!k.b_scalar && b != out)) return false;  // size-1 broadcasting: not here
    k.kind = Kernel::Kind::kBinary;
    k.op = static_cast<int>(op);
    return true;
  }
  if (p == "dot_general") {
    const rk_value* dn = find_param(e, "dimension_numbers");
    if (!dn || dn->num_items != 2) return false;
    const Dims lc = ints_of(dn->items[0].items[0]), rc = ints_of(dn->items[0].items[1]);
    const Dims lb = ints_of(dn->items[1].items[0]), rb = ints_of(dn->items[1].items[1]);
    const Dims a = shape_of(e->inputs[0]), b = shape_of(e->inputs[1]);
    k.kind = Kernel::Kind::kGemm;
    const int64_t nb = static_cast<int64_t>(lb.size());
    // (batch..., m, k) x (batch..., k, n), or vectors on either side: a row-major matrix product.
    if (lb != rb || lc.size() != 1) return false;
    for (int64_t i = 0; i < nb; ++i)
      if (lb[i] != i) return false;
    const int64_t ar = static_cast<int64_t>(a.size()) - nb, br = static_cast<int64_t>(b.size()) - nb;
    if (ar < 1 || ar > 2 || br < 1 || br > 2) return false;
    if (lc[0] != static_cast<int64_t>(a.size()) - 1 || rc[0] != nb) return false;
    k.batch = count(Dims(a.begin(), a.begin() + nb));
    k.m = ar == 2 ? static_cast<size_t>(a[nb]) : 1;
    k.k = static_cast<size_t>(a.back());
    k.cols = br == 2 ? static_cast<size_t>(b.back()) : 1;
    return true;
  }
  return false;
}

rk_error* create(const rk_value*, size_t, rk_backend** out) {
  static int instance;
  *out = reinterpret_cast<rk_backend*>(&instance);  // stateless
  return nullptr;
}
void destroy(rk_backend*) {}
int32_t supports(const rk_backend*, const rk_equation_view* e) {
  Kernel k;
  return plan(e, k) ? 1 : 0;
}
rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    Kernel k;
    if (!plan(e, k)) throw std::runtime_error(std::string("highway does not run ") + e->primitive + " in this form");
    *kernel = reinterpret_cast<rk_kernel*>(new Kernel(k));
    *workspace_bytes = 0;
  });
}
rk_error* execute(rk_kernel* kernel, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void*, size_t) {
  return guarded([&] {
    const Kernel& k = *reinterpret_cast<const Kernel*>(kernel);
    auto f = [](const rk_tensor_view& t) { return static_cast<float*>(t.data); };
    switch (k.kind) {
      case Kernel::Kind::kUnary: rematkit::hwy_backend::unary(static_cast<Unary>(k.op), f(in[0]), f(out[0]), k.n); break;
      case Kernel::Kind::kBinary:
        rematkit::hwy_backend::binary(static_cast<Binary>(k.op), f(in[0]), k.a_scalar, f(in[1]), k.b_scalar, f(out[0]), k.n);
        break;
      case Kernel::Kind::kGemm:
        for (size_t b = 0; b < k.batch; ++b)
          rematkit::hwy_backend::gemm(f(in[0]) + b * k.m * k.k, f(in[1]) + b * k.k * k.cols, f(out[0]) + b * k.m * k.cols,
                                      k.m, k.cols, k.k);
        break;
    }
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

const rk_backend_api kBackend = {sizeof(rk_backend_api), "highway", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy};
const rk_backend_api* const kBackends[] = {&kBackend};
const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "highway-backend", "0.1.0",
                            &rematkit::plugin::remember_host, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
