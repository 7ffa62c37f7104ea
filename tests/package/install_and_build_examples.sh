#!/usr/bin/env bash
# Installs the build tree into a fresh prefix and moves the prefix (installed paths are relative),
# then uses nothing but the prefix: builds examples/ as its own CMake project with
# find_package(rematkit), compiles the quick start with pkg-config, and runs the examples and the
# installed rematkit program with no plugin path set. Writes only under WORK_DIR.
# Arguments: BUILD_DIR SOURCE_DIR WORK_DIR.
set -euo pipefail
build_dir=$1 source_dir=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/prefix"
prefix=$work/prefix
unset REMATKIT_PLUGIN_PATH

check() {  # check DESCRIPTION COMMAND...: runs the command, failing the test with the description
  local what=$1
  shift
  if ! "$@"; then
    echo "FAILED: $what" >&2
    exit 1
  fi
}

# The installed program finds the installed plugins by itself.
"$prefix/bin/rematkit" plugins >"$work/plugins.txt"
check "the installed rematkit lists its installed plugins" grep -q "^jax-policies .* $prefix/lib.*/rematkit/plugins/" "$work/plugins.txt"
check "the installed rematkit has the highway backend" grep -q "backends: highway" "$work/plugins.txt"

# The examples, built against the package.
cmake -S "$source_dir/examples" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples" >/dev/null
ex=$work/examples

"$ex/quick_start" >"$work/quick_start.txt"
check "quick_start trains" test "$(grep -c '^loss ' "$work/quick_start.txt")" -eq 3

"$ex/train_mlp" dots_with_no_batch_dims_saveable 3 >"$work/train.txt"
check "train_mlp prints 3 steps" test "$(grep -c '^step [123]: loss ' "$work/train.txt")" -eq 3
peak_line=$(grep '^peak device memory: ' "$work/train.txt")
predicted=$(sed -E 's/.*predicted ([0-9]+) bytes.*/\1/' <<<"$peak_line")
measured=$(sed -E 's/.*measured ([0-9]+) bytes.*/\1/' <<<"$peak_line")
check "train_mlp's measured peak ($measured) is its predicted peak ($predicted)" test "$predicted" = "$measured"
check "train_mlp's peak is positive" test "$predicted" -gt 0

status=0
"$ex/train_mlp" no_such_policy 1 >/dev/null 2>"$work/bad_policy.txt" || status=$?
check "an unknown policy exits with 2, not $status" test "$status" -eq 2
check "an unknown policy is one line naming it" test "$(wc -l <"$work/bad_policy.txt")" -eq 1
check "the line names the policy" grep -q "^train_mlp: .*no_such_policy" "$work/bad_policy.txt"

"$ex/residual_report" "$source_dir/examples/two_layer.jaxpr" nothing_saveable >"$work/report.txt"
check "residual_report prints the memory plan" grep -q "^memory plan: [0-9]* buffers, device arena [0-9]* bytes" "$work/report.txt"
check "residual_report explains the residuals" grep -q "bytes" "$work/report.txt"

# The custom policy, built out of tree with rematkit_add_plugin(), loads in the installed program.
"$prefix/bin/rematkit" plugins --plugin "$ex/libsave_only_these_primitives.so" >"$work/custom.txt"
check "the custom policy loads" grep -q "^example-primitives 1.0.0 (ABI 1.8) " "$work/custom.txt"
"$prefix/bin/rematkit" residuals --plugin "$ex/libsave_only_these_primitives.so" \
  --policy "save_only_these_primitives('dot_general')" "$source_dir/examples/two_layer.jaxpr" >"$work/custom_residuals.txt"
check "the custom policy decides" test -s "$work/custom_residuals.txt"

# rematkit::sweep from C++: three policies timed, each with its interval and a verdict against the
# baseline; a typo'd backend fails before anything runs, naming what it meant.
"$ex/policy_sweep" >"$work/policy_sweep.txt"
check "policy_sweep prints three policies" test "$(grep -c ' ms \[' "$work/policy_sweep.txt")" -eq 3
check "policy_sweep's baseline is everything_saveable" grep -q '^everything_saveable .*(baseline)' "$work/policy_sweep.txt"
check "policy_sweep gives verdicts" grep -Eq '^nothing_saveable .*(faster|slower|no clear difference)' "$work/policy_sweep.txt"
status=0
"$ex/policy_sweep" refrence >/dev/null 2>"$work/bad_backend.txt" || status=$?
check "a misspelt backend exits with 2, not $status" test "$status" -eq 2
check "it suggests the backend meant" grep -q "did you mean 'reference'" "$work/bad_backend.txt"

# pkg-config: the quick start builds its model with ModelBuilder, so it takes rematkit-flax (which
# brings rematkit, the core).
pc_dir=$(dirname "$(find "$prefix" -name rematkit.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs rematkit-flax)
libdir=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=libdir rematkit)
# shellcheck disable=SC2086  # the flags are words
c++ "$source_dir/examples/quick_start.cpp" $flags -Wl,-rpath,"$libdir" -o "$work/quick_start_pkg_config"
"$work/quick_start_pkg_config" >"$work/quick_start_pkg_config.txt"
check "the pkg-config build runs as the CMake one" cmp -s "$work/quick_start.txt" "$work/quick_start_pkg_config.txt"

# The Python package, where it was built: installed in the interpreter's layout under the prefix,
# it imports from there and finds the installed libraries and plugins.
module=$(find "$prefix" -name '_rematkit*.so' | head -n 1)
if [ -n "$module" ]; then
  site=$(dirname "$(dirname "$module")")
  PYTHONPATH="$site" /usr/bin/python3 -c "
import rematkit
assert 'highway' in rematkit.backends(), rematkit.backends()
p = rematkit.Program.load('$source_dir/examples/two_layer.jaxpr')
assert len(p.residuals(policy='nothing_saveable')) == 3
print(rematkit.__file__)" >"$work/python.txt"
  check "the installed Python package is the prefix's" grep -q "^$site/rematkit/__init__.py" "$work/python.txt"
fi

echo "installed into $prefix; examples built with CMake and pkg-config and run"
