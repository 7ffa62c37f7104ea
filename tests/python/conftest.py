# The package under test is the CMake-built one (PYTHONPATH=build/python, set by ctest); the CLI it
# is checked against is REMATKIT_CLI (ctest sets both), else build/bin/rematkit.
import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def source_dir():
    return SOURCE


@pytest.fixture
def cli():
    path = os.environ.get('REMATKIT_CLI', str(SOURCE / 'build' / 'bin' / 'rematkit'))

    def run(*args, check=True):
        done = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError('rematkit %s exited %d: %s' % (' '.join(map(str, args)), done.returncode, done.stderr))
        return done

    run.json = lambda *args: json.loads(run(*args).stdout.strip().splitlines()[-1])
    return run


@pytest.fixture
def two_layer():
    import rematkit
    return rematkit.Program.load(SOURCE / 'examples' / 'two_layer.jaxpr')
