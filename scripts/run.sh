#!/usr/bin/env bash
# Quick start, command 1: set up, build (release), and run the main job: the residual report of
# the built-in example with --explain. Extra arguments go to `rematkit residuals`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target rematkit
./build/bin/rematkit residuals --explain "$@"
