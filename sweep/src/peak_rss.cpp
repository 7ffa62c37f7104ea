#include "rematkit/sweep/peak_rss.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace rematkit::sweep {

PeakRss::PeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // resets VmHWM to VmRSS (Documentation/filesystems/proc.rst)
  clear.flush();
  windowed_ = static_cast<bool>(clear);
}

std::optional<int64_t> PeakRss::bytes() const {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kib = 0;
      if (fields >> kib) return kib * 1024;
    }
  return std::nullopt;
}

}  // namespace rematkit::sweep
