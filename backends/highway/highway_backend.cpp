// The Highway backend plugin: f32 elementwise kernels, comparisons and two-case select_n (operands
// with size-1 dims are expanded into the workspace first), reductions, copies and rev, softmax along the
// last axis, and dot_general with any dimension numbers (operands are permuted into the GEMM's
// layout in the kernel's workspace when they are not in it already, and B's panels are packed there
// too). Every scratch byte is in the workspace the host gives, so a run allocates nothing. It
// declines everything else (and ranks above kMaxRank) when asked, so the equation goes to the next
// backend in the user's list. The kernel kinds and the order they are chosen in: kernel_list.hpp;
// this file holds the plugin's C ABI entry points.
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "highway/kernel_list.hpp"
#include "highway/target_cap.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace {

using rematkit::hwy_backend::Kernel;
using rematkit::hwy_backend::choose_kernel;
using rematkit::plugin::guarded;

rk_error* create(const rk_value*, size_t, rk_backend** out) {
  static int instance;
  *out = reinterpret_cast<rk_backend*>(&instance);  // stateless
  return nullptr;
}
void destroy(rk_backend*) {}
int32_t supports(const rk_backend*, const rk_equation_view* e) {
  try {  // supports() never fails: an equation it cannot read is one it does not run
    if (rematkit::plugin::has_complex_operand(e)) return 0;  // real arithmetic only
    return choose_kernel(e) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}
// One call's time on one thread, for the kinds that measured one (elementwise_costs.hpp); -1 for
// the others.
double expected_ns(const rk_backend*, const rk_equation_view* e) {
  try {
    const std::optional<Kernel> k = choose_kernel(e);
    if (!k) return -1;
    return std::visit(
        [](const auto& kind) {
          if constexpr (requires { kind.expected_ns(); }) return kind.expected_ns();
          else return -1.0;
        },
        *k);
  } catch (...) {
    return -1;
  }
}
rk_error* prepare(rk_backend*, const rk_equation_view* e, rk_kernel** kernel, size_t* workspace_bytes) {
  return guarded([&] {
    std::optional<Kernel> k = choose_kernel(e);
    if (!k) throw std::runtime_error(std::string("highway does not run ") + e->primitive + " in this form");
    *workspace_bytes = std::visit([](const auto& kind) { return kind.workspace(); }, *k);
    *kernel = reinterpret_cast<rk_kernel*>(new Kernel(std::move(*k)));
  });
}
rk_error* execute(rk_kernel* kernel, const rk_tensor_view* in, size_t, const rk_tensor_view* out, size_t, void* workspace,
                  size_t) {
  return guarded([&] {
    std::visit([&](const auto& kind) { kind.run(in, out, workspace); }, *reinterpret_cast<const Kernel*>(kernel));
  });
}
void kernel_destroy(rk_kernel* kernel) { delete reinterpret_cast<Kernel*>(kernel); }

const rk_backend_api kBackend = {sizeof(rk_backend_api), "highway", RK_BACKEND_THREAD_SAFE, &create, &destroy,
                                 &supports, &prepare, &execute, &kernel_destroy, &expected_ns};
const rk_backend_api* const kBackends[] = {&kBackend};
// Caps the dispatch where REMATKIT_HIGHWAY_MAX_TARGET asks (target_cap.hpp; a name it cannot cap at
// is warned about, not fatal: the backend stays in the user's list, as it would without the
// variable), and says which SIMD target the kernels dispatch to on this CPU (REMATKIT_LOG=1 shows it).
rk_error* initialize(const rk_host_api* host) {
  rematkit::plugin::remember_host(host);
  if (const char* cap = std::getenv("REMATKIT_HIGHWAY_MAX_TARGET"))
    if (const std::optional<std::string> problem = rematkit::hwy_backend::cap_target(cap))
      rematkit::plugin::log(RK_LOG_WARN, "highway: " + *problem + "; the dispatch is not capped");
  rematkit::plugin::log(RK_LOG_INFO, std::string("highway: kernels dispatch to ") + rematkit::hwy_backend::chosen_target());
  return nullptr;
}

const rk_plugin_api kApi = {sizeof(rk_plugin_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, "highway-backend", "0.1.0",
                            &initialize, 0, nullptr, 1, kBackends};

}  // namespace

extern "C" RK_PLUGIN_EXPORT const rk_plugin_api* rk_plugin_get_api(void) { return &kApi; }
