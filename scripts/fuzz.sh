#!/usr/bin/env bash
# ./scripts/fuzz.sh [SECONDS]: builds every libFuzzer target (the `fuzz` preset: clang 14, the
# whole library instrumented for coverage, ASan + UBSan) and runs each in turn, SECONDS in all
# (default 300) shared equally. Seeds: tests/data, fuzz/seeds and fuzz/regressions; new inputs go to
# build-fuzz/corpus/TARGET, anything found to build-fuzz/crashes/TARGET. Prints a line per target:
# executions, coverage (edges and features) and crashes; exits 1 if anything was found.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
seconds=${1:-300}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzz_targets
mapfile -t plan < build-fuzz/fuzz-targets.txt
each=$(( seconds / ${#plan[@]} ))
[ "$each" -ge 1 ] || each=1
found=0
summary=()
root=$PWD
for line in "${plan[@]}"; do
  read -r name dict <<<"${line%%|*}"
  read -r -a seeds <<<"${line#*|}"
  corpus=$root/build-fuzz/corpus/$name crashes=$root/build-fuzz/crashes/$name log=$root/build-fuzz/logs/$name.log
  rm -rf "$crashes"  # what an earlier run found is in its log; keep a finding in fuzz/regressions
  mkdir -p "$corpus" "$crashes" "$root/build-fuzz/logs"
  existing=()
  for d in "${seeds[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  flags=(-max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1
         -artifact_prefix="$crashes/")
  [ -n "${dict:-}" ] && flags+=(-dict="$dict")
  echo "== $name: ${each} s" >&2
  status=0
  (cd "$root/build-fuzz" && "bin/${name}_fuzzer" "${flags[@]}" "$corpus" "${existing[@]}") >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  cov=$(grep -oE '#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)[[:space:]]+cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 |
        sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+)/\1 edges, \2 features/' || true)
  crashes_now=$(find "$crashes" -type f | wc -l)
  if [ "$status" -ne 0 ] || [ "$crashes_now" -gt 0 ]; then found=1; fi
  summary+=("$(printf '%-14s %10s executions   %-26s %s crash(es)   exit %s   %s' "$name" "${runs:-?}" \
               "${cov:-(no coverage line)}" "$crashes_now" "$status" "${log#$root/}")")
done
printf '%s\n' "${summary[@]}"
exit "$found"
