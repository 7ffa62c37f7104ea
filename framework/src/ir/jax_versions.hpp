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
};

// call_hi_primitive's _prim classes (jax/_src/hijax.py, jax-v0.8.0 on) rematkit refuses, and why.
inline constexpr VersionedPrimitive kRefusedHiPrimitives[] = {
    // jax/_src/ad_checkpoint.py at jax-v0.10.2 to cec06d116c05: CustomRemat's params are jaxpr, f1,
    // f2_fbwd, _in_tree, _out_tree; f_fwd, f_rem and f_bwd are Python functions, printed as
    // <function ..> and <custom_vjp object ..>, so the rules a reverse pass uses are not in the text.
    {"CustomRemat", "jax.custom_remat (jax_remat3, JAX 0.10.2 on) prints its fwd, rem and bwd rules as Python "
                    "objects, not jaxprs, so the program does not carry the rules its gradient uses"},
};

// What prints `name`, for a primitive only some JAX versions have; nullopt for any other.
constexpr std::optional<std::string_view> versioned_primitive(std::string_view name) {
  for (const VersionedPrimitive& p : kVersionedPrimitives)
    if (p.name == name) return p.printed_by;
  return std::nullopt;
}

// Why a call_hi_primitive of class `name` is refused, for one rematkit knows; nullopt for any other.
constexpr std::optional<std::string_view> refused_hi_primitive(std::string_view name) {
  for (const VersionedPrimitive& p : kRefusedHiPrimitives)
    if (p.name == name) return p.printed_by;
  return std::nullopt;
}

}  // namespace rematkit::detail
