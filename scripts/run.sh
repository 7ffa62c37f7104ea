#!/usr/bin/env bash
# Quick start, command 1: set up, build (release), and run the main job: the default sweep (two
# MLPs, a transformer, a GPT and a CNN x nine policies x two backend lists x 1 and 2 threads).
# Extra arguments go to `rematkit sweep`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target rematkit
./build/bin/rematkit sweep "$@"
