#include "rematkit/io/memory_report_json.hpp"

#include <nlohmann/json.hpp>

namespace rematkit {
namespace {

nlohmann::json per_space(const std::array<int64_t, kNumMemorySpaces>& bytes) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t s = 0; s < kNumMemorySpaces; ++s) out[std::string(memory_space_name(static_cast<MemorySpace>(s)))] = bytes[s];
  return out;
}

nlohmann::json per_kind(const std::array<int64_t, kNumBufferKinds>& bytes) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t k = 0; k < kNumBufferKinds; ++k) out[buffer_kind_key(static_cast<BufferKind>(k))] = bytes[k];
  return out;
}

// "" for an unknown place.
std::string where_text(const SourceLocation& where) { return where.file.empty() && where.line == 0 ? "" : where.str(); }

}  // namespace

std::string memory_report_json(const MemoryReport& report) {
  nlohmann::json out;
  out["peak_step"] = report.peak_step;
  if (report.peak_step >= 0) {
    const StepMemory& peak = report.steps[static_cast<size_t>(report.peak_step)];
    out["peak_pass"] = std::string(pass_name(peak.pass));
    out["peak_runs"] = peak.what;
  }
  out["predicted_peak"] = per_space(report.predicted_peak);
  out["live_peak"] = per_space(report.live_peak);
  out["peak_bytes"] = per_kind(report.peak_bytes);
  out["peak_buffers"] = report.peak_buffers;
  nlohmann::json buffers = nlohmann::json::array();
  for (const BufferMemory& b : report.buffers)
    buffers.push_back({{"kind", buffer_kind_key(b.kind)},
                       {"bytes", b.bytes},
                       {"type", b.type.str()},
                       {"space", std::string(memory_space_name(b.space))},
                       {"first_step", b.first_step},
                       {"last_step", b.last_step},
                       {"source", b.source},
                       {"where", where_text(b.where)}});
  out["buffers"] = std::move(buffers);
  nlohmann::json steps = nlohmann::json::array();
  for (const StepMemory& s : report.steps)
    steps.push_back({{"pass", std::string(pass_name(s.pass))},
                     {"runs", s.what},
                     {"where", where_text(s.where)},
                     {"live_bytes", per_space(s.live_bytes)},
                     {"device_bytes", per_kind(s.device_bytes)}});
  out["steps"] = std::move(steps);
  return out.dump(2) + "\n";
}

}  // namespace rematkit
