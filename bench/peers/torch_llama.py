#!/usr/bin/python3
"""Peer: PyTorch (Debian python3-torch 1.13, CPU) Llama training step, and a check against rematkit.

The model of rematkit's sweep `llama:` entry (rematkit::build_llama, framework/src/flax/llama.cpp),
with V = vocab, S = sequence, D = model, H = heads, K = kv_heads (Dh = D/H), M = mlp, L = layers:
  x = embedding[ids]                          embedding: [V,D] (a gather)
  per block (pre-RMSNorm, no biases):
    rms(x, s) = x * (rsqrt(mean(x^2, -1) + 1e-6) * s)
    q, k, v = rms(x) Wq [B,S,H,Dh], rms(x) Wk and rms(x) Wv [B,S,K,Dh]
    q, k = rotary(q), rotary(k)               the halves (x1, x2) of each head rotated by the angle
                                              position / 10000^(2i/Dh): (x1 cos - x2 sin, x2 cos + x1 sin)
    k, v repeated for their H/K query heads (jnp.repeat: head h reads kv head h // (H/K))
    p = softmax(where(causal, (q / sqrt(Dh)) k^T, finfo.min))
    x = x + merge(p v) Wo
    x = x + (silu(rms(x) Wgate) * (rms(x) Wup)) Wdown
  logits = rms(x, norm_scale) lm_head          the head untied: [D,V]
loss = mean over the B*S tokens of logsumexp(logits) - logits[target], in f32.

--check REMATKIT: on a small config, draws the params (normal(0.02) kernels and embedding, ones for
the RMSNorm scales) and tokens with NumPy, asks `REMATKIT program` for the sweep model's program and
`REMATKIT grad` for its loss and gradients on those values, computes them here in f32, and prints
the largest differences (exit 1 beyond 1e-5 of the loss, 1e-6 absolute in a gradient).

Timing (the default): one step = forward + loss + backward for all params (p.grad = None before each
step, untimed), variants none | ckpt_block (torch.utils.checkpoint per block, use_reentrant=False;
rematkit's `remat: per_layer`), in a child process each with the peers' quiet-machine guard
(common.py, read from this folder, ../shared/peers beside the checkout, or $PEERS_DIR).

Usage: /usr/bin/python3 bench/peers/torch_llama.py [--configs L,B,S,D,H,K,V[,M];...] [--threads 1,2]
       [--variants none,ckpt_block] [--dtype f32|bf16] [--reps N] [--out results.json]
       /usr/bin/python3 bench/peers/torch_llama.py --check build/bin/rematkit
(M: the sweep's default, 8/3 x D rounded up to a multiple of 8, when left out.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.append(os.environ.get("PEERS_DIR", os.path.join(_here, "..", "..", "..", "shared", "peers")))

DEFAULT_CONFIGS = "2,2,32,64,4,2,128"
BLOCK_PARAMS = ("attention_norm_scale", "attention_q_kernel", "attention_k_kernel", "attention_v_kernel",
                "attention_o_kernel", "mlp_norm_scale", "mlp_gate_kernel", "mlp_up_kernel", "mlp_down_kernel")


def parse_config(spec):
    fields = [int(v) for v in spec.split(",")]
    if len(fields) not in (7, 8):
        raise SystemExit(f"torch_llama.py: a config is L,B,S,D,H,K,V[,M], not '{spec}'")
    L, B, S, D, H, K, V = fields[:7]
    M = fields[7] if len(fields) == 8 else (8 * D // 3 + 7) // 8 * 8
    if D % H != 0 or (D // H) % 2 != 0 or H % K != 0:
        raise SystemExit(f"torch_llama.py: '{spec}' needs D = H x an even head width and K dividing H")
    return dict(L=L, B=B, S=S, D=D, H=H, K=K, V=V, M=M)


def param_shapes(cfg):
    """rematkit's build_llama arguments after ids and targets, in order, with their shapes."""
    L, D, H, K, V, M = (cfg[k] for k in ("L", "D", "H", "K", "V", "M"))
    kd = K * (D // H)
    shapes = [("embedding", (V, D))]
    for l in range(L):
        for name, shape in zip(BLOCK_PARAMS, ((D,), (D, D), (D, kd), (D, kd), (D, D), (D,), (D, M), (D, M), (M, D))):
            shapes.append((f"layers_{l}_{name}", shape))
    return shapes + [("norm_scale", (D,)), ("lm_head_kernel", (D, V))]


def llama_loss(torch, cfg, p, ids, targets, checkpoint_block=None):
    """The loss from params `p` (name -> tensor) as build_llama computes it."""
    F = torch.nn.functional
    L, B, S, D, H, K = (cfg[k] for k in ("L", "B", "S", "D", "H", "K"))
    Dh, half = D // H, D // H // 2
    dtype = p["embedding"].dtype

    def rms(x, scale):
        inv = torch.rsqrt((x * x).sum(-1, keepdim=True) / D + 1e-6)
        return x * (inv * scale)

    fraction = 2 * torch.arange(half, dtype=torch.float32) / Dh
    angle = torch.arange(S, dtype=torch.float32)[:, None] / torch.pow(torch.tensor(10000.0), fraction)[None, :]
    sin, cos = (f(angle).to(dtype)[None, :, None, :] for f in (torch.sin, torch.cos))

    def rotary(t):
        t1, t2 = t[..., :half], t[..., half:]
        return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)

    causal = torch.ones(S, S, dtype=torch.bool).tril()
    masked = torch.tensor(torch.finfo(dtype).min, dtype=dtype)

    def block(x, w):
        y = rms(x, w[0])
        q = rotary((y @ w[1]).reshape(B, S, H, Dh)) / torch.tensor(Dh ** 0.5, dtype=dtype)
        k = rotary((y @ w[2]).reshape(B, S, K, Dh)).repeat_interleave(H // K, dim=2)
        v = (y @ w[3]).reshape(B, S, K, Dh).repeat_interleave(H // K, dim=2)
        scores = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)
        weights = torch.softmax(torch.where(causal, scores, masked), dim=-1)
        x = x + (weights @ v.transpose(1, 2)).transpose(1, 2).reshape(B, S, D) @ w[4]
        y = rms(x, w[5])
        return x + (F.silu(y @ w[6]) * (y @ w[7])) @ w[8]

    x = p["embedding"][ids]
    for l in range(L):
        w = [p[f"layers_{l}_{name}"] for name in BLOCK_PARAMS]
        x = checkpoint_block(block, x, w) if checkpoint_block else block(x, w)
    logits = rms(x, p["norm_scale"]) @ p["lm_head_kernel"]
    lse = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, targets[..., None])[..., 0]
    return (lse - picked).float().mean()


def check(rematkit):
    import numpy as np
    import torch

    cfg = parse_config("2,2,8,16,4,2,32")
    rng = np.random.default_rng(0)
    values = {"ids": rng.integers(0, cfg["V"], (cfg["B"], cfg["S"])), "targets": rng.integers(0, cfg["V"], (cfg["B"], cfg["S"]))}
    for name, shape in param_shapes(cfg):
        values[name] = np.ones(shape, np.float32) if name.endswith("norm_scale") else (rng.standard_normal(shape) * 0.02).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        sweep = os.path.join(d, "llama.yaml")
        with open(sweep, "w") as f:
            f.write("models:\n  - name: llama\n    llama: {layers: %(L)d, batch: %(B)d, sequence: %(S)d, model: %(D)d, "
                    "heads: %(H)d, kv_heads: %(K)d, vocab: %(V)d, mlp: %(M)d, remat: per_layer}\n"
                    "policies: [everything_saveable]\nbackends: [reference]\n" % cfg)
        program = os.path.join(d, "llama.jaxpr")
        with open(program, "w") as f:
            f.write(subprocess.run([rematkit, "program", sweep], check=True, capture_output=True, text=True).stdout)
        inputs = os.path.join(d, "in.json")
        with open(inputs, "w") as f:
            json.dump({k: v.tolist() for k, v in values.items()}, f)
        names = [n for n, _ in param_shapes(cfg)]
        run = subprocess.run([rematkit, "grad", program, "--inputs", inputs, "--wrt", ",".join(names), "--backend", "reference"],
                             check=True, capture_output=True, text=True)
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    p = {n: torch.tensor(values[n], requires_grad=True) for n in names}
    loss = llama_loss(torch, cfg, p, torch.tensor(values["ids"]), torch.tensor(values["targets"]))
    loss.backward()
    loss_diff = abs(loss.item() - theirs["value"])
    grad_diff = max(float(np.max(np.abs(p[n].grad.numpy() - np.array(theirs["grads"][n])))) for n in names)
    print(json.dumps({"config": cfg, "loss_torch": loss.item(), "loss_rematkit": theirs["value"], "loss_diff": loss_diff,
                      "max_grad_diff": grad_diff, "torch_version": torch.__version__}))
    if loss_diff > 1e-5 * max(1.0, abs(loss.item())) or grad_diff > 1e-6:
        sys.exit(1)


def child(cfg):
    import common
    rss_start = common.rss_now_bytes()
    import torch
    from torch.utils.checkpoint import checkpoint

    torch.set_num_threads(cfg["threads"])
    torch.manual_seed(0)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[cfg["dtype"]]
    p = {}
    for name, shape in param_shapes(cfg):
        t = torch.ones(shape) if name.endswith("norm_scale") else torch.randn(shape) * 0.02
        p[name] = t.to(dtype).requires_grad_()
    n_params = sum(t.numel() for t in p.values())
    tokens = torch.randint(0, cfg["V"], (cfg["B"], cfg["S"] + 1), generator=torch.Generator().manual_seed(0))
    ids, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    ckpt = (lambda f, x, w: checkpoint(f, x, w, use_reentrant=False)) if cfg["variant"] == "ckpt_block" else None

    def prepare():
        for t in p.values():
            t.grad = None

    losses = []

    def step():
        loss = llama_loss(torch, cfg, p, ids, targets, ckpt)
        loss.backward()
        if not losses:
            losses.append(loss.item())

    rss_setup = common.rss_now_bytes()
    prepare()
    t0 = time.perf_counter()
    step()
    tm = common.time_steps(step, prepare, fixed_reps=cfg.get("reps"), prior_step_s=time.perf_counter() - t0)
    out = dict(cfg)
    out.update(tm)
    out.update({"impl": "torch", "torch_version": torch.__version__, "torch_num_threads": torch.get_num_threads(),
                "params": n_params, "loss_first_step": losses[0], "rss_start_MiB": rss_start / 2**20,
                "rss_setup_MiB": rss_setup / 2**20, "rss_peak_MiB": common.rss_peak_bytes() / 2**20,
                "openblas": common.openblas_config()})
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--check", metavar="REMATKIT", help="compare loss and gradients with this rematkit binary")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="L,B,S,D,H,K,V[,M];...")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--variants", default="none,ckpt_block")
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.check:
        check(a.check)
        return
    if a.child:
        child(json.loads(a.child))
        return
    import common
    variants = a.variants.split(",")
    if any(v not in ("none", "ckpt_block") for v in variants):
        raise SystemExit(f"torch_llama.py: --variants takes none and ckpt_block, not '{a.variants}'")
    results = []
    for spec in a.configs.split(";"):
        for t in (int(v) for v in a.threads.split(",")):
            for variant in variants:
                cfg = dict(parse_config(spec), threads=t, variant=variant, dtype=a.dtype, reps=a.reps)
                r = common._run_one(os.path.abspath(__file__), cfg, 1800)
                if r is None:
                    continue
                results.append(r)
                print(f"{spec} threads={t} {a.dtype} {variant}: median {r['median_s'] * 1e3:.2f} ms params {r['params']} "
                      f"peak RSS {r['rss_peak_MiB']:.0f} MiB", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
