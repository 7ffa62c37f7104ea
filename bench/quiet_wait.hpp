// Waiting for a quiet machine before a timing starts, as the peers' scripts do before each run, so
// that both sides of a comparison start on a machine in the same state. Other processes' load is
// rematkit::sweep::MachineLoad's.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "rematkit/sweep/machine_load.hpp"

namespace rematkit::bench {

struct QuietWait {
  double seconds = 0;  // waited
  double cores = -1;   // other processes' load in the last one-second window, in cores; -1: unknown
};

// Waits until other processes use under `cores` cores over a one-second window, or until
// `max_seconds` have passed (0: one window, no wait).
inline QuietWait wait_until_quiet(double cores, double max_seconds) {
  const auto started = std::chrono::steady_clock::now();
  const double machine = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  QuietWait out;
  while (true) {
    const sweep::MachineLoad window;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::optional<double> share = window.others_share();
    out.cores = share ? *share * machine : -1;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!share || out.cores < cores || out.seconds >= max_seconds) return out;
  }
}

}  // namespace rematkit::bench
