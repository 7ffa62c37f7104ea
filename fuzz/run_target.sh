#!/usr/bin/env bash
# run_target.sh FUZZER WORKDIR SECONDS DICT_FLAG SEED_DIR... : runs a libFuzzer target for SECONDS
# over its seeds, with new inputs going to WORKDIR (never into the source tree), and fails if it
# finds anything. The seed 1 makes the run repeatable.
set -euo pipefail
fuzzer=$1 work=$2 seconds=$3 dict=$4
shift 4
rm -rf "$work"
mkdir -p "$work/corpus" "$work/crashes"
seeds=()
for d in "$@"; do [ -d "$d" ] && seeds+=("$d"); done
flags=(-seed=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1
       -artifact_prefix="$work/crashes/")
[ -n "$dict" ] && flags+=("$dict")
cd "$work"
exec "$fuzzer" "${flags[@]}" "$work/corpus" "${seeds[@]}"
