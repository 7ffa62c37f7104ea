#!/usr/bin/env bash
# Quick start, command 2: set up, then build and run the whole test suite twice: the release
# build, and the debug build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
for preset in release debug; do
  echo "== $preset: configure, build, test" >&2
  cmake --preset "$preset" -DREMATKIT_BUILD_TESTS=ON >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
