# compare and sweep rows as dicts, Ctrl-C in a sweep, and trace through a stand-in for JAX.
import os
import signal
import sys
import threading
import types

import pytest

import rematkit


def test_compare_gives_a_row_per_policy_with_the_same_gradients(two_layer):
    rows = two_layer.compare(['everything_saveable', 'nothing_saveable'], repetitions=2)
    assert [r['policy'] for r in rows] == ['everything_saveable', 'nothing_saveable']
    for r in rows:
        assert r['max_grad_diff'] == 0 and r['measured_peak'] == r['predicted_peak'] > 0 and r['median_ms'] > 0
    # Recomputing everything keeps less and costs FLOPs.
    assert rows[1]['residual_bytes'] < rows[0]['residual_bytes']
    assert rows[1]['recompute_flops'] > rows[0]['recompute_flops'] == 0


SWEEP = {
    'models': [{'name': 'tiny', 'mlp': {'input': 8, 'widths': [8, 8], 'batch': 4, 'activation': 'tanh'}}],
    'policies': ['everything_saveable', 'nothing_saveable'],
    'backends': ['reference'],
    'repetitions': 2,
}


def test_a_sweep_from_a_dict_gives_the_file_s_rows(tmp_path):
    rows = rematkit.sweep(SWEEP)
    assert [(r['model'], r['policy']) for r in rows] == [('tiny', 'everything_saveable'), ('tiny', 'nothing_saveable')]
    assert all(r['max_grad_diff'] == 0 and r['measured_peak_device'] == r['predicted_peak_device'] for r in rows)
    assert len(rows[0]['samples_ms']) == 2
    path = tmp_path / 's.yaml'
    path.write_text('models:\n  - name: tiny\n    mlp: {input: 8, widths: [8, 8], batch: 4, activation: tanh}\n'
                    'policies: [everything_saveable, nothing_saveable]\nbackends: [reference]\nrepetitions: 2\n')
    from_file = rematkit.sweep(path)
    assert [r['residual_bytes'] for r in from_file] == [r['residual_bytes'] for r in rows]


def test_to_pandas_when_pandas_is_there():
    rows = rematkit.sweep(SWEEP)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match='pandas'):
            rows.to_pandas()
        return
    assert list(rows.to_pandas()['policy']) == ['everything_saveable', 'nothing_saveable']


def test_a_bad_sweep_key_is_a_program_error_at_its_place(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('models:\n  - mlp: {input: 3, widths: [2]}\npolices: [nothing_saveable]\n')
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.sweep(path)
    assert (caught.value.file, caught.value.line, caught.value.col) == (str(path), 3, 1)


def test_ctrl_c_stops_the_sweep_and_keeps_the_finished_rows():
    # Twelve groups of a few hundred milliseconds each; SIGINT after the first has had time to end.
    slow = dict(SWEEP, threads=[1, 2, 3, 4], backends=['reference', 'reference', 'reference'], repetitions=40,
                models=[{'name': 'm', 'mlp': {'input': 64, 'widths': [64] * 6, 'batch': 64, 'activation': 'tanh'}}])
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            rematkit.sweep(slow)
    finally:
        timer.cancel()
    rows = caught.value.rows
    assert len(rows) < 24
    assert all(r['median_ms'] > 0 and not r['failure'] for r in rows)


def test_trace_reads_what_make_jaxpr_prints(monkeypatch, source_dir):
    text = (source_dir / 'tests' / 'data' / 'real' / '13_jaxpr_doc_scan.jaxpr').read_text()

    class Printed:  # what jax.make_jaxpr(f)(*args) returns: its str() is the program
        def __str__(self):
            return text

    calls = []
    fake = types.ModuleType('jax')
    fake.make_jaxpr = lambda f: (lambda *args, **kwargs: calls.append((f, args, kwargs)) or Printed())
    monkeypatch.setitem(sys.modules, 'jax', fake)

    def f(x):
        return x

    program = rematkit.trace(f, 1.0, axis=0)
    assert calls == [(f, (1.0,), {'axis': 0})]
    expected = rematkit.Program.parse(text, name='<trace of f>').residuals()
    assert [str(r) for r in program.residuals()] == [str(r) for r in expected] and expected


def test_trace_without_jax_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, 'jax', None)  # import jax raises ImportError
    with pytest.raises(ImportError, match='make_jaxpr'):
        rematkit.trace(lambda x: x, 1.0)
