#!/usr/bin/env python3
"""How often a sweep's ranking against everything_saveable holds from one run to the next.

Reads the JSON of two runs of one sweep (`rematkit sweep --json A.json`, then B.json) and prints,
over the rows other than the baseline: the share whose median is on the same side of the baseline's
in both runs, and, where the rows carry verdicts, the share of clear differences (faster or slower in
run A) that keep their sign in run B, and how many of them B also calls clear.

  bench/sweep_stability.py A.json B.json
"""
import json
import sys


def by_key(path):
    rows = json.load(open(path))
    return {(r["model"], r["policy"], r["backend"], r["threads"]): r for r in rows}


def baseline_of(rows, key):
    model, _, backend, threads = key
    return rows.get((model, "everything_saveable", backend, threads))


def sign(row, base):
    return (row["median_ms"] > base["median_ms"]) - (row["median_ms"] < base["median_ms"])


def main(a_path, b_path):
    a, b = by_key(a_path), by_key(b_path)
    same = total = clear = clear_kept = clear_both = contradicted = 0
    for key, row_a in a.items():
        if key[1] == "everything_saveable" or key not in b:
            continue
        base_a, row_b, base_b = baseline_of(a, key), b[key], baseline_of(b, key)
        if base_a is None or base_b is None:
            continue
        total += 1
        same += sign(row_a, base_a) == sign(row_b, base_b)
        verdict_a, verdict_b = row_a.get("versus_baseline", ""), row_b.get("versus_baseline", "")
        if verdict_a in ("faster", "slower"):
            clear += 1
            clear_kept += sign(row_a, base_a) == sign(row_b, base_b)
            clear_both += verdict_b == verdict_a
            contradicted += verdict_b in ("faster", "slower") and verdict_b != verdict_a
    print(f"rows compared: {total}")
    print(f"same side of the baseline in both runs: {same}/{total} ({100.0 * same / max(total, 1):.1f}%)")
    if clear:
        print(f"clear differences in run A: {clear}; same side in run B: {clear_kept}/{clear} "
              f"({100.0 * clear_kept / clear:.1f}%); the same verdict in run B: {clear_both}/{clear}; "
              f"the opposite clear verdict: {contradicted}")
    else:
        print("no verdicts (a sweep from before they were written)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
