// How busy the rest of the machine is while steps are timed (a sweep's rows, the benchmarks): the
// CPU time every process spent (/proc/stat) less this process's own (getrusage), as a share of all
// cores' time. A timing taken while someone else was building says so instead of passing for a
// clean one.
#pragma once
#include <optional>

#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

class REMATKIT_SWEEP_EXPORT MachineLoad {
 public:
  MachineLoad();  // starts the window
  // Other processes' share of the machine's CPU time since the window started, 0 to 1; nullopt
  // where /proc/stat cannot be read.
  std::optional<double> others_share() const;

 private:
  struct Reading {
    double busy = 0, total = 0;  // machine-wide CPU seconds, all cores
    double own = 0;              // this process's CPU seconds, all threads
    bool ok = false;
  };
  static Reading read();
  Reading start_;
};

}  // namespace rematkit::sweep
