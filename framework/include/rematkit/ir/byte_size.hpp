// Byte sizes as people write them on a command line or in a sweep file: "64MiB", "1.5GiB", "1e9",
// "4096", "2GB" (binary units KiB/MiB/GiB/TiB, decimal KB/MB/GB/TB, B or none for bytes), and as
// rematkit prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rematkit/core_export.hpp"

namespace rematkit {

struct ByteSize {
  double number = 0;  // as written, before the unit
  std::string unit;   // "" when none was written
  double bytes = 0;   // number times the unit
};

// nullopt for anything else (no number, an unknown unit, a negative or non-finite number).
REMATKIT_CORE_EXPORT std::optional<ByteSize> parse_byte_size(const std::string& text);

// "2.00 TiB", "3.25 GiB", "1.50 MiB", "12.0 KiB", "640 B".
REMATKIT_CORE_EXPORT std::string human_bytes(int64_t bytes);

}  // namespace rematkit
