// A reader for the Python reprs JAX prints inside params that jaxpr syntax has no value for: a
// Mesh (Mesh('x': 2, 'y': 4)), shard_map's in_names ({0: ('x',)}), a numpy array. Internal to ir/.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/ir/error.hpp"

namespace rematkit::detail {

struct Repr {
  enum class Kind { kNumber, kString, kName, kSequence, kDict, kCall };
  Kind kind = Kind::kName;
  std::string text;  // a number's spelling, a string's contents, a name, a call's name
  // A sequence's items; a dict's values; a call's arguments, positional and keyword.
  std::vector<Repr> items;
  // Per item of a dict or call: its key as text ('x': 4 gives x, a keyword axis_names=.. gives
  // "axis_names="), or empty for a positional argument.
  std::vector<std::string> keys;

  bool is_call(std::string_view name) const { return kind == Kind::kCall && text == name; }
  // A call's keyword argument or a dict's entry; nullptr if there is none.
  const Repr* find(std::string_view key) const;
};

// Reads `text`, a param's value; a bad-input error at `where` naming the param if it is no repr.
Repr read_repr(std::string_view text, const std::string& param, const SourceLocation& where);

}  // namespace rematkit::detail
