// This process's peak resident memory over a window (a sweep group, a benchmark): Linux's VmHWM,
// reset to the current RSS where the window starts (writing 5 to /proc/self/clear_refs). Host
// memory against the planned peak: a step whose arena holds the plan should not need much more.
#pragma once
#include <cstdint>
#include <optional>

#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

class REMATKIT_SWEEP_EXPORT PeakRss {
 public:
  PeakRss();  // starts the window
  // The most resident bytes since the window started; the process's lifetime peak where the peak
  // could not be reset; nullopt where /proc/self/status cannot be read.
  std::optional<int64_t> bytes() const;
  // Whether bytes() covers this window only (the reset worked).
  bool windowed() const { return windowed_; }

 private:
  bool windowed_ = false;
};

}  // namespace rematkit::sweep
