// Flax's RNG derivation (flax/core/scope.py, LazyRng): every scope has a path of module names and
// a counter per collection; make_rng folds the root key with one SHA-1 hash over path + counter.
// reference/flax-init.md section 6.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit::flax {

struct RngOptions {
  random::PrngMode mode = random::PrngMode::kPartitionable;
  // flax_fix_rng_separator: a zero byte before each hashed part (False in every Flax release).
  bool fix_separator = false;
};

using PathPart = std::variant<std::string, uint64_t>;

// The 32-bit hash Flax folds into the key for a LazyRng suffix: the first 4 bytes (big-endian) of
// SHA-1 over the parts (a name as UTF-8, a counter as its minimal big-endian bytes).
REMATKIT_FLAX_EXPORT uint32_t lazy_rng_hash(const std::vector<PathPart>& suffix, bool fix_separator);

// One module's place in the variables tree.
class REMATKIT_FLAX_EXPORT Scope {
 public:
  Scope(random::Key root_key, RngOptions options) : root_key_(root_key), options_(options) {}

  // The child scope of the next module of `class_name`, named as Flax names it: Dense_0, Dense_1, ...
  Scope& push_autonamed(const std::string& class_name);
  // Scope.make_rng('params'): the next key of this scope's params stream.
  random::Key make_rng();

  const std::vector<std::string>& path() const { return path_; }
  const RngOptions& options() const { return options_; }

 private:
  random::Key root_key_;
  RngOptions options_;
  std::vector<std::string> path_;
  uint64_t params_counter_ = 0;
  std::map<std::string, int> autoname_counts_;
  std::vector<std::unique_ptr<Scope>> children_;
};

}  // namespace rematkit::flax
