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

// A param whose value is a Python lu.WrappedFun, which core.pp_kv_pair prints as str(v): its
// __repr__ is "Wrapped function:\n<one line per transform>\nCore: NAME\n" (jax/linear_util.py
// jax-v0.2.4 to jax/_src/linear_util.py jax-v0.6.0), lines of Python text where a value goes. JAX
// prints one for custom_vjp_call_jaxpr's bwd (jax/_src/custom_derivatives.py, custom_vjp.__call__'s
// flat_bwd, jax-v0.2.4-0.4.4 and jax-v0.5.1-0.6.0; 0.4.5-0.5.0 pass its bound call_wrapped) and for
// custom_jvp_call's jvp_jaxpr_fun (jax/_src/interpreters/partial_eval.py, jax-v0.5.1-0.6.0); from
// jax-v0.6.1 the pp rules _custom_jvp_call_pp_rule and _custom_vjp_call_pp_rule print names instead.
inline constexpr std::string_view kWrappedFunParam =
    "is a Python function printed as its repr ('Wrapped function: .. Core: NAME', several lines), as JAX "
    "0.2.4-0.6.0 prints custom_vjp_call_jaxpr's bwd and 0.5.1-0.6.0 custom_jvp_call's jvp_jaxpr_fun; rematkit "
    "does not read it: print the program with JAX 0.6.1 or later, which writes the function's name";

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
