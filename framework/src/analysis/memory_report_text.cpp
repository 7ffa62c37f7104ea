// The text `rematkit memory` prints for a MemoryReport.
#include <algorithm>
#include <cstdio>

#include "rematkit/analysis/memory_report.hpp"

namespace rematkit {
namespace {

std::string with_exact(int64_t bytes) { return human_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)"; }

// Rows of cells as columns padded to their widest cell; `right` says which columns align right.
std::string aligned(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width(right.size(), 0);
  for (const auto& row : rows)
    for (size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t k = 0; k < row.size(); ++k) {
      const std::string pad(width[k] - row[k].size(), ' ');
      line += "  " + (right[k] ? pad + row[k] : row[k] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string format_memory_report(const MemoryReport& r) {
  const size_t device = static_cast<size_t>(MemorySpace::kDevice);
  if (r.peak_step < 0) return "no steps: nothing is allocated\n";
  const StepMemory& peak = r.steps[static_cast<size_t>(r.peak_step)];
  std::string out = "peak: step " + std::to_string(r.peak_step) + " (of 0.." + std::to_string(r.steps.size() - 1) +
                    "), in the " + std::string(pass_name(peak.pass)) + " pass: " + peak.what + "\n";
  out += "device memory alive there: " + with_exact(peak.live_bytes[device]) + " in " +
         std::to_string(r.peak_buffers.size()) + " buffer(s)\n";
  std::vector<std::vector<std::string>> rows{{"kind", "bytes", "exact", "holds", "steps", "source"}};
  for (int b : r.peak_buffers) {
    const BufferMemory& m = r.buffers[static_cast<size_t>(b)];
    rows.push_back({std::string(buffer_kind_name(m.kind)), human_bytes(m.bytes), std::to_string(m.bytes), m.type.str(),
                    std::to_string(m.first_step) + ".." + std::to_string(m.last_step), m.source});
  }
  out += aligned(rows, {false, true, true, false, false, false});
  out += "by kind at the peak:\n";
  rows.clear();
  for (size_t k = 0; k < kNumBufferKinds; ++k) {
    if (r.peak_bytes[k] == 0) continue;
    char share[16];
    std::snprintf(share, sizeof share, "%.0f%%",
                  100.0 * static_cast<double>(r.peak_bytes[k]) / static_cast<double>(peak.live_bytes[device]));
    rows.push_back({std::string(buffer_kind_name(static_cast<BufferKind>(k))), human_bytes(r.peak_bytes[k]),
                    std::to_string(r.peak_bytes[k]), share});
  }
  out += aligned(rows, {false, true, true, true});
  out += "predicted peak (the arena's size, what a run measures): " + with_exact(r.predicted_peak[device]) + "\n";
  const int64_t gap = r.predicted_peak[device] - r.live_peak[device];
  out += "live peak (bytes alive at the peak step): " + with_exact(r.live_peak[device]) +
         (gap == 0 ? std::string("; no fragmentation\n")
                   : "; the arena is " + std::to_string(gap) + " bytes larger: fragmentation\n");
  for (size_t s = 0; s < kNumMemorySpaces; ++s) {
    if (s == device || r.predicted_peak[s] == 0) continue;
    out += std::string(memory_space_name(static_cast<MemorySpace>(s))) + ": predicted peak " +
           with_exact(r.predicted_peak[s]) + ", live peak " + with_exact(r.live_peak[s]) + "\n";
  }
  return out;
}

}  // namespace rematkit
