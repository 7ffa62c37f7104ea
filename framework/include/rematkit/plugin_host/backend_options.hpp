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
  // what it reads may live longer: kUnlessPeakRises fuses only as far as the predicted peak stays
  // that of no fusion (choose_fusion, step_program.hpp).
  enum class Fusion { kOff, kUnlessPeakRises };
  Fusion fusion = Fusion::kUnlessPeakRises;
  // Whether a program's debug prints (debug_callback, debug_print) print their operands to
  // standard error as their steps run; otherwise those steps do nothing (the CLI's --debug-prints).
  bool debug_prints = false;
};

}  // namespace rematkit
