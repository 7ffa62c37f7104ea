#!/usr/bin/env bash
# Builds plugins/examples/out_of_tree as a separate CMake project with rematkit_add_plugin(), then
# checks that rematkit loads the result. Arguments: SOURCE_DIR WORK_DIR REMATKIT_PROGRAM.
set -euo pipefail
source_dir=$1 work_dir=$2 rematkit=$3
rm -rf "$work_dir"
cmake -S "$source_dir/plugins/examples/out_of_tree" -B "$work_dir" -G Ninja -DREMATKIT_SOURCE_DIR="$source_dir" >/dev/null
cmake --build "$work_dir" >/dev/null
"$rematkit" plugins --plugin "$work_dir/libsave_only_these_primitives.so" | grep -q '^example-primitives 1.0.0 (ABI 1.1) '
echo "out-of-tree plugin built and loaded"
