#include "rematkit/ir/byte_size.hpp"

#include <cstdio>

namespace rematkit {

std::string human_bytes(int64_t bytes) {
  char buf[32];
  if (bytes >= 1099511627776) std::snprintf(buf, sizeof buf, "%.2f TiB", static_cast<double>(bytes) / 1099511627776.0);
  else if (bytes >= 1073741824) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  else if (bytes >= 1048576) std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

}  // namespace rematkit
