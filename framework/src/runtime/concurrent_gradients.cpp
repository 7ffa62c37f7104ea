#include "rematkit/runtime/concurrent_gradients.hpp"

#include <tbb/task_group.h>

#include "rematkit/runtime/step_runner.hpp"

namespace rematkit {

std::vector<GradientResult> run_gradients(const std::vector<const Linearization*>& linearizations,
                                          const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                          const BackendOptions& backends, Concurrency concurrency) {
  std::vector<GradientResult> results(linearizations.size());
  if (concurrency == Concurrency::kOneByOne) {
    for (size_t i = 0; i < linearizations.size(); ++i)
      results[i] = OneShotRunner(*linearizations[i], backends).run(constants, arguments);
    return results;
  }
  BackendOptions one_thread = backends;
  one_thread.threads = 1;
  tbb::task_group tasks;  // wait() rethrows the first exception a task threw
  for (size_t i = 0; i < linearizations.size(); ++i)
    tasks.run([&, i] { results[i] = OneShotRunner(*linearizations[i], one_thread).run(constants, arguments); });
  tasks.wait();
  return results;
}

}  // namespace rematkit
