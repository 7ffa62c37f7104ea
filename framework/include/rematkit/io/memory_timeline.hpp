// The memory timeline `rematkit memory --timeline` draws: device bytes alive at each step, stacked by
// buffer kind, over the forward, recompute and backward passes, the peak marked; one panel per report.
#pragma once

#include <string>
#include <vector>

#include "rematkit/io/export.hpp"
#include "rematkit/analysis/memory_report.hpp"

namespace rematkit {

struct TimelinePanel {
  std::string title;  // the policy, say
  const MemoryReport* report = nullptr;
};

// A self-contained SVG: the panels side by side on one y scale (MiB, round ticks), a colour per
// kind with a legend, the passes shaded behind, and each panel's peak marked and labelled.
REMATKIT_IO_EXPORT std::string memory_timeline_svg(const std::vector<TimelinePanel>& panels);

}  // namespace rematkit
