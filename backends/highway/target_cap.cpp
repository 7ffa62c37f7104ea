// target_cap.hpp: Highway numbers its targets from the most capable (lowest bit) down, so capping
// at one disables every lower bit.
#include "highway/target_cap.hpp"

#include <hwy/targets.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <vector>

namespace rematkit::hwy_backend {

std::optional<std::string> cap_target(const std::string& name) {
  std::string wanted = name;
  std::transform(wanted.begin(), wanted.end(), wanted.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::string names;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {  // one bit each, the best first
    if (wanted == hwy::TargetName(target)) {
      hwy::DisableTargets(target - 1);
      return std::nullopt;
    }
    names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(target);
  }
  return "REMATKIT_HIGHWAY_MAX_TARGET='" + name + "' is not a SIMD target of this build on this CPU (one of " + names + ")";
}

}  // namespace rematkit::hwy_backend
