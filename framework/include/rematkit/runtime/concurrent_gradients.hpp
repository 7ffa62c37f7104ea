// Several gradients at once: one oneTBB task per linearization (one per policy, typically) builds
// its step program and runs it. Run together, each gets one intra-op thread, so the tasks fill the
// cores without oversubscribing them (oneDNN's OpenMP team included, through num_threads=1).
#pragma once

#include <vector>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {

enum class Concurrency {
  kOneByOne,  // one after another, each with BackendOptions::threads
  kAllAtOnce, // as concurrent oneTBB tasks, one thread each
};

// The gradient of each linearization on the same inputs, in order (one placed on a mesh: a step
// per device, SimulatedDevices). The first error any task raises is rethrown once all tasks have
// stopped.
REMATKIT_CORE_EXPORT std::vector<GradientResult> run_gradients(const std::vector<const Linearization*>& linearizations,
                                          const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments,
                                          const BackendOptions& backends, Concurrency concurrency);

}  // namespace rematkit
