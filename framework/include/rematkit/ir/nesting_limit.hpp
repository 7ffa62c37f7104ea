// How deeply an input may nest, and the guard each recursive reader and pass holds: input of any
// depth gets a one-line bad-input error at its place, never a stack overflow
// (docs/program-format.md, "Limits").
#pragma once

#include <cstdint>
#include <string>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

// Brackets ((, [, {) open at once in a program or policy spec. A jaxpr level opens two or three
// (checkpoint[jaxpr={ ... }], cond's branches=( ... )).
inline constexpr int kMaxBracketNesting = 512;

// Levels of a YAML or JSON document (a sweep file, an inputs file): its readers read a fixed
// schema a few levels deep, so anything near this is not what they take.
inline constexpr int kMaxDocumentNesting = 256;

// Programs inside one another, the outermost counted: checkpoint, jit, scan, cond, while and
// custom-rule bodies. Real programs stay near ten (Flax's remat_scan nests one scan a level;
// jit-in-jit-in-scan a few more).
inline constexpr int kMaxProgramNesting = 128;

// Equations a program holds once its calls are inlined. Shared sub-programs that call each other
// twice a level multiply (thirty levels: a billion), which no pass could hold in memory; real
// models, unrolled, hold tens of thousands.
inline constexpr int64_t kMaxInlinedEquations = int64_t{1} << 22;

// Throws the bad-input error for `what` nested past `limit` at `where`.
[[noreturn]] REMATKIT_CORE_EXPORT void fail_too_deep(const SourceLocation& where, const std::string& what, int limit);

// One more level for `depth`, a counter the recursion owns (a thread_local per pass, or a
// reader's member), released when the guard goes out of scope. Past `limit` it throws a bad-input
// error at `where` naming what nests and the limit.
class REMATKIT_CORE_EXPORT NestingGuard {
 public:
  NestingGuard(int& depth, int limit, const char* what, const SourceLocation& where);
  // A pass entering `program` one level deeper (the place named is its first equation's).
  NestingGuard(int& depth, const char* pass, const Program& program);
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

}  // namespace rematkit
