#!/usr/bin/python3
"""Each row of a sweep's JSON against its FLOPs bound: a policy's median step time over its group's
everything_saveable's should be at most 1 + 1.5 x (its recompute FLOPs over the baseline's forward
and backward FLOPs) + 0.05, what recomputation costs where the recomputed ops run as fast as the
rest. Prints a line per row; exits 1 if any row is over.

Usage: bench/policy_flops_bound.py rows.json   (from `rematkit sweep FILE --json rows.json`)
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = json.load(f)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    baselines = {(r["model"], r["backend"], r["threads"]): r for r in rows if r["policy"] == "everything_saveable"}
    over = 0
    for r in rows:
        base = baselines.get((r["model"], r["backend"], r["threads"]))
        if base is None or r["failure"]:
            continue
        bound = 1 + 1.5 * r["recompute_flops"] / (base["forward_flops"] + base["backward_flops"]) + 0.05
        ratio = r["median_ms"] / base["median_ms"]
        over += ratio > bound
        print(f"{r['model']} {r['backend']} {r['threads']} thread(s) {r['policy']}: {ratio:.3f}x, bound {bound:.3f}"
              f"{'  OVER' if ratio > bound else ''}")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
