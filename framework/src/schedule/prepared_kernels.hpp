// The kernels of a plan, each prepared once: choose_fusion compares several plans of one
// linearization, and every equation, fused chain and loop body they share is bound to its backend
// and prepared (oneDNN primitives created, Highway plans made) only the first time one asks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "loop_program.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"

namespace rematkit {

class PreparedKernels {
 public:
  explicit PreparedKernels(BackendSet& backends) : backends_(backends) {}

  BackendSet& backends() { return backends_; }
  // BackendSet::bind, BackendSet::chosen and build_loop_program, each asked once per equation.
  std::shared_ptr<const PreparedKernel> equation(const FlatGraph& graph, const FlatEquation& eqn);
  int chosen(const FlatGraph& graph, const FlatEquation& eqn);
  std::shared_ptr<const LoopProgram> loop(const FlatGraph& graph, const FlatEquation& eqn);

  // A fused equation's kernel: its parts (graph equations) and its operands and results say all
  // of it, so `prepare` runs once per such key. nullptr where it prepared nothing.
  struct FusedKey {
    const FlatGraph* graph;
    std::vector<int> eqns;
    std::vector<ValueId> inputs, outputs;
    auto operator<=>(const FusedKey&) const = default;
  };
  std::shared_ptr<const PreparedKernel> fused(const FusedKey& key,
                                              const std::function<std::unique_ptr<PreparedKernel>()>& prepare);

 private:
  BackendSet& backends_;
  std::map<const FlatEquation*, std::shared_ptr<const PreparedKernel>> equations_;
  std::map<const FlatEquation*, int> chosen_;
  std::map<const FlatEquation*, std::shared_ptr<const LoopProgram>> loops_;
  std::map<FusedKey, std::shared_ptr<const PreparedKernel>> fused_;
};

}  // namespace rematkit
