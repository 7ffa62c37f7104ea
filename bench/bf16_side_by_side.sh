#!/usr/bin/env bash
# bf16 against f32, rematkit beside PyTorch, in one sitting (docs/performance.md, "bf16 against
# f32"): for the gpt, the llama and the CNN at each thread count, rematkit_step_timing --bf16-too
# (the f32 and the bf16 step interleaved in shuffled rounds, so their ratio comes from the same
# minutes), then bench/peers/torch_{gpt,llama,cnn}.py in f32 and in bf16 (bf16 modules: params and
# activations in bf16, as rematkit's `dtype: bf16`). Prints a markdown table: each side's step time
# in both dtypes and its bf16 / f32 ratio.
#
#   bench/bf16_side_by_side.sh [--build DIR] [--threads 1,2] [--policy everything_saveable]
#                              [--gpt L,B,S,D,H,V] [--llama L,B,S,D,H,K,V] [--cnn B,I,C,W1/W2/..,D,K]
#                              [--max-seconds S] [--reps N] [--no-peers] [--work DIR]
#
# The peers need Debian's /usr/bin/python3 with python3-torch and ../shared/peers/common.py (or
# PEERS_DIR); PEER_OPENBLAS_CORETYPE passes through to them (common.py).
set -euo pipefail

die() { echo "bf16_side_by_side.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
threads="1,2"
policy="everything_saveable"
gpt="4,2,256,512,8,4096"
llama="4,2,256,512,8,4,4096"
cnn="8,32,3,32/64,1,10"
max_seconds=40
reps=10
peers=1
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --gpt) gpt="$2"; shift 2 ;;
    --llama) llama="$2"; shift 2 ;;
    --cnn) cnn="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --no-peers) peers=0; shift ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
timing="$build/bin/rematkit_step_timing"
[[ -x "$timing" ]] || die "no $timing: build it (cmake --build $build --target rematkit_step_timing)"
[[ "$threads" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--threads takes counts, comma-separated, not '$threads'"
if [[ "$peers" == 1 ]]; then
  /usr/bin/python3 -c 'import torch' 2>/dev/null || die "no python3-torch for /usr/bin/python3 (or pass --no-peers)"
fi
if [[ -z "$work" ]]; then work=$(mktemp -d /tmp/bf16_side_by_side.XXXXXX); fi
mkdir -p "$work"
echo "bf16_side_by_side.sh: raw results in $work" >&2

for model in gpt llama cnn; do
  spec=${!model}
  "$timing" "--$model" "$spec" --threads "$threads" --policies "$policy" --bf16-too \
    --max-seconds "$max_seconds" --json "$work/rematkit_$model.json" >&2
  if [[ "$peers" == 1 ]]; then
    # The llama's peer takes one dtype a run.
    for dtype in f32 bf16; do
      PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$root/bench/peers/torch_$model.py" --configs "$spec" --threads "$threads" \
        --variants none --dtype "$dtype" --reps "$reps" --out "$work/torch_${model}_$dtype.json" >&2
    done
  fi
done

/usr/bin/python3 - "$work" "$policy" "$gpt" "$llama" "$cnn" <<'EOF'
import json, os, sys
work, policy = sys.argv[1], sys.argv[2]
specs = dict(zip(("gpt", "llama", "cnn"), sys.argv[3:6]))
print("| model | threads | rematkit f32 ms | rematkit bf16 ms | rematkit bf16 / f32 | PyTorch f32 ms | PyTorch bf16 ms | PyTorch bf16 / f32 |")
print("|---|---|---|---|---|---|---|---|")
for model in ("gpt", "llama", "cnn"):
    doc = json.load(open(os.path.join(work, f"rematkit_{model}.json")))
    torch = {}
    for dtype in ("f32", "bf16"):
        path = os.path.join(work, f"torch_{model}_{dtype}.json")
        for r in json.load(open(path)) if os.path.exists(path) else []:
            torch[(r["threads"], dtype)] = r["median_s"] * 1e3
    for conf in doc["configurations"]:
        rows = {r["name"]: r["median_ms"] for r in conf["rows"]}
        f32, bf16 = rows.get(policy), rows.get(policy + ", bf16")
        t = conf["threads"]
        tf, tb = torch.get((t, "f32")), torch.get((t, "bf16"))
        fmt = lambda v: "-" if v is None else f"{v:.3g}" if v < 100 else f"{v:.0f}"
        ratio = lambda a, b: "-" if a is None or b is None else f"{b / a:.2f}x"
        print(f"| {model} ({specs[model].replace(',', ', ')}) | {t} | {fmt(f32)} | {fmt(bf16)} | {ratio(f32, bf16)} | {fmt(tf)} | {fmt(tb)} | {ratio(tf, tb)} |")
EOF
