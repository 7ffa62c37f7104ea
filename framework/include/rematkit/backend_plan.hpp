// Running equations on backends from plugins: each equation is bound, at plan time, to the first
// backend in the preference list that supports it, and its kernel is prepared once.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "rematkit/graph.hpp"
#include "rematkit/plugin/rk_backend.h"
#include "rematkit/plugin_registry.hpp"

namespace rematkit {

// One backend instance from a plugin (rk_backend), and an equation prepared on it (rk_kernel), run
// on host buffers. BackendPlan is built from these; benchmarks use them directly.
class BackendInstance;

class PreparedKernel {
 public:
  ~PreparedKernel();
  PreparedKernel(const PreparedKernel&) = delete;
  PreparedKernel& operator=(const PreparedKernel&) = delete;
  // Runs on buffers of the prepared types (f32 / i32 / u8, row-major, 64-byte aligned).
  void execute(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) const;
  const std::string& backend() const { return backend_; }

 private:
  friend class BackendInstance;
  PreparedKernel() = default;
  const rk_backend_api* api_ = nullptr;
  rk_kernel* kernel_ = nullptr;
  std::string backend_, what_;
  std::vector<Type> inputs_, outputs_;
  size_t workspace_bytes_ = 0;
};

class BackendInstance {
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
  const std::string& name() const { return name_; }

 private:
  const rk_backend_api* api_;
  rk_backend* backend_ = nullptr;
  std::string name_;
};

class BackendPlan {
 public:
  // A bad-input Error if a backend is unknown (naming those there are) or no backend in the list
  // supports an equation (naming it and where it comes from).
  // `options` go to every backend's create (num_threads=N).
  BackendPlan(const FlatGraph& graph, const std::vector<int>& eqns, const PluginRegistry& plugins,
              const std::vector<std::string>& preference, const Params& options = {});
  ~BackendPlan();
  BackendPlan(const BackendPlan&) = delete;
  BackendPlan& operator=(const BackendPlan&) = delete;

  // The kernel of step `step` (GradientPlan runs them over its buffers).
  const PreparedKernel& kernel(size_t step) const { return *kernels_.at(step); }
  // The backend each equation runs on, in order.
  const std::vector<std::string>& backend_of_step() const { return backend_names_; }
  const std::vector<int>& equations() const { return eqns_; }

 private:
  const FlatGraph& graph_;
  std::vector<int> eqns_;
  std::vector<std::string> backend_names_;
  std::vector<std::unique_ptr<BackendInstance>> backends_;  // in preference order
  std::vector<std::unique_ptr<PreparedKernel>> kernels_;    // per step
};

}  // namespace rematkit
