#include "rematkit/io/svg_text.hpp"

#include <cmath>

namespace rematkit {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

double round_tick_step(double span, int ticks) {
  if (!(span > 0) || ticks < 1) return 1;
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  // The smallest of 1, 2, 5, 10 times the power at least the raw step: no more than `ticks` parts.
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw * (1 - 1e-12)) return m * power;
  return 10 * power;
}

}  // namespace rematkit
