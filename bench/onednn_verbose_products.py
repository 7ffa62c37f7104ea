#!/usr/bin/env python3
"""Every oneDNN matmul of a run, from its ONEDNN_VERBOSE=1 log, as GFLOP/s and a share of a peak.

Reads the log on stdin (oneDNN 2.6's `onednn_verbose,exec,cpu,matmul,IMPL,...,SRC:WEI:DST,MS` lines)
and prints a markdown table: one row per distinct product (shapes and memory formats), with its
count, median time, GFLOP/s (2 x batch x M x K x N over the median) and the share of --peak.

  ONEDNN_VERBOSE=1 build/bin/rematkit_step_timing --gpt 2,2,512,768,12,50257 --threads 1 \\
      --policies everything_saveable --max-seconds 1 | bench/onednn_verbose_products.py --peak 100
"""
import argparse
import statistics
import sys


def product_of(fields):
    """(batch, m, k, n, formats, impl) of a matmul exec line, or None."""
    if len(fields) < 11 or fields[1] != "exec" or fields[3] != "matmul":
        return None
    shapes = fields[-2].split(":")
    if len(shapes) != 3:
        return None
    src, wei = ([int(d) for d in s.split("x")] for s in shapes[:2])
    batch = 1
    for d in src[:-2]:
        batch *= d
    m, k, n = src[-2], src[-1], wei[-1]
    formats = " ".join(f.split("::")[0] + ":" + f.split(":")[-2] for f in fields[6].split() if "::" in f)
    return batch, m, k, n, formats, fields[4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak", type=float, required=True, help="the FMA peak in GFLOP/s (rematkit_peak_probe)")
    ap.add_argument("--min-count", type=int, default=1, help="leave out products seen fewer times (warm-up)")
    a = ap.parse_args()
    times = {}
    for line in sys.stdin:
        if not line.startswith(("onednn_verbose,", "dnnl_verbose,")):
            continue
        fields = line.strip().split(",")
        p = product_of(fields)
        if p:
            times.setdefault(p, []).append(float(fields[-1]))
    print(f"| product (batch x M x K x N) | formats (src wei dst) | kernel | runs | median ms | GFLOP/s | share of {a.peak:.0f} |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for (batch, m, k, n, formats, impl), ms in times.items():
        if len(ms) < a.min_count:
            continue
        median = statistics.median(ms)
        gflops = 2.0 * batch * m * k * n / (median * 1e6)
        rows.append((-2.0 * batch * m * k * n * len(ms), batch, m, k, n, formats, impl, len(ms), median, gflops))
    for _, batch, m, k, n, formats, impl, count, median, gflops in sorted(rows):
        print(f"| {batch} x {m} x {k} x {n} | {formats} | {impl} | {count} | {median:.3f} | {gflops:.1f} | "
              f"{100 * gflops / a.peak:.0f}% |")


if __name__ == "__main__":
    main()
