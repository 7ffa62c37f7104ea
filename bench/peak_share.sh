#!/usr/bin/env bash
# The training step's GFLOP/s as a share of this machine's FMA peak, in one sitting
# (docs/performance.md, "The step against the machine's peak"): rematkit_peak_probe's f32 FMA peak
# on 1 and 2 threads (the widest vectors the CPU runs), then rematkit_step_timing on GPT-2 small at
# batch 4, sequence 512 and on a 2-layer, 768-wide gpt over 1,024 tokens, at 1 and 2 threads.
# GFLOP/s counts the step's nominal products (rematkit_step_timing's 3 x forward, as the peers count
# them). Prints a markdown table.
#
#   bench/peak_share.sh [--build DIR] [--threads 1,2] [--policy everything_saveable]
#                       [--models "12,4,512,768,12,50257;2,2,512,768,12,50257"] [--max-seconds S]
#                       [--work DIR]
set -euo pipefail

die() { echo "peak_share.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
threads="1,2"
policy="everything_saveable"
models="12,4,512,768,12,50257;2,2,512,768,12,50257"
max_seconds=120
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
for tool in rematkit_peak_probe rematkit_step_timing; do
  [[ -x "$build/bin/$tool" ]] || die "no $build/bin/$tool: build it (cmake --build $build --target $tool)"
done
if [[ -z "$work" ]]; then work=$(mktemp -d /tmp/peak_share.XXXXXX); fi
mkdir -p "$work"
echo "peak_share.sh: raw results in $work" >&2

"$build/bin/rematkit_peak_probe" --benchmark_filter='peak/fma' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json > "$work/peak.json"
i=0
IFS=';' read -ra specs <<< "$models"
for spec in "${specs[@]}"; do
  "$build/bin/rematkit_step_timing" --gpt "$spec" --threads "$threads" --policies "$policy" \
    --max-seconds "$max_seconds" --min-samples 3 --json "$work/step_$i.json" >&2
  i=$((i + 1))
done

/usr/bin/python3 - "$work" "$policy" <<'EOF'
import glob, json, os, sys
work, policy = sys.argv[1], sys.argv[2]
# The probe's median GFLOP/s per thread count, the widest vectors that ran (a skipped ISA has an error).
peak = {}
for b in json.load(open(os.path.join(work, "peak.json")))["benchmarks"]:
    if b.get("aggregate_name") != "median" or b.get("error_occurred"):
        continue
    threads = int(b["run_name"].split("/")[-2 if b["run_name"].endswith("real_time") else -1])
    peak[threads] = max(peak.get(threads, 0.0), b["GFLOP/s"] / 1e9 if b["GFLOP/s"] > 1e6 else b["GFLOP/s"])
print("| model (L, B, S, D, H, V) | threads | step ms | GFLOP/s | FMA peak GFLOP/s | share of peak |")
print("|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(work, "step_*.json"))):
    for conf in json.load(open(path))["configurations"]:
        row = next(r for r in conf["rows"] if r["name"] == policy)
        t = conf["threads"]
        label = ", ".join(str(conf[k]) for k in ("L", "B", "S", "D", "H", "V"))
        share = f"{100 * row['gflops'] / peak[t]:.0f}%" if t in peak else "-"
        print(f"| gpt ({label}) | {t} | {row['median_ms']:.0f} | {row['gflops']:.1f} | {peak.get(t, 0):.0f} | {share} |")
EOF
