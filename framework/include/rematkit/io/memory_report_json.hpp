// A MemoryReport (rematkit/analysis/memory_report.hpp) as JSON, for scripts: what `rematkit memory --json` prints.
#pragma once

#include <string>

#include "rematkit/io/export.hpp"
#include "rematkit/analysis/memory_report.hpp"

namespace rematkit {

// One object: "peak_step", "peak_pass", "peak_runs", "predicted_peak" and "live_peak" (per memory
// space), "peak_bytes" (per kind), "peak_buffers" (indices into "buffers"), "buffers" (kind, bytes,
// type, space, first_step, last_step, source, where) and "steps" (pass, runs, where, live_bytes per
// space, device_bytes per kind). Kinds are keys such as "saved_residual".
REMATKIT_IO_EXPORT std::string memory_report_json(const MemoryReport& report);

}  // namespace rematkit
