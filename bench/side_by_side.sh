#!/usr/bin/env bash
# The MLP training step against its peers (docs/performance.md), measured in one sitting: for each
# (size, threads) of the table, rematkit_step_timing (everything_saveable, i.e. no recomputation, as
# the peers' `none`), then the NumPy and PyTorch scripts of the peers' folder, then PyTorch with
# OMP_WAIT_POLICY=PASSIVE at 2 threads, one after another, so that a slow phase of a shared machine
# falls on neighbours rather than on one column. Writes the markdown table (stdout by default).
# The passive column is torch_mlp.py --tag passive --extra-env OMP_WAIT_POLICY=PASSIVE: the run that
# t2_threading.py calls torch-passive, without the three others that script adds.
#
#   bench/side_by_side.sh [--peers DIR] [--build DIR] [--sizes 0,1,2,3] [--out FILE] [--work DIR]
#                         [--rounds N] [--max-seconds S] [--target T] [--backends LIST]
#                         [--openblas-coretype NAME] [--transformer L,B,S,D,H,M|default]
#                         [--gpt L,B,S,D,H,V[,M]|default]
#                         [--cnn B,I,C,W1/W2/..,D,K|default] [--real-size]
#
# --peers: the peers' scripts (torch_mlp.py, numpy_mlp.py; default ../shared/peers beside the
# repository). --sizes indexes (1,64,64) (1 thread only), (32,512,512), (256,1024,1024) and
# (1024,2048,2048) (1 and 2 threads). --rounds goes to the peers (fresh processes per round, samples
# pooled); --max-seconds and --target to rematkit_step_timing. --work keeps every raw JSON (default: a
# new folder under /tmp, named on stderr). The peers' own guard waits for a quiet machine before each
# child; PEERS_QUIET_CORES, PEERS_MAX_WAIT_S and PEERS_RETRIES (see the peers' common.py) pass through,
# and rematkit_step_timing waits the same way (the first two) before its run.
# OpenBLAS 0.3.21 falls back to slow pre-AVX kernels on CPUs it does not know: unless told
# (--openblas-coretype, or PEER_OPENBLAS_CORETYPE), the script asks OpenBLAS what it detected and, on
# such a fallback, picks SkylakeX where the CPU has AVX-512 and Haswell where it has AVX2.
# --transformer adds a second table: the sweep's transformer (default: 2,4,128,128,4,512, the default
# sweep's) against the peers' torch_transformer.py, at 1 and 2 threads.
# --gpt adds a table of the sweep's gpt (default: 2,2,32,64,4,128, the default sweep's gpt-small,
# dropout 0.1) against bench/peers/torch_gpt.py (this repository's), at 1 and 2 threads.
# --cnn adds a third table: the sweep's CNN (default: 8,16,3,16/32,1,10, examples/cnn_sweep.yaml's
# model) against bench/peers/torch_cnn.py (this repository's; it reads common.py from --peers), at 1
# and 2 threads: rematkit's everything_saveable against PyTorch's `none`, and its nothing_saveable
# (each block recomputed) against PyTorch's `ckpt_block`. torch_cnn.py has no quiet-machine guard of
# its own: the script waits as the peers' guard does before it and records other processes' load.
# --real-size adds a table of real sizes: GPT-2 small (12,1,128,768,12,50257: 124M params, dropout
# 0.1) against bench/peers/torch_gpt.py and a Llama of 100M params (8,1,128,768,12,4,32000) against
# bench/peers/torch_llama.py, at 1 and 2 threads, everything_saveable against `none` and
# nothing_saveable (each block recomputed) against `ckpt_block`, each in a process of its own with
# that process's peak RSS (rematkit_step_timing's process_peak_rss_MiB, the peers' rss_peak_MiB).
set -euo pipefail

die() { echo "side_by_side.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peers="$root/../shared/peers"
build="$root/build"
sizes="0,1,2,3"
out=""
work=""
rounds=2
max_seconds=120
target=0.02
backends="onednn,highway,reference"
coretype="${PEER_OPENBLAS_CORETYPE:-}"
transformer=""
gpt=""
cnn=""
real_size=""
# As typed, with the variables that change what the peers do.
command_line=""
for v in PEER_OPENBLAS_CORETYPE PEERS_QUIET_CORES PEERS_MAX_WAIT_S PEERS_RETRIES; do
  [[ -n "${!v:-}" ]] && command_line+="$v=${!v} "
done
command_line+="bench/side_by_side.sh"
for a in "$@"; do  # quoted only where a shell needs it (printf %q would write 0\,1 for 0,1)
  if [[ "$a" =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then command_line+=" $a"; else command_line+=" $(printf '%q' "$a")"; fi
done

while [[ $# -gt 0 ]]; do
  case "$1" in
    --peers) peers="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --openblas-coretype) coretype="$2"; shift 2 ;;
    --transformer) transformer="$2"; shift 2 ;;
    --gpt) gpt="$2"; shift 2 ;;
    --cnn) cnn="$2"; shift 2 ;;
    --real-size) real_size=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done

[[ -f "$peers/torch_mlp.py" && -f "$peers/numpy_mlp.py" ]] ||
  die "no peers' scripts (torch_mlp.py, numpy_mlp.py) in '$peers': pass --peers DIR"
peers=$(cd "$peers" && pwd)
timing="$build/bin/rematkit_step_timing"
[[ -x "$timing" ]] || die "no $timing: build it (cmake --build $build --target rematkit_step_timing)"
py=/usr/bin/python3  # the peers are written for Debian's interpreter and its python3-torch
[[ -x "$py" ]] || die "no $py (the peers need Debian's python3 with python3-torch and python3-numpy)"
[[ "$sizes" =~ ^[0-3](,[0-3])*$ ]] || die "--sizes takes indices 0 to 3, comma-separated, not '$sizes'"
[[ "$transformer" == default ]] && transformer="2,4,128,128,4,512"
[[ -z "$transformer" || "$transformer" =~ ^[0-9]+(,[0-9]+){5}$ ]] ||
  die "--transformer takes L,B,S,D,H,M (six integers) or 'default', not '$transformer'"
[[ -z "$transformer" || -f "$peers/torch_transformer.py" ]] || die "no torch_transformer.py in '$peers'"
[[ "$gpt" == default ]] && gpt="2,2,32,64,4,128"
[[ -z "$gpt" || "$gpt" =~ ^[0-9]+(,[0-9]+){5,6}$ ]] ||
  die "--gpt takes L,B,S,D,H,V[,M] (six or seven integers) or 'default', not '$gpt'"
torch_gpt="$root/bench/peers/torch_gpt.py"
[[ -z "$gpt" || -f "$torch_gpt" ]] || die "no $torch_gpt"
[[ -z "$gpt" || -f "$peers/common.py" ]] || die "no common.py in '$peers' (torch_gpt.py needs it)"
[[ "$cnn" == default ]] && cnn="8,16,3,16/32,1,10"
[[ -z "$cnn" || "$cnn" =~ ^[0-9]+,[0-9]+,[0-9]+,[0-9]+(/[0-9]+)*,[01],[0-9]+$ ]] ||
  die "--cnn takes B,I,C,W1/W2/..,D,K (D: downsample 0 or 1) or 'default', not '$cnn'"
torch_cnn="$root/bench/peers/torch_cnn.py"
[[ -z "$cnn" || -f "$torch_cnn" ]] || die "no $torch_cnn"
[[ -z "$cnn" || -f "$peers/common.py" ]] || die "no common.py in '$peers' (torch_cnn.py needs it)"
torch_llama="$root/bench/peers/torch_llama.py"
[[ -z "$real_size" || ( -f "$torch_gpt" && -f "$torch_llama" && -f "$peers/common.py" ) ]] ||
  die "--real-size needs $torch_gpt, $torch_llama and common.py in '$peers'"
if [[ -z "$work" ]]; then work=$(mktemp -d /tmp/side_by_side.XXXXXX); fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
echo "side_by_side.sh: raw results in $work" >&2

# The peers' children get OPENBLAS_CORETYPE from PEER_OPENBLAS_CORETYPE (common.py); the two
# variables below must not reach them from this shell.
peer_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONDONTWRITEBYTECODE=1)
corename() {
  "${peer_env[@]}" ${1:+OPENBLAS_CORETYPE=$1} "$py" -c '
import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null || echo unknown
}
if [[ -z "$coretype" ]]; then
  detected=$(corename "")
  case "$detected" in
    Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Katmai|Coppermine|Northwood|Banias|Opteron*|Barcelona|unknown)
      if grep -qw avx512f /proc/cpuinfo; then coretype=SkylakeX
      elif grep -qw avx2 /proc/cpuinfo; then coretype=Haswell; fi
      [[ -n "$coretype" ]] && echo "side_by_side.sh: OpenBLAS detected '$detected' (a pre-AVX fallback); the peers get $coretype" >&2 ;;
  esac
fi
peer_env+=(${coretype:+PEER_OPENBLAS_CORETYPE=$coretype})

# guarded LOAD_JSON COMMAND...: as the peers' guard (common.py's wait_quiet), waits up to
# PEERS_MAX_WAIT_S for other processes to use under PEERS_QUIET_CORES, runs COMMAND (its stdout to
# stderr), and writes to LOAD_JSON how long it waited and the cores other processes used meanwhile.
guarded() {
  "${peer_env[@]}" PEERS_DIR="$peers" "$py" -c '
import json, os, subprocess, sys, time
sys.path.insert(0, os.environ["PEERS_DIR"])
import common
waited, before = common.wait_quiet()
b0, o0, t0 = common.busy_s(), common.own_cpu_s(), time.time()
rc = subprocess.call(sys.argv[2:], stdout=sys.stderr)
foreign = max(0.0, (common.busy_s() - b0) - (common.own_cpu_s() - o0)) / (time.time() - t0)
with open(sys.argv[1], "w") as f:
    json.dump({"wait_quiet_s": round(waited, 1), "foreign_load_before": round(before, 3),
               "foreign_load_cores": round(foreign, 3)}, f)
sys.exit(rc)' "$@"
}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
pairs=()  # "size threads", the issue's table
for s in ${sizes//,/ }; do
  if [[ $s == 0 ]]; then pairs+=("0 1"); else pairs+=("$s 1" "$s 2"); fi
done
for pair in "${pairs[@]}"; do
  read -r s t <<<"$pair"
  echo "side_by_side.sh: size $s, $t thread(s)" >&2
  "$timing" --sizes "$s" --threads "$t" --policies everything_saveable --backends "$backends" \
    --target "$target" --max-seconds "$max_seconds" --quiet-cores "${PEERS_QUIET_CORES:-0.15}" \
    --max-wait-seconds "${PEERS_MAX_WAIT_S:-180}" --json "$work/rematkit_${s}_${t}.json" >"$work/rematkit_${s}_${t}.md"
  common=(--sizes "$s" --threads "$t" --variants none --rounds "$rounds")
  "${peer_env[@]}" "$py" "$peers/numpy_mlp.py" "${common[@]}" --out "$work/numpy.json" >&2
  "${peer_env[@]}" "$py" "$peers/torch_mlp.py" "${common[@]}" --out "$work/torch.json" >&2
  if [[ $t == 2 ]]; then  # the passive column: GOMP's workers sleep instead of spinning against OpenBLAS's
    "${peer_env[@]}" "$py" "$peers/torch_mlp.py" "${common[@]}" --tag passive --extra-env OMP_WAIT_POLICY=PASSIVE \
      --out "$work/torch_passive.json" >&2
  fi
done
if [[ -n "$transformer" ]]; then
  for t in 1 2; do
    echo "side_by_side.sh: transformer $transformer, $t thread(s)" >&2
    "$timing" --transformer "$transformer" --threads "$t" --policies everything_saveable --backends "$backends" \
      --target "$target" --max-seconds "$max_seconds" --quiet-cores "${PEERS_QUIET_CORES:-0.15}" \
      --max-wait-seconds "${PEERS_MAX_WAIT_S:-180}" --json "$work/rematkit_transformer_$t.json" >"$work/rematkit_transformer_$t.md"
    "${peer_env[@]}" "$py" "$peers/torch_transformer.py" --configs "$transformer" --threads "$t" --variants none \
      --rounds "$rounds" --out "$work/torch_transformer_$t.json" >&2
  done
fi
if [[ -n "$gpt" ]]; then
  for t in 1 2; do
    echo "side_by_side.sh: gpt $gpt, $t thread(s)" >&2
    "$timing" --gpt "$gpt" --threads "$t" --policies everything_saveable --backends "$backends" \
      --target "$target" --max-seconds "$max_seconds" --quiet-cores "${PEERS_QUIET_CORES:-0.15}" \
      --max-wait-seconds "${PEERS_MAX_WAIT_S:-180}" --json "$work/rematkit_gpt_$t.json" >"$work/rematkit_gpt_$t.md"
    "${peer_env[@]}" PEERS_DIR="$peers" "$py" "$torch_gpt" --configs "$gpt" --threads "$t" --variants none \
      --rounds "$rounds" --out "$work/torch_gpt_$t.json" >&2
  done
fi
if [[ -n "$cnn" ]]; then
  for t in 1 2; do
    echo "side_by_side.sh: cnn $cnn, $t thread(s)" >&2
    "$timing" --cnn "$cnn" --threads "$t" --policies everything_saveable,nothing_saveable --backends "$backends" \
      --target "$target" --max-seconds "$max_seconds" --quiet-cores "${PEERS_QUIET_CORES:-0.15}" \
      --max-wait-seconds "${PEERS_MAX_WAIT_S:-180}" --json "$work/rematkit_cnn_$t.json" >"$work/rematkit_cnn_$t.md"
    guarded "$work/torch_cnn_${t}_load.json" "$py" "$torch_cnn" --configs "$cnn" --threads "$t" \
      --variants none,ckpt_block --rounds "$rounds" --out "$work/torch_cnn_$t.json"
  done
fi
if [[ -n "$real_size" ]]; then
  for model in gpt llama; do
    if [[ $model == gpt ]]; then spec="12,1,128,768,12,50257" peer="$torch_gpt"; else spec="8,1,128,768,12,4,32000" peer="$torch_llama"; fi
    for t in 1 2; do
      for policy in everything_saveable nothing_saveable; do  # one process each: its peak RSS is its own
        echo "side_by_side.sh: real size, $model $spec, $t thread(s), $policy" >&2
        "$timing" --"$model" "$spec" --threads "$t" --policies "$policy" --backends "$backends" \
          --target "$target" --max-seconds "$max_seconds" --quiet-cores "${PEERS_QUIET_CORES:-0.15}" \
          --max-wait-seconds "${PEERS_MAX_WAIT_S:-180}" --json "$work/rematkit_real_${model}_${t}_${policy}.json" \
          >"$work/rematkit_real_${model}_${t}_${policy}.md"
      done
      "${peer_env[@]}" PEERS_DIR="$peers" "$py" "$peer" --configs "$spec" --threads "$t" --variants none,ckpt_block \
        --out "$work/torch_real_${model}_$t.json" >&2
    done
  done
fi
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
table=$("$py" "$root/bench/side_by_side_table.py" --work "$work" --pairs "$(IFS=';'; echo "${pairs[*]}")" \
  ${transformer:+--transformer "$transformer"} ${gpt:+--gpt "$gpt"} ${cnn:+--cnn "$cnn"} ${real_size:+--real-size} --quiet-cores "${PEERS_QUIET_CORES:-0.15}" --cpu "$cpu" --cores "$(nproc)" --started "$started" --finished "$finished" --command "$command_line")
if [[ -n "$out" ]]; then
  printf '%s\n' "$table" >"$out.tmp" && mv "$out.tmp" "$out"
  echo "side_by_side.sh: table written to $out" >&2
else
  printf '%s\n' "$table"
fi
