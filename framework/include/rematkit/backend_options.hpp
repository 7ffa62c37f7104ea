// Which backends run a program's equations, with how many threads, in how much memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rematkit {

class PluginRegistry;

struct BackendOptions {
  std::vector<std::string> preference{"reference"};  // backends to try for each equation, in order
  const PluginRegistry* plugins = nullptr;            // where they come from; default_plugins() if null
  // Threads a program may use inside one step; 0: every core. With N > 0 it runs in a oneTBB
  // arena of N threads and each backend is created with the option num_threads=N (for oneDNN's
  // OpenMP team; backends that thread with oneTBB or not at all ignore it).
  int threads = 0;
  // Bytes a step's arena may take (every memory space together); a runner whose predicted peak is
  // over it is refused before allocating (memory_limit.hpp). nullopt: the machine's available
  // memory when the runner is made.
  std::optional<int64_t> max_memory{};
  // Whether a step program runs chains of equations as one fused kernel where a backend offers one
  // (a product with its bias and activation, elementwise ops over one shape: fusion_steps.hpp). The
  // results are those of the parts run one by one. A fused step runs where its last part was, so
  // what it reads may live longer: by default a program whose fused plan would have a higher
  // predicted peak runs unfused.
  enum class Fusion { kOff, kUnlessPeakRises, kAlways };
  Fusion fusion = Fusion::kUnlessPeakRises;
  // Whether a training step runs each param's SGD update inside the kernel that computes the
  // param's gradient where a backend takes it (highway does, in the GEMM's epilogue;
  // scheduler/sgd_updates.hpp), or as a pass of its own after the backward pass. Off by default:
  // on highway the update inside the epilogue measured slower than the pass it saves (README,
  // "Fused kernels"). The params come out the same bits either way. Needs fusion not kOff.
  bool fuse_updates = false;
};

}  // namespace rematkit
