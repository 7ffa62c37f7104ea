// Which backends run a program's equations, and with how many threads.
#pragma once

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
};

}  // namespace rematkit
