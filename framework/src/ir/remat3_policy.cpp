#include "remat3_policy.hpp"

namespace rematkit::detail {

// Under jax_remat3 a policy is data, never called (jax/_src/ad_checkpoint.py at jax-v0.11.0 and
// cec06d116c05): checkpoint() maps nothing_saveable to None (L377 at 0.11.0, L384 at cec06d1);
// OffloadDotWithNoBatchDims (lax.py's _dot_general_remat) and the name classes SaveOnlyTheseNames,
// SaveAnyNamesButThese, SaveAndOffloadOnlyTheseNames (CheckpointName.remat, L1226-1248 at cec06d1)
// print as their dataclass reprs, which rematkit's policies read as they are. DotsSaveable is
// consulted by dot_general's rule alone (conv_general_dilated has none), which remat3_DotsSaveable is.
ParamValue remat3_policy(const ParamValue& printed) {
  if (printed.kind == ParamValue::Kind::kCall && printed.text == "DotsSaveable") {
    ParamValue dots_only = printed;
    dots_only.text = "remat3_DotsSaveable";
    return dots_only;
  }
  if (printed.kind != ParamValue::Kind::kFunction) return printed;
  // A function prints as <function NAME at 0x..>. CheckpointName.remat checks `policy is
  // everything_saveable` and saves every named value; nothing else consults it (the default rule of
  // jax/_src/interpreters/remat.py's RematTrace is full remat).
  if (printed.text == "everything_saveable") {
    ParamValue any_name;
    any_name.kind = ParamValue::Kind::kCall;
    any_name.text = "save_any_names_but_these";
    return any_name;
  }
  // Any other callable (a lambda, save_from_both_policies' result): remat3 never calls it, so
  // everything is recomputed (tests/api_test.py L5355 at cec06d1 says so), as nothing_saveable.
  return ParamValue::none();
}

bool remat3_ignores_callable(const ParamValue& printed) {
  return printed.kind == ParamValue::Kind::kFunction && printed.text != "everything_saveable";
}

}  // namespace rematkit::detail
