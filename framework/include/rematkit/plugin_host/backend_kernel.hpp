// Running equations on backends from plugins: a backend instance (rk_backend), an equation prepared
// on it once (rk_kernel) and run on host buffers, and the backends of a preference list, which bind
// each equation to the first of them that runs it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/graph.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

struct rk_backend;
struct rk_kernel;

namespace rematkit {

class BackendInstance;

// An equation prepared on a backend: run it on buffers of the prepared types.
class REMATKIT_CORE_EXPORT PreparedKernel {
 public:
  ~PreparedKernel();
  PreparedKernel(const PreparedKernel&) = delete;
  PreparedKernel& operator=(const PreparedKernel&) = delete;
  // The scratch bytes each run needs (the backend's, from prepare): a step program gives a kernel
  // step a buffer of this size in its arena, so that the predicted peak counts it.
  size_t workspace_bytes() const { return workspace_bytes_; }
  // Runs on buffers of the prepared types (f32 / i32 / u8, row-major, 64-byte aligned), with
  // `workspace` (at least workspace_bytes(), 64-byte aligned; null when that is 0) as its scratch.
  void execute(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, std::byte* workspace,
               size_t workspace_size) const;
  // The same with a workspace allocated for this one call: for a kernel run on its own (tests,
  // benchmarks), outside any memory plan.
  void execute_allocating_workspace(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) const;
  const std::string& backend() const { return backend_; }

 private:
  friend class BackendInstance;
  PreparedKernel() = default;
  const struct rk_backend_api* api_ = nullptr;
  rk_kernel* kernel_ = nullptr;
  std::string backend_, what_;
  std::vector<Type> inputs_, outputs_;
  size_t workspace_bytes_ = 0;
  // A backend without RK_BACKEND_THREAD_SAFE runs one execute at a time, across all its kernels.
  std::mutex* one_at_a_time_ = nullptr;
};

// One backend from a plugin, created once.
class REMATKIT_CORE_EXPORT BackendInstance {
 public:
  // A bad-input Error for an unknown backend (naming those there are) or options it refuses.
  // `options` are named values such as num_threads=1 (the onednn backend's).
  BackendInstance(const PluginRegistry& plugins, const std::string& name, const Params& options = {});
  ~BackendInstance();
  BackendInstance(const BackendInstance&) = delete;
  BackendInstance& operator=(const BackendInstance&) = delete;

  // The equation prepared on this backend, or nullptr if the backend does not run it.
  // `what` names the equation in error messages.
  std::unique_ptr<PreparedKernel> prepare(Prim prim, const Params& params, const std::vector<Type>& inputs,
                                          const std::vector<Type>& outputs, const std::string& what);
  // The same for an equation the host makes up, such as a fused one ("rk_fusion", fusion.hpp).
  std::unique_ptr<PreparedKernel> prepare(std::string_view primitive, const Params& params,
                                          const std::vector<Type>& inputs, const std::vector<Type>& outputs,
                                          const std::string& what);
  // Whether the backend would run the equation (its supports(): cheap, prepares nothing).
  bool supports(Prim prim, const Params& params, const std::vector<Type>& inputs, const std::vector<Type>& outputs) const;
  // Its estimate of one run of the equation in nanoseconds (ABI 1.7's expected_ns), or nullopt.
  std::optional<double> expected_ns(Prim prim, const Params& params, const std::vector<Type>& inputs,
                                    const std::vector<Type>& outputs) const;
  const std::string& name() const { return name_; }
  // The ABI minor its plugin was built against: what the host may offer it (docs/plugin-abi.md).
  int abi_minor() const { return abi_minor_; }

 private:
  const struct rk_backend_api* api_;
  rk_backend* backend_ = nullptr;
  std::string name_;
  int abi_minor_ = 0;                    // the plugin's; before 1.3 it knows f32, i32 and bool only
  std::mutex* one_at_a_time_ = nullptr;  // for a backend that is not thread-safe; shared by its instances
};

// The backends of a preference list, each created once with the options' thread count.
class REMATKIT_CORE_EXPORT BackendSet {
 public:
  // A bad-input Error for an empty list, an unknown backend or a thread count below 0.
  explicit BackendSet(const BackendOptions& options);
  // `eqn` of `graph` prepared on the backend chosen() names; a bad-input Error naming the equation
  // and where it comes from if none runs it.
  std::unique_ptr<PreparedKernel> bind(const FlatGraph& graph, const FlatEquation& eqn);
  // The index in the preference list of the backend that runs `eqn` (-1 for none): the first that
  // supports it, unless a later one that supports it estimates it faster and the first estimates
  // it too (rk_backend_api.expected_ns: small elementwise ops leave oneDNN for Highway).
  int chosen(const FlatGraph& graph, const FlatEquation& eqn) const;
  size_t size() const { return backends_.size(); }
  BackendInstance& backend(size_t index) { return *backends_.at(index); }
  // Whether fusion_steps.hpp may fuse equations (BackendOptions::fusion not kOff).
  bool fuses() const { return fuse_; }
  // BackendOptions::debug_prints.
  bool debug_prints() const { return debug_prints_; }

 private:
  bool fuse_ = true;
  bool debug_prints_ = false;
  std::vector<std::unique_ptr<BackendInstance>> backends_;  // in preference order
};

}  // namespace rematkit
