#!/usr/bin/python3
"""Peer benchmark: PyTorch (Debian python3-torch 1.13, CPU) CNN training step.

The model of rematkit's sweep `cnn:` entry (ModelBuilder's resnet_block, global_average_pool,
dense), block by block:
  x: [B,C,I,I] data (no gradient; NCHW, torch's layout, or NHWC in memory with --channels-last)
  per block of width W, stride s (2 for every block after the first with downsample, else 1):
    y = conv3x3(x, stride s) -> relu -> conv3x3(stride 1)
    r = x, or conv1x1(x, stride s) when x's shape is not y's (a stride or a new width)
    x = relu(r + y)
  every conv with a bias; then the mean over H, W -> [B,W], Linear(W, classes) -> y
loss = sum(y^2) (rematkit's Loss::kSumOfSquares). One step = forward + backward for the weights
(p.grad = None before each step, untimed). No optimizer update (rematkit's step adds SGD).

Padding: rematkit pads as JAX's 'SAME' does, (1, 1) at stride 1 and, for an even I at stride 2,
(0, 1); torch's Conv2d pads symmetrically, so here stride-2 convs pad (1, 1): the same shapes and
FLOPs, the windows shifted by one row and column. Params are torch's default init (timing only).
bf16 (--dtype): the params, the images and every activation in that dtype, as rematkit's `dtype:`
does (bf16 modules rather than autocast, which would keep f32 params and cast at every conv).

Variants: none | ckpt_block (torch.utils.checkpoint per block, use_reentrant=False)
          | ckpt_whole (one checkpoint around all blocks)
Each configuration runs in its own process; threads as in torch_mlp.py. The results carry
openblas_get_corename (OpenBLAS 0.3.21 falls back to Prescott kernels on CPUs it does not know:
set PEER_OPENBLAS_CORETYPE, see common.py); torch's CPU convolutions are oneDNN's (mkldnn) or its
own im2col + sgemm, which is OpenBLAS here.

common.py (the peers' helpers) is read from this folder or from ../shared/peers beside the
checkout, or from $PEERS_DIR.

Usage: /usr/bin/python3 bench/peers/torch_cnn.py [--configs B,I,C,W1/W2/..,D,K;...] [--threads 1,2]
       [--variants none,ckpt_block] [--channels-last] [--dtype f32[,bf16]] [--reps N] [--rounds 1]
       [--out results.json]
       (D: downsample 0 or 1; K: classes)
Default config: examples/cnn_sweep.yaml's model.
"""
import argparse
import json
import os
import subprocess
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.append(os.environ.get("PEERS_DIR", os.path.join(_here, "..", "..", "..", "shared", "peers")))
import common  # noqa: E402

DEFAULT_CONFIGS = "8,16,3,16/32,1,10"


def parse_config(spec):
    B, I, C, widths, D, K = spec.split(",")
    return dict(B=int(B), I=int(I), C=int(C), widths=[int(w) for w in widths.split("/")], downsample=bool(int(D)),
                K=int(K))


def conv_flops(cfg):
    """Forward FLOPs of the convolutions and the head (2 per multiply-add), as rematkit counts a
    conv_general_dilated and a dot_general; biases, relus, the mean and the loss left out."""
    B, size, cin, total = cfg["B"], cfg["I"], cfg["C"], 0
    for i, w in enumerate(cfg["widths"]):
        s = 2 if cfg["downsample"] and i > 0 else 1
        out = (size + s - 1) // s
        total += 2 * B * out * out * 9 * cin * w + 2 * B * out * out * 9 * w * w
        if s != 1 or cin != w:
            total += 2 * B * out * out * cin * w
        size, cin = out, w
    return total + 2 * B * cin * cfg["K"]


def child(cfg):
    rss_start = common.rss_now_bytes()
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    torch.set_num_threads(cfg["threads"])
    torch.manual_seed(0)
    B, I, C, K = cfg["B"], cfg["I"], cfg["C"], cfg["K"]
    fmt = torch.channels_last if cfg["channels_last"] else torch.contiguous_format
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[cfg["dtype"]]

    class Block(nn.Module):
        def __init__(self, cin, w, s):
            super().__init__()
            self.conv0 = nn.Conv2d(cin, w, 3, stride=s, padding=1)
            self.conv1 = nn.Conv2d(w, w, 3, stride=1, padding=1)
            self.proj = nn.Conv2d(cin, w, 1, stride=s) if s != 1 or cin != w else None

        def forward(self, x):
            y = self.conv1(torch.relu(self.conv0(x)))
            r = x if self.proj is None else self.proj(x)
            return torch.relu(r + y)

    blocks, cin = [], C
    for i, w in enumerate(cfg["widths"]):
        blocks.append(Block(cin, w, 2 if cfg["downsample"] and i > 0 else 1))
        cin = w
    head = nn.Linear(cin, K)
    for m in blocks:
        m.to(memory_format=fmt)
    for m in blocks + [head]:
        m.to(dtype)
    params = [p for m in blocks + [head] for p in m.parameters()]
    x = (torch.rand(B, C, I, I) * 2 - 1).to(dtype).contiguous(memory_format=fmt)

    def body(h):
        for blk in blocks:
            h = checkpoint(blk, h, use_reentrant=False) if cfg["variant"] == "ckpt_block" else blk(h)
        return h

    def fwd():
        h = checkpoint(body, x, use_reentrant=False) if cfg["variant"] == "ckpt_whole" else body(x)
        return head(h.mean(dim=(2, 3)))

    def prepare():
        for p in params:
            p.grad = None

    def step():
        (fwd() ** 2).sum().backward()

    rss_setup = common.rss_now_bytes()
    prepare()
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    tm = common.time_steps(step, prepare, fixed_reps=cfg.get("reps"), prior_step_s=first)
    fwd_flops = conv_flops(cfg)
    out = dict(cfg)
    out.update(tm)
    out.update({
        "impl": "torch",
        "torch_version": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "mkldnn_enabled": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,
        "flops_forward": fwd_flops,
        "gflops_forward_x3": 3 * fwd_flops / tm["median_s"] / 1e9,
        "rss_start_MiB": rss_start / 2**20,
        "rss_setup_MiB": rss_setup / 2**20,
        "rss_peak_MiB": common.rss_peak_bytes() / 2**20,
        "blas": common.blas_info(),
        "openblas": common.openblas_config(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                 "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
    })
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="B,I,C,W1/W2/..,downsample,classes;...")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--variants", default="none,ckpt_block")
    ap.add_argument("--channels-last", action="store_true", help="NHWC in memory (rematkit's layout)")
    ap.add_argument("--dtype", default="f32", help="f32, bf16 or both (f32,bf16)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.child:
        child(json.loads(a.child))
        return
    dtypes = a.dtype.split(",")
    if any(d not in ("f32", "bf16") for d in dtypes):
        raise SystemExit(f"torch_cnn.py: --dtype takes f32 and/or bf16, not '{a.dtype}'")
    results = []
    for _ in range(a.rounds):
        for spec in a.configs.split(";"):
            model = parse_config(spec)
            for t in (int(v) for v in a.threads.split(",")):
                for variant, dtype in ((v, d) for v in a.variants.split(",") for d in dtypes):
                    cfg = dict(model, threads=t, variant=variant, channels_last=a.channels_last, dtype=dtype, reps=a.reps)
                    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(cfg)],
                                       capture_output=True, text=True, env=common.child_env(t))
                    if p.returncode != 0:
                        print(p.stderr, file=sys.stderr)
                        continue
                    r = json.loads(p.stdout.strip().splitlines()[-1])
                    results.append(r)
                    core = next((v for k, v in r["openblas"].items() if k.endswith("corename")), "?")
                    print(f"{spec} threads={t} {dtype} {variant}: median {r['median_s'] * 1e3:.2f} ms "
                          f"(min {r['min_s'] * 1e3:.2f}) openblas core {core}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
