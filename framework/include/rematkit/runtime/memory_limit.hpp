// How much memory a run may take. A step whose predicted peak is over the limit is refused before
// its arena is allocated: one clear error instead of std::bad_alloc part way through, or the
// kernel's OOM killer taking the whole process (and every finished sweep row with it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"

namespace rematkit {

// The machine's available memory now (MemAvailable in /proc/meminfo: free memory plus what the
// kernel can reclaim without swapping), or INT64_MAX where it cannot be read.
REMATKIT_CORE_EXPORT int64_t available_memory_bytes();

// A bad-input Error (exit code 2) that says how much was needed against which limit, so that a
// sweep can fail one configuration alone and go on.
class REMATKIT_CORE_EXPORT MemoryLimitError : public Error {
 public:
  MemoryLimitError(int64_t needed, int64_t limit, const std::string& message)
      : Error(ErrorKind::kBadInput, message), needed_(needed), limit_(limit) {}
  int64_t needed() const { return needed_; }
  int64_t limit() const { return limit_; }

 private:
  int64_t needed_, limit_;
};

// Throws MemoryLimitError when `needed` bytes are over `limit` (nullopt: available_memory_bytes()).
// `what` names what needs them: "the step's predicted peak".
REMATKIT_CORE_EXPORT void check_memory_limit(int64_t needed, std::optional<int64_t> limit, const std::string& what);

}  // namespace rematkit
