// Running equations on backends from plugins: each equation is bound, at plan time, to the first
// backend in the preference list that supports it, and its kernel is prepared once.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rematkit/graph.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/tensor.hpp"

namespace rematkit {

class BackendPlan {
 public:
  // A bad-input Error if a backend is unknown (naming those there are) or no backend in the list
  // supports an equation (naming it and where it comes from).
  BackendPlan(const FlatGraph& graph, const std::vector<int>& eqns, const PluginRegistry& plugins,
              const std::vector<std::string>& preference);
  ~BackendPlan();
  BackendPlan(const BackendPlan&) = delete;
  BackendPlan& operator=(const BackendPlan&) = delete;

  // Runs the equations in order; each reads its inputs from `values` and writes its outputs there.
  // The tensors cross to the backends as f32 / i32 / u8 host buffers.
  void run(std::vector<std::optional<Tensor>>& values) const;
  // The backend each equation runs on, in order.
  const std::vector<std::string>& backend_of_step() const { return backend_names_; }
  const std::vector<int>& equations() const { return eqns_; }

 private:
  struct Instances;
  const FlatGraph& graph_;
  std::vector<int> eqns_;
  std::vector<std::string> backend_names_;
  std::unique_ptr<Instances> instances_;
};

}  // namespace rematkit
