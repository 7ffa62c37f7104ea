#include "rematkit/ir/error.hpp"

namespace rematkit {

std::string SourceLocation::str() const {
  std::string out = file.empty() ? std::string("<program>") : file;
  if (line > 0) out += ":" + std::to_string(line);
  if (line > 0 && column > 0) out += ":" + std::to_string(column);
  return out;
}

void fail_at(const SourceLocation& where, const std::string& message) {
  throw Error(ErrorKind::kBadInput, where.str() + ": " + message, where);
}

void fail(const std::string& message) { throw Error(ErrorKind::kBadInput, message); }

void internal_error(const std::string& message) {
  throw Error(ErrorKind::kInternal, "internal error: " + message);
}

}  // namespace rematkit
