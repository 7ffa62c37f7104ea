// Equation parameters: named values as jaxpr prints them (ints, floats, strings, identifiers,
// tuples and lists, sub-programs, policy calls, JAX reprs), with typed accessors. The params each
// primitive takes, and builders for them, are in primitive_params.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"

namespace rematkit {

struct Program;

struct REMATKIT_CORE_EXPORT ParamValue {
  enum class Kind {
    kNone,      // None
    kBool,      // True / False
    kInt,       // 3, -1
    kFloat,     // 0.5
    kString,    // 'a' or "a"
    kIdent,     // float32, dots_saveable, a shared sub-program's name before it is resolved
    kTuple,     // (1, 2)
    kList,      // [1, 2]
    kSet,       // {'a', 'b'} (inside frozenset(...))
    kCall,      // NAME(args): policy specs, dataclass reprs, frozenset({...})
    kKeyword,   // KEY=value inside a call; items[0] is the value
    kFunction,  // <function NAME at 0x..>, <lambda>: text holds NAME / "<lambda>"
    kProgram,   // { lambda ... }
  };

  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0.0;
  std::string text;  // string contents, identifier, call or keyword name, function name
  std::vector<ParamValue> items;
  std::shared_ptr<const Program> program;

  static ParamValue none() { return {}; }
  static ParamValue of_bool(bool b);
  static ParamValue of_int(int64_t i);
  static ParamValue of_string(std::string s);
  static ParamValue of_ident(std::string s);
  static ParamValue of_ints(const std::vector<int64_t>& values);  // a tuple of ints
  static ParamValue of_tuple(std::vector<ParamValue> items);
  static ParamValue of_program(std::shared_ptr<const Program> program);
  // A Python repr jaxpr syntax has no value for (Mesh('x': 4)): an identifier holding its text,
  // printed back as read.
  static ParamValue of_raw(std::string text) { return of_ident(std::move(text)); }

  bool is_sequence() const { return kind == Kind::kTuple || kind == Kind::kList || kind == Kind::kSet; }
  // Printed as jaxpr prints it (sub-programs inline at `indent`).
  std::string str(int indent = 0) const;
};

REMATKIT_CORE_EXPORT bool operator==(const ParamValue& a, const ParamValue& b);

// Params keep their order so a program prints back the way it was written.
struct REMATKIT_CORE_EXPORT Params {
  std::vector<std::pair<std::string, ParamValue>> entries;

  const ParamValue* find(const std::string& key) const;
  void set(const std::string& key, ParamValue value);
  friend bool operator==(const Params&, const Params&) = default;
};

// Typed accessors; each fails with a bad-input error at `where` naming the key when it is missing
// or of the wrong kind.
REMATKIT_CORE_EXPORT int64_t param_int(const Params& p, const std::string& key, const SourceLocation& where);
REMATKIT_CORE_EXPORT std::vector<int64_t> param_ints(const Params& p, const std::string& key, const SourceLocation& where);
REMATKIT_CORE_EXPORT std::string param_name(const Params& p, const std::string& key, const SourceLocation& where);
REMATKIT_CORE_EXPORT bool param_bool(const Params& p, const std::string& key, const SourceLocation& where);
// The integers of `key`; empty when it is None or missing.
REMATKIT_CORE_EXPORT std::vector<int64_t> param_ints_or_none(const Params& p, const std::string& key,
                                                             const SourceLocation& where);
// A value's integers (a single int is one); `key` names the param in the error.
REMATKIT_CORE_EXPORT std::vector<int64_t> ints_of(const ParamValue& v, const std::string& key, const SourceLocation& where);

}  // namespace rematkit
