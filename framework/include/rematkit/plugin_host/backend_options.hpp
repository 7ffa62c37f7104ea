// Which backends run a program's equations, with how many threads, in how much memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "rematkit/core_export.hpp"

namespace rematkit {

class PluginRegistry;

// Everything that says how a program runs: a Plan's, a training step's, the budget solver's and
// the runners' one set of options.
struct BackendOptions {
  // Backends to try for each equation, in order; empty: the fastest installed
  // (preference_or_fastest).
  std::vector<std::string> preference{"reference"};
  const PluginRegistry* plugins = nullptr;  // where they come from; default_plugins() if null
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
  // An option a backend of `preference` is created with, beside num_threads: the plugin's own
  // (onednn's bf16_matmul or weights_layout, docs/backends.md), an integer or a string.
  struct BackendOption {
    std::string backend, name;
    std::variant<int64_t, std::string> value;
  };
  std::vector<BackendOption> backend_options{};
};

// "BACKEND.NAME=VALUE" (e.g. onednn.weights_layout=as_it_lies) as a backend option: VALUE an
// integer where it reads as one, else a string. Throws Error saying what is wrong.
REMATKIT_CORE_EXPORT BackendOptions::BackendOption parse_backend_option(const std::string& text);

// `options.preference`, or where it is empty the installed ones of onednn, highway and reference,
// fastest first (PluginRegistry::fastest_backends): the one place an empty preference is read.
REMATKIT_CORE_EXPORT std::vector<std::string> preference_or_fastest(const BackendOptions& options);

}  // namespace rematkit
