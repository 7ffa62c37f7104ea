// rematkit::Error: the one exception type of the library. Its message is one line that names the
// problem and, where there is one, the place (FILE:LINE:COL) it was found.
#pragma once

#include <stdexcept>
#include <utility>
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
  Error(ErrorKind kind, const std::string& message, SourceLocation where = {})
      : std::runtime_error(message), kind_(kind), where_(std::move(where)) {}
  ErrorKind kind() const { return kind_; }
  // The place the message names first, when fail_at gave one (for bindings that report it as data).
  const SourceLocation& where() const { return where_; }

 private:
  ErrorKind kind_;
  SourceLocation where_;
};

// Throw a bad-input error located at `where` ("where: message").
[[noreturn]] REMATKIT_CORE_EXPORT void fail_at(const SourceLocation& where, const std::string& message);
// Throw a bad-input error with no location.
[[noreturn]] REMATKIT_CORE_EXPORT void fail(const std::string& message);
// Throw an internal error: rematkit itself is wrong.
[[noreturn]] REMATKIT_CORE_EXPORT void internal_error(const std::string& message);

}  // namespace rematkit
