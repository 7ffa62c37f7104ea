#!/usr/bin/python3
"""Peer benchmark: PyTorch (Debian python3-torch 1.13, CPU) GPT training step.

The model of rematkit's sweep `gpt:` entry (rematkit::build_gpt, framework/src/flax/gpt.cpp: Flax's
GPT-2), with V = vocab, S = sequence, D = model, H = heads (Dh = D/H), M = mlp, L = layers:
  ids, targets: i32[B,S] (no gradient), drawn uniformly from [0, V) with a fixed seed, the targets
  the ids shifted by one (rematkit's are a fixed pseudo-random sequence shifted by one)
  x = drop(wte[ids] + wpe)                 wte: [V,D] (nn.Embedding, a gather); wpe: [S,D], S learned
                                           positions, the whole table added to every row of the batch
  per block (pre-LayerNorm; every LayerNorm over D with epsilon 1e-6, a scale and a bias):
    qkv = c_attn(ln_1(x))                  Linear(D, 3D) with bias; split into q, k, v -> [B,H,S,Dh]
    p = softmax(where(causal, (q / sqrt(Dh)) k^T, finfo(dtype).min), -1)   causal: key <= query
    x = x + drop(c_proj(merge(drop(p) v)))                                 c_proj: Linear(D, D), bias
    x = x + drop(mlp_c_proj(gelu_tanh(c_fc(ln_2(x)))))   c_fc: Linear(D, M), mlp_c_proj: Linear(M, D),
                                           both with bias; GELU's tanh approximation (Flax's nn.gelu)
  h = ln_f(x);  logits = h wte^T (the output projection tied to the embedding, no bias): [B,S,V]
loss = mean over the B*S tokens of cross_entropy(logits, targets) (optax's
softmax_cross_entropy_with_integer_labels, logsumexp(logits) - logits[target]), the per-token
losses in the compute dtype and their mean in f32. Dropout (--dropout, default 0.1, the default
sweep's; 0 leaves every dropout out) at all four places rematkit puts it: the embeddings, the
attention weights and both residual branches. Params: 2 + 12 per block + 2 tensors, as rematkit's,
V*D + S*D + L*(4*D^2 + 2*D*M + 9*D + M) + 2*D numbers in all (the JSON's `params`; the child stops if
its modules hold a different count), drawn as rematkit draws them (normal(0.02) embeddings and
kernels, zero biases, LayerNorm ones and zeros) but from torch's generator (timing only). f32 or
bf16 (--dtype): the params and every activation in that dtype, as rematkit's `dtype:` does.

One step = forward + loss + backward for all params (p.grad = None before each step, untimed). No
optimizer update (rematkit's step adds SGD). Not the same work as rematkit's in: dropout's masks
(torch's Bernoulli from its CPU generator, rematkit's threefry random_bits: other masks, other
cost), torch's LayerNorm (two-pass statistics, rematkit's E[x^2] - E[x]^2), the causal mask built
once per process (rematkit computes it from iota in every block, inside the checkpoints), and
torch's fused cross-entropy (rematkit's is a one-hot product and its own logsumexp).
flops_forward counts the matrix products only (2 per multiply-add: c_attn, q k^T, p v, c_proj,
c_fc, mlp_c_proj and the tied head), as rematkit counts a dot_general; the gather, norms,
softmax, gelu, dropout and loss are left out (rematkit's forward_flops counts them too).

Variants: none | ckpt_block (torch.utils.checkpoint per block, use_reentrant=False; rematkit's
          `remat: per_layer`) | ckpt_whole (one checkpoint around all blocks; `remat: whole`).
          torch's checkpoint restores the RNG state, so recomputed dropout draws the same masks.
Each configuration runs in its own process; threads as in torch_mlp.py, and before each the peers'
quiet-machine guard (common.py's wait_quiet; PEERS_QUIET_CORES, PEERS_MAX_WAIT_S, PEERS_RETRIES)
waits for the other processes to leave the cores idle, reruns a configuration they disturbed and
records their load (foreign_load_cores). The results carry openblas_get_corename (OpenBLAS 0.3.21
falls back to Prescott kernels on CPUs it does not know: set PEER_OPENBLAS_CORETYPE, see common.py).

common.py (the peers' helpers) is read from this folder or from ../shared/peers beside the
checkout, or from $PEERS_DIR.

Usage: /usr/bin/python3 bench/peers/torch_gpt.py [--configs L,B,S,D,H,V[,M];...] [--threads 1,2]
       [--variants none,ckpt_block,ckpt_whole] [--dtype f32[,bf16]] [--dropout 0.1] [--reps N]
       [--rounds 1] [--out results.json]
       (L, B, S, D, H as torch_transformer.py's; V: vocab; M: the MLP's width, 4*D when left out,
       as the sweep's `mlp:` default)
Default config: sweep/default_sweep.yaml's gpt-small (layers 2, batch 2, sequence 32, model 64,
heads 4, vocab 128, mlp 4*64 = 256, dropout 0.1, f32).
"""
import argparse
import json
import os
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.append(os.environ.get("PEERS_DIR", os.path.join(_here, "..", "..", "..", "shared", "peers")))
import common  # noqa: E402

DEFAULT_CONFIGS = "2,2,32,64,4,128"


def parse_config(spec):
    fields = [int(v) for v in spec.split(",")]
    if len(fields) not in (6, 7):
        raise SystemExit(f"torch_gpt.py: a config is L,B,S,D,H,V[,M], not '{spec}'")
    L, B, S, D, H, V = fields[:6]
    M = fields[6] if len(fields) == 7 else 4 * D
    if D % H != 0:
        raise SystemExit(f"torch_gpt.py: heads ({H}) must divide model ({D}) in '{spec}'")
    return dict(L=L, B=B, S=S, D=D, H=H, V=V, M=M)


def param_count(cfg):
    """rematkit's build_gpt params: wte, wpe, per block ln_1 (2D), c_attn (3D^2 + 3D), c_proj
    (D^2 + D), ln_2 (2D), c_fc (DM + M), mlp c_proj (MD + D), then ln_f (2D)."""
    L, S, D, V, M = (cfg[k] for k in ("L", "S", "D", "V", "M"))
    return V * D + S * D + L * (4 * D * D + 2 * D * M + 9 * D + M) + 2 * D


def gpt_flops(cfg):
    """Forward FLOPs of the matrix products (2 per multiply-add), as rematkit counts a dot_general."""
    L, B, S, D, V, M = (cfg[k] for k in ("L", "B", "S", "D", "V", "M"))
    N = B * S
    per_block = 2 * N * D * 3 * D + 2 * 2 * B * S * S * D + 2 * N * D * D + 2 * 2 * N * D * M
    return L * per_block + 2 * N * D * V


def child(cfg):
    rss_start = common.rss_now_bytes()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    torch.set_num_threads(cfg["threads"])
    torch.manual_seed(0)
    L, B, S, D, H, V, M = (cfg[k] for k in ("L", "B", "S", "D", "H", "V", "M"))
    Dh, rate = D // H, cfg["dropout"]
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[cfg["dtype"]]

    def drop(t):
        return F.dropout(t, rate, training=True) if rate > 0 else t

    def linear(fan_in, fan_out):
        m = nn.Linear(fan_in, fan_out)
        nn.init.normal_(m.weight, std=0.02)
        nn.init.zeros_(m.bias)
        return m

    causal = torch.ones(S, S, dtype=torch.bool).tril()  # query i sees keys j <= i
    masked = torch.tensor(torch.finfo(dtype).min, dtype=dtype)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(D, eps=1e-6)
            self.c_attn = linear(D, 3 * D)
            self.c_proj = linear(D, D)
            self.ln_2 = nn.LayerNorm(D, eps=1e-6)
            self.c_fc = linear(D, M)
            self.mlp_c_proj = linear(M, D)

        def forward(self, x):
            q, k, v = (t.reshape(B, S, H, Dh).transpose(1, 2) for t in self.c_attn(self.ln_1(x)).split(D, dim=2))
            scores = (q / Dh ** 0.5) @ k.transpose(-1, -2)
            p = drop(torch.softmax(torch.where(causal, scores, masked), dim=-1))
            x = x + drop(self.c_proj((p @ v).transpose(1, 2).reshape(B, S, D)))
            return x + drop(self.mlp_c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))

    wte = nn.Embedding(V, D)
    nn.init.normal_(wte.weight, std=0.02)
    wpe = nn.Parameter((torch.randn(S, D) * 0.02).to(dtype))
    blocks = [Block() for _ in range(L)]
    ln_f = nn.LayerNorm(D, eps=1e-6)
    modules = [wte] + blocks + [ln_f]
    for m in modules:
        m.to(dtype)
    params = [wte.weight, wpe] + [p for m in blocks + [ln_f] for p in m.parameters()]
    n_params = sum(p.numel() for p in params)
    if n_params != param_count(cfg) or len(params) != 2 + 12 * L + 2:
        raise SystemExit(f"torch_gpt.py: {n_params} params in {len(params)} tensors, rematkit's gpt has "
                         f"{param_count(cfg)} in {2 + 12 * L + 2}")
    tokens = torch.randint(0, V, (B, S + 1), generator=torch.Generator().manual_seed(0))
    ids, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].reshape(-1).contiguous()

    def body(h):
        for blk in blocks:
            h = checkpoint(blk, h, use_reentrant=False) if cfg["variant"] == "ckpt_block" else blk(h)
        return h

    def fwd():
        x = drop(wte(ids) + wpe)
        x = checkpoint(body, x, use_reentrant=False) if cfg["variant"] == "ckpt_whole" else body(x)
        logits = F.linear(ln_f(x), wte.weight)  # tied: h wte^T
        return F.cross_entropy(logits.reshape(B * S, V), targets, reduction="none").float().mean()

    def prepare():
        for p in params:
            p.grad = None

    losses = []

    def step():
        loss = fwd()
        loss.backward()
        if not losses:
            losses.append(loss.item())

    rss_setup = common.rss_now_bytes()
    prepare()
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    tm = common.time_steps(step, prepare, fixed_reps=cfg.get("reps"), prior_step_s=first)
    fwd_flops = gpt_flops(cfg)
    out = dict(cfg)
    out.update(tm)
    out.update({
        "impl": "torch",
        "torch_version": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "params": n_params,
        "param_tensors": len(params),
        "loss_first_step": losses[0],
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
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="L,B,S,D,H,V[,M];... (M: 4*D when left out)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--variants", default="none,ckpt_block,ckpt_whole")
    ap.add_argument("--dtype", default="f32", help="f32, bf16 or both (f32,bf16)")
    ap.add_argument("--dropout", type=float, default=0.1, help="every dropout's rate; 0 leaves them out")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.child:
        child(json.loads(a.child))
        return
    dtypes = a.dtype.split(",")
    if any(d not in ("f32", "bf16") for d in dtypes):
        raise SystemExit(f"torch_gpt.py: --dtype takes f32 and/or bf16, not '{a.dtype}'")
    if not 0 <= a.dropout < 1:
        raise SystemExit(f"torch_gpt.py: --dropout must be in [0, 1), not {a.dropout}")
    variants = a.variants.split(",")
    if any(v not in ("none", "ckpt_block", "ckpt_whole") for v in variants):
        raise SystemExit(f"torch_gpt.py: --variants takes none, ckpt_block and ckpt_whole, not '{a.variants}'")
    models = [(spec, parse_config(spec)) for spec in a.configs.split(";")]
    script = os.path.abspath(__file__)
    results = []
    for _ in range(a.rounds):
        for spec, model in models:
            for t in (int(v) for v in a.threads.split(",")):
                for dtype in dtypes:
                    for variant in variants:
                        cfg = dict(model, threads=t, variant=variant, dtype=dtype, dropout=a.dropout, reps=a.reps)
                        # The peers' guard: waits for a quiet machine, reruns a disturbed child.
                        r = common._run_one(script, cfg, 1800)
                        if r is None:
                            continue
                        results.append(r)
                        core = next((v for k, v in r["openblas"].items() if k.endswith("corename")), "?")
                        print(f"{spec} threads={t} {dtype} {variant}: median {r['median_s'] * 1e3:.2f} ms "
                              f"(min {r['min_s'] * 1e3:.2f}) params {r['params']} openblas core {core} "
                              f"foreign load {r['foreign_load_cores']:.2f} cores", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
