# The scripts in examples/python run, and say what the walk-through in docs/python.md says.
import os
import subprocess
import sys


def run(script):
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_runs(source_dir):
    scripts = sorted((source_dir / 'examples' / 'python').glob('*.py'))
    assert scripts
    for script in scripts:
        assert run(script).strip(), script


def test_the_walkthrough_shows_each_step(source_dir):
    out = run(source_dir / 'examples' / 'python' / 'walkthrough.py')
    for heading in ('== residuals', '== memory ==', '== solve(budget=0.5) ==', '== the JAX policy', '== grad ==',
                    '== compare =='):
        assert heading in out, heading
    assert 'the same bits under dots_saveable: True' in out
    assert out.count('max grad diff 0\n') == 3
    # nn.remat's default policy saves nothing inside a layer: each layer's output is kept by its
    # caller, no product inside is.
    as_written = out.split('== residuals with dots_saveable')[0]
    assert 'output of tanh from mlp.jaxpr:7' in as_written and 'dot_general' not in as_written
