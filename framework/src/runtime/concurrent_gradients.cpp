#include "rematkit/runtime/concurrent_gradients.hpp"

#include <tbb/task_group.h>

#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace rematkit {
namespace {

// One gradient: a step program on one device, or one per device of the mesh `lin` is placed on.
GradientResult gradient_of(const Linearization& lin, const std::vector<Tensor>& constants,
                           const std::vector<Tensor>& arguments, const BackendOptions& backends) {
  if (lin.graph.mesh) return SimulatedDevices(lin, *lin.graph.mesh, backends).run(constants, arguments);
  return OneShotRunner(lin, backends).run(constants, arguments);
}

}  // namespace

std::vector<GradientResult> run_gradients(const std::vector<const Linearization*>& linearizations,
                                          const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                          const BackendOptions& backends, Concurrency concurrency) {
  std::vector<GradientResult> results(linearizations.size());
  if (concurrency == Concurrency::kOneByOne) {
    for (size_t i = 0; i < linearizations.size(); ++i)
      results[i] = gradient_of(*linearizations[i], constants, arguments, backends);
    return results;
  }
  BackendOptions one_thread = backends;
  one_thread.threads = 1;
  tbb::task_group tasks;  // wait() rethrows the first exception a task threw
  for (size_t i = 0; i < linearizations.size(); ++i)
    tasks.run([&, i] { results[i] = gradient_of(*linearizations[i], constants, arguments, one_thread); });
  tasks.wait();
  return results;
}

}  // namespace rematkit
