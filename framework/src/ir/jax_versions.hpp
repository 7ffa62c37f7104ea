// Which JAX versions print the forms rematkit refuses, so that the refusal can say so. Each range
// was read from JAX's source at the tags named. Internal to the parser.
#pragma once
#include <optional>
#include <string_view>

namespace rematkit::detail {

struct VersionedPrimitive {
  std::string_view name;
  std::string_view printed_by;
};

inline constexpr VersionedPrimitive kVersionedPrimitives[] = {
    // jax/experimental/maps.py from jax-v0.2.7, jax/_src/maps.py to jax-v0.4.30.
    {"xmap", "jax.experimental.maps.xmap, JAX 0.2.7-0.4.30"},
    // jax/_src/hijax.py from jax-v0.8.0; jax_remat3's checkpoint prints one from jax-v0.10.2.
    {"call_hi_primitive", "JAX's hijax primitives, such as jax_remat3's RematTraced, JAX 0.8.0 on"},
};

// What prints `name`, for a primitive only some JAX versions have; nullopt for any other.
constexpr std::optional<std::string_view> versioned_primitive(std::string_view name) {
  for (const VersionedPrimitive& p : kVersionedPrimitives)
    if (p.name == name) return p.printed_by;
  return std::nullopt;
}

}  // namespace rematkit::detail
