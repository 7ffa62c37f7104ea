#include "rematkit/flax/scope.hpp"

#include <nettle/sha1.h>

namespace rematkit::flax {

uint32_t lazy_rng_hash(const std::vector<PathPart>& suffix, bool fix_separator) {
  sha1_ctx ctx;
  sha1_init(&ctx);
  const uint8_t separator = 0;
  for (const PathPart& part : suffix) {
    if (fix_separator) sha1_update(&ctx, 1, &separator);
    if (const auto* name = std::get_if<std::string>(&part)) {
      sha1_update(&ctx, name->size(), reinterpret_cast<const uint8_t*>(name->data()));
    } else {
      // int.to_bytes((x.bit_length() + 7) // 8, 'big'): 0 hashes as no bytes at all.
      uint64_t x = std::get<uint64_t>(part);
      std::vector<uint8_t> bytes;
      for (; x > 0; x >>= 8) bytes.insert(bytes.begin(), static_cast<uint8_t>(x & 0xff));
      sha1_update(&ctx, bytes.size(), bytes.data());
    }
  }
  uint8_t digest[SHA1_DIGEST_SIZE];
  sha1_digest(&ctx, SHA1_DIGEST_SIZE, digest);
  return (uint32_t{digest[0]} << 24) | (uint32_t{digest[1]} << 16) | (uint32_t{digest[2]} << 8) | digest[3];
}

Scope& Scope::push_autonamed(const std::string& class_name) {
  auto child = std::make_unique<Scope>(root_key_, options_);
  child->path_ = path_;
  child->path_.push_back(class_name + "_" + std::to_string(autoname_counts_[class_name]++));
  children_.push_back(std::move(child));
  return *children_.back();
}

random::Key Scope::make_rng() {
  std::vector<PathPart> suffix(path_.begin(), path_.end());
  suffix.emplace_back(++params_counter_);
  return random::fold_in(root_key_, lazy_rng_hash(suffix, options_.fix_separator));
}

}  // namespace rematkit::flax
