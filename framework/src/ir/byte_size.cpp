#include "rematkit/ir/byte_size.hpp"

#include <cmath>
#include <cstdlib>
#include <map>

namespace rematkit {

std::optional<ByteSize> parse_byte_size(const std::string& text) {
  // strtod rather than std::stod: a number past double's range is an answer of HUGE_VAL, not a throw.
  const char* start = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(start, &end);
  if (end == start || text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  static const std::map<std::string, double> kUnits = {
      {"", 1},       {"B", 1},          {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  const std::string unit(end);
  const auto it = kUnits.find(unit);
  if (it == kUnits.end() || !std::isfinite(number) || number < 0) return std::nullopt;
  return ByteSize{number, unit, number * it->second};
}

}  // namespace rematkit
