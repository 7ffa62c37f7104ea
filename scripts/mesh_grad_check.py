#!/usr/bin/python3
"""grad of a sweep's parallel model, a rank per device, against the same step on the simulated mesh
and against the whole model on one device (docs/parallelism.md).

    scripts/mesh_grad_check.py build/bin/rematkit examples/parallel_gpt.yaml --model gpt_tensor4 \
        --whole gpt_one_device --ranks 4 --policy nothing_saveable

Prints one line: whether the ranks' JSON line is the simulated mesh's, the largest difference of a
gradient from the whole model's, the two losses, and each rank's measured peak beside the predicted
one. The inputs are random values for the programs' binders (the same values for both: a param the
step takes in parts, such as the fused q, k, v kernel, is the same values reshaped). Exit status 1
when the ranks and the simulated mesh differ or a peak is not the predicted one.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile


def binders(program_text):
    """[(name, dtype, shape)] of the program's arguments, from its `{ lambda ; ...` line."""
    line = next(l for l in program_text.splitlines() if l.startswith("{ lambda"))
    head = line.split(";", 1)[1].split(". let")[0]
    out = []
    for name, dtype, dims in re.findall(r"(\w+):(\w+)\[([\d,]*)\]", head):
        out.append((name, dtype, [int(d) for d in dims.split(",") if d]))
    return out


def nested(flat, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0]
    return [nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def flatten(value):
    if isinstance(value, list):
        return [x for v in value for x in flatten(v)]
    return [value]


def size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(" ".join(command) + " failed:\n" + done.stderr)
    return done.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rematkit")
    p.add_argument("sweep")
    p.add_argument("--model", required=True, help="the parallel model")
    p.add_argument("--whole", required=True, help="the same model on one device")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--policy", default="nothing_saveable")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    folder = tempfile.mkdtemp(prefix="mesh-grad-")
    files = {}
    for key, model in (("step", a.model), ("whole", a.whole)):
        text = run([a.rematkit, "program", a.sweep, "--model", model, "--policy", a.policy])
        files[key] = os.path.join(folder, key + ".jaxpr")
        with open(files[key], "w") as f:
            f.write(text)
        files[key + "_binders"] = binders(text)

    rng = random.Random(a.seed)
    inputs = {"whole": {}, "step": {}}
    for (name, dtype, shape), (step_name, _, step_shape) in zip(files["whole_binders"], files["step_binders"]):
        n = size(shape)
        if dtype.startswith("i"):
            flat = [rng.randrange(8) for _ in range(n)]
        elif "scale" in name:
            flat = [1 + rng.uniform(-0.1, 0.1) for _ in range(n)]
        else:
            flat = [rng.gauss(0, 0.05) for _ in range(n)]
        inputs["whole"][name] = nested(flat, shape)
        inputs["step"][step_name] = nested(flat, step_shape)
    for key in ("whole", "step"):
        files[key + "_inputs"] = os.path.join(folder, key + ".json")
        with open(files[key + "_inputs"], "w") as f:
            json.dump(inputs[key], f)

    whole = json.loads(run([a.rematkit, "grad", files["whole"], "--inputs", files["whole_inputs"]]).splitlines()[-1])
    simulated = run([a.rematkit, "grad", files["step"], "--inputs", files["step_inputs"]]).splitlines()[-1]
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(a.ranks)]
    said = run(mpirun + [a.rematkit, "grad", files["step"], "--inputs", files["step_inputs"], "--plan"])
    ranks = said.splitlines()[-1]

    got = json.loads(ranks)
    worst = 0.0
    for name, value in whole["grads"].items():
        for x, y in zip(flatten(got["grads"][name]), flatten(value)):
            worst = max(worst, abs(x - y))
    predicted = re.search(r"memory device: predicted peak (\d+)", said).group(1)
    measured = re.search(r"measured on each of its \d+ ranks ([\d, ]+)", said).group(1).split(", ")
    same = ranks == simulated
    peaks_hold = all(m == predicted for m in measured)
    print(f"{a.model} ({a.policy}) on {a.ranks} ranks: the simulated mesh's JSON line {'bit for bit' if same else 'DIFFERS'}; "
          f"largest gradient difference from {a.whole} {worst:.3g}; loss {got['value']} against {whole['value']}; "
          f"predicted peak {predicted} B, measured on the ranks {', '.join(measured)}")
    return 0 if same and peaks_hold else 1


if __name__ == "__main__":
    sys.exit(main())
