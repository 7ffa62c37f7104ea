// rematkit::Error: the one exception type of the library. Its message is one line that names the
// problem and, where there is one, the place (FILE:LINE:COL) it was found.
#pragma once

#include <stdexcept>
#include <string>

#include "rematkit/core_export.hpp"

namespace rematkit {

// Where something came from in a program file. line/column are 1-based; 0 means unknown.
struct REMATKIT_CORE_EXPORT SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  // "FILE:LINE:COL", "FILE:LINE" or "FILE", whichever is known.
  std::string str() const;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

// Whose fault an Error is.
enum class ErrorKind {
  kBadInput,  // the user's program, inputs, policy or options are wrong (exit code 2)
  kInternal,  // a bug in rematkit (exit code 1)
};

// Every failure rematkit reports: what() is one line.
class REMATKIT_CORE_EXPORT Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Throw a bad-input error located at `where` ("where: message").
[[noreturn]] REMATKIT_CORE_EXPORT void fail_at(const SourceLocation& where, const std::string& message);
// Throw a bad-input error with no location.
[[noreturn]] REMATKIT_CORE_EXPORT void fail(const std::string& message);
// Throw an internal error: rematkit itself is wrong.
[[noreturn]] REMATKIT_CORE_EXPORT void internal_error(const std::string& message);

}  // namespace rematkit
