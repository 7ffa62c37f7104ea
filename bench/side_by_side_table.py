#!/usr/bin/env python3
"""The markdown table of bench/side_by_side.sh, from the raw results it left in --work:
rematkit_<size>_<threads>.json (rematkit_step_timing --json) and numpy.json, torch.json,
torch_passive.json (the peers' --out files), with --transformer rematkit_transformer_<threads>.json
and torch_transformer_<threads>.json, with --gpt rematkit_gpt_<threads>.json and torch_gpt_<threads>.json, with --real-size
rematkit_real_<model>_<threads>_<policy>.json and torch_real_<model>_<threads>.json, and with --cnn rematkit_cnn_<threads>.json, torch_cnn_<threads>.json
(bench/peers/torch_cnn.py's --out) and torch_cnn_<threads>_load.json (other processes' load while it
ran, from side_by_side.sh's guard). Median step time in ms; rematkit's with its 95%
interval; "best peer / rematkit" is the fastest peer's median over rematkit's (above 1: rematkit
is faster)."""
import argparse
import json
import os
import statistics

SIZES = [(1, 64, 64), (32, 512, 512), (256, 1024, 1024), (1024, 2048, 2048)]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def ms(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 100 else f"{v:#.3g}"  # three significant digits: 11.0, 0.0509, 150


def peer_record(records, size, threads):
    B, D, F = size
    for r in records or []:
        if (r["B"], r["D"], r["F"], r["threads"], r["variant"]) == (B, D, F, threads, "none"):
            return r
    return None


def peer_cell(record):
    return "-" if record is None else ms(record["median_s"] * 1e3) + busy_mark(record.get("foreign_load_cores_max"))


def rematkit_row(path):
    """rematkit's everything_saveable row of one step_timing JSON, its others' load, or (None, None)."""
    rk = load(path)
    if not rk:
        return None, None
    config = rk["configurations"][0]
    return next(r for r in config["rows"] if r["kind"] == "step"), config["others_load_share"]


# Set by main: other processes' load, in cores, above which a cell is marked as measured on a busy machine.
QUIET = {"cores": 0.15, "machine": 1, "marked": False}


def busy_mark(cores):
    if cores is not None and cores > QUIET["cores"]:
        QUIET["marked"] = True
        return " †"
    return ""


def rematkit_cell(row, others_share=None):
    if row is None:
        return "-"
    mark = busy_mark(others_share * QUIET["machine"] if others_share is not None and others_share >= 0 else None)
    return f"{ms(row['median_ms'])} (±{100 * row['half_width_share']:.1f}%{'' if row['target_reached'] else ' *'}){mark}"


def transformer_lines(work, config):
    """The second table: rematkit's transformer step against torch_transformer.py's `none`."""
    lines = ["", "| (L, B, S, D, H, M) | threads | rematkit | PyTorch | PyTorch / rematkit |", "|---|---|---|---|---|"]
    rows = []
    for t in (1, 2):
        row, others = rematkit_row(os.path.join(work, f"rematkit_transformer_{t}.json"))
        torch = [r for r in load(os.path.join(work, f"torch_transformer_{t}.json")) or [] if r["variant"] == "none"]
        # torch_transformer.py keeps one record per round: their median, as the MLP peers pool theirs.
        torch_ms = statistics.median(r["median_s"] for r in torch) * 1e3 if torch else None
        ratio = f"{torch_ms / row['median_ms']:.2f}x" if torch_ms and row else "-"
        lines.append(f"| ({config.replace(',', ', ')}) | {t} | {rematkit_cell(row, others)} | {ms(torch_ms)} | {ratio} |")
        rows.append((row, others))
    return lines, rows


def gpt_lines(work, config):
    """The gpt table: rematkit's gpt step against torch_gpt.py's `none`, both with dropout 0.1."""
    lines = ["", "| gpt (L, B, S, D, H, V[, M]) | threads | rematkit | PyTorch | PyTorch / rematkit |", "|---|---|---|---|---|"]
    rows, records = [], []
    for t in (1, 2):
        row, others = rematkit_row(os.path.join(work, f"rematkit_gpt_{t}.json"))
        torch = [r for r in load(os.path.join(work, f"torch_gpt_{t}.json")) or [] if r["variant"] == "none"]
        records += torch
        # One record per round: their median, as the MLP peers pool theirs.
        torch_ms = statistics.median(r["median_s"] for r in torch) * 1e3 if torch else None
        ratio = f"{torch_ms / row['median_ms']:.2f}x" if torch_ms and row else "-"
        lines.append(f"| ({config.replace(',', ', ')}) | {t} | {rematkit_cell(row, others)} | {ms(torch_ms)} | {ratio} |")
        rows.append((row, others))
    return lines, rows, records


def rematkit_rows(path):
    """Every step row of one step_timing JSON by policy, and its others' load; ({}, None) without one."""
    rk = load(path)
    if not rk:
        return {}, None
    config = rk["configurations"][0]
    return {r["name"]: r for r in config["rows"] if r["kind"] == "step"}, config["others_load_share"]


def cnn_lines(work, config):
    """The third table: rematkit's CNN step, everything_saveable against torch_cnn.py's `none` and
    nothing_saveable (each block recomputed in the backward) against its `ckpt_block`."""
    lines = ["", "| (B, I, C, widths, D, K) | threads | rematkit everything_saveable | PyTorch none | PyTorch / rematkit "
             "| rematkit nothing_saveable | PyTorch ckpt_block | PyTorch / rematkit |", "|---|---|---|---|---|---|---|---|"]
    rows, peer_records, peer_loads = [], [], []
    for t in (1, 2):
        by_name, others = rematkit_rows(os.path.join(work, f"rematkit_cnn_{t}.json"))
        records = load(os.path.join(work, f"torch_cnn_{t}.json")) or []
        peer_records += records
        guard = load(os.path.join(work, f"torch_cnn_{t}_load.json"))
        foreign = guard["foreign_load_cores"] if guard else None
        if foreign is not None:
            peer_loads.append(foreign)
        cells = []
        for policy, variant in (("everything_saveable", "none"), ("nothing_saveable", "ckpt_block")):
            row = by_name.get(policy)
            torch = [r["median_s"] for r in records if r["variant"] == variant]
            # One record per round: their median, as the MLP peers pool theirs.
            torch_ms = statistics.median(torch) * 1e3 if torch else None
            ratio = f"{torch_ms / row['median_ms']:.2f}x" if torch_ms and row else "-"
            torch_cell = "-" if torch_ms is None else ms(torch_ms) + busy_mark(foreign)
            if len(torch) > 1:  # the rounds' spread: torch's CNN step can differ severalfold from one process to the next
                torch_cell += f" ({ms(min(torch) * 1e3)}-{ms(max(torch) * 1e3)})"
            cells += [rematkit_cell(row, others), torch_cell, ratio]
            rows.append((row, others))
        label = config.replace(",", ", ")
        lines.append(f"| ({label}) | {t} | " + " | ".join(cells) + " |")
    return lines, rows, peer_records, peer_loads


REAL_SIZES = (("gpt", "GPT-2 small (12, 1, 128, 768, 12, 50257)"), ("llama", "Llama 100M (8, 1, 128, 768, 12, 4, 32000)"))


def real_size_lines(work):
    """The real-size table: each model, threads and remat in processes of their own, with their peak RSS."""
    lines = ["", "| model (L, B, S, D, H[, K], V) | threads | remat | rematkit ms | PyTorch ms | PyTorch / rematkit "
             "| rematkit peak RSS MiB (plan) | PyTorch peak RSS MiB |", "|---|---|---|---|---|---|---|---|"]
    rows, records = [], []
    for model, label in REAL_SIZES:
        for t in (1, 2):
            peer = load(os.path.join(work, f"torch_real_{model}_{t}.json")) or []
            records += peer
            for policy, variant, remat in (("everything_saveable", "none", "none"), ("nothing_saveable", "ckpt_block", "per block")):
                rk = load(os.path.join(work, f"rematkit_real_{model}_{t}_{policy}.json"))
                config = rk["configurations"][0] if rk else None
                row = next((r for r in config["rows"] if r["kind"] == "step"), None) if config else None
                others = config["others_load_share"] if config else None
                torch = [r for r in peer if r["variant"] == variant]
                torch_ms = statistics.median(r["median_s"] for r in torch) * 1e3 if torch else None
                ratio = f"{torch_ms / row['median_ms']:.2f}x" if torch_ms and row else "-"
                rss = f"{config['process_peak_rss_MiB']:.0f} ({row['predicted_peak_MiB']:.0f})" if row else "-"
                torch_rss = f"{max(r['rss_peak_MiB'] for r in torch):.0f}" if torch else "-"
                lines.append(f"| {label} | {t} | {remat} | {rematkit_cell(row, others)} | {ms(torch_ms)} | {ratio} | {rss} | {torch_rss} |")
                rows.append((row, others))
    return lines, rows, records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--pairs", required=True, help="'size threads;size threads;...'")
    ap.add_argument("--transformer", default="", help="L,B,S,D,H,M of the transformer table, if any")
    ap.add_argument("--gpt", default="", help="L,B,S,D,H,V[,M] of the gpt table, if any")
    ap.add_argument("--cnn", default="", help="B,I,C,W1/W2/..,D,K of the CNN table, if any")
    ap.add_argument("--real-size", action="store_true", help="the real-size table of GPT-2 small and a 100M Llama")
    for name in ("cpu", "cores", "started", "finished", "command"):
        ap.add_argument("--" + name, default="")
    ap.add_argument("--quiet-cores", type=float, default=0.15, help="the peers' PEERS_QUIET_CORES")
    a = ap.parse_args()
    QUIET["cores"] = a.quiet_cores
    QUIET["machine"] = int(a.cores) if a.cores else os.cpu_count()

    peers = {name: load(os.path.join(a.work, name + ".json")) for name in ("numpy", "torch", "torch_passive")}
    lines = ["| (B, D, F) | threads | rematkit | NumPy | PyTorch | PyTorch passive | best peer / rematkit |",
             "|---|---|---|---|---|---|---|"]
    missed = False
    others = []
    for pair in a.pairs.split(";"):
        s, t = map(int, pair.split())
        size = SIZES[s]
        row, load_share = rematkit_row(os.path.join(a.work, f"rematkit_{s}_{t}.json"))
        rk_ms, rk_cell = (row["median_ms"], rematkit_cell(row, load_share)) if row else (None, "-")
        if row:
            others.append(load_share)
            missed = missed or not row["target_reached"]
        records = [peer_record(peers["numpy"], size, t), peer_record(peers["torch"], size, t),
                   peer_record(peers["torch_passive"], size, t) if t == 2 else None]
        known = [r["median_s"] * 1e3 for r in records if r is not None]
        ratio = f"{min(known) / rk_ms:.2f}x" if known and rk_ms else "-"
        lines.append(f"| ({size[0]}, {size[1]}, {size[2]}) | {t} | {rk_cell} | "
                     + " | ".join(peer_cell(r) for r in records) + f" | {ratio} |")

    if a.transformer:
        more, rows = transformer_lines(a.work, a.transformer)
        lines += more
        others += [o for r, o in rows if r]
        missed = missed or any(r and not r["target_reached"] for r, _ in rows)

    if a.gpt:
        more, rows, records = gpt_lines(a.work, a.gpt)
        lines += more
        others += [o for r, o in rows if r]
        missed = missed or any(r and not r["target_reached"] for r, _ in rows)
        peers["torch_gpt"] = records

    cnn_foreign = []
    if a.cnn:
        more, rows, records, cnn_foreign = cnn_lines(a.work, a.cnn)
        lines += more
        others += [o for r, o in rows if r]
        missed = missed or any(r and not r["target_reached"] for r, _ in rows)
        peers["torch_cnn"] = records

    if a.real_size:
        more, rows, records = real_size_lines(a.work)
        lines += more
        others += [o for r, o in rows if r]
        missed = missed or any(r and not r["target_reached"] for r, _ in rows)
        peers["torch_real"] = records

    corenames = sorted({v for records in peers.values() for r in records or []
                        for k, v in r.get("openblas", {}).items() if k.endswith("openblas_get_corename")})
    foreign = [r.get("foreign_load_cores_max") for records in peers.values() for r in records or []]
    foreign = [f for f in foreign if f is not None] + cnn_foreign
    lines.append("")
    lines.append("Median step time in ms (rematkit: everything_saveable, with the half-width of the 95% interval of "
                 "its median); best peer / rematkit: the fastest peer's median over rematkit's, above 1 when rematkit is faster.")
    if a.cnn:
        lines.append("CNN: rematkit's nothing_saveable recomputes each block in the backward, as PyTorch's ckpt_block "
                     "(torch.utils.checkpoint per block); rematkit's step also runs the SGD update, PyTorch's does not; "
                     "PyTorch in NCHW and padding stride-2 convolutions (1, 1) where rematkit pads SAME, (0, 1) "
                     "(the same shapes and FLOPs); PyTorch: the median of its rounds' medians (each a fresh process), their lowest and highest in brackets.")
    if a.real_size:
        lines.append("Real size: rematkit's nothing_saveable recomputes each block in the backward, as PyTorch's ckpt_block "
                     "(torch.utils.checkpoint per block); rematkit's step also runs the SGD update, PyTorch's does not; "
                     "each configuration in a process of its own; rematkit's peak RSS with its step's planned peak in brackets.")
    if missed:
        lines.append("* rematkit's interval did not reach the target within --max-seconds: the one reached is shown.")
    if QUIET["marked"]:
        lines.append(f"† measured while other processes took more than {QUIET['cores']} cores (the peers' guard waits "
                     "for less, then runs anyway): slower than on a quiet machine.")
    lines.append(f"- CPU: {a.cpu} ({a.cores} cores)")
    lines.append(f"- peers' OpenBLAS core (openblas_get_corename): {', '.join(corenames) or 'not reported'}")
    if others:
        lines.append(f"- other processes' load while rematkit ran: up to {100 * max(others):.0f}% of the machine; "
                     f"while the peers ran: up to {max(foreign) if foreign else float('nan'):.2f} cores")
    lines.append(f"- date: {a.started} to {a.finished}")
    lines.append(f"- command: `{a.command}`")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
