#include "rematkit/runtime/memory_limit.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "rematkit/ir/byte_size.hpp"

namespace rematkit {

int64_t available_memory_bytes() {
  // "MemAvailable:   23456789 kB": the kernel's own estimate, since 3.14.
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    long long kib = 0;
    if (fields >> kib && kib > 0 && kib < std::numeric_limits<int64_t>::max() / 1024) return kib * 1024;
  }
  return std::numeric_limits<int64_t>::max();
}

void check_memory_limit(int64_t needed, std::optional<int64_t> limit, const std::string& what) {
  const int64_t bound = limit ? *limit : available_memory_bytes();
  if (needed <= bound) return;
  const std::string whose = limit ? "the memory limit" : "the machine's available memory";
  throw MemoryLimitError(needed, bound,
                         what + " of " + human_bytes(needed) + " (" + std::to_string(needed) + " bytes) is over " + whose +
                             " of " + human_bytes(bound) + " (" + std::to_string(bound) +
                             " bytes); nothing was allocated (set the limit with --max-memory)");
}

}  // namespace rematkit
