# The memory plan and the budget solver as objects, against the CLI's answers and their own laws.
import importlib.util
import json
import sys
import types

import numpy as np
import pytest

import rematkit


def test_memory_is_the_cli_s_plan_with_the_timeline_as_arrays(two_layer, cli):
    report = two_layer.memory(policy='nothing_saveable')
    expected = json.loads(cli('memory', two_layer_path(), '--json', '--policy', 'nothing_saveable').stdout)[0]
    assert report.predicted_peak == expected['predicted_peak']['device']
    assert report.peak_step == expected['peak_step'] and report.peak_pass == expected['peak_pass']
    assert len(report.timeline) == len(expected['steps']) == len(report.steps)
    # The peak step is the first with the most device bytes alive, and those are the live peak.
    assert report.timeline.max() == report.live_peak == report.timeline[report.peak_step]
    assert int(np.argmax(report.timeline)) == report.peak_step
    # The bytes per kind add up to the timeline at every step, and at the peak to bytes_by_kind.
    by_kind = sum(report.timeline_by_kind.values())
    assert (by_kind == report.timeline).all()
    assert sum(report.bytes_by_kind.values()) == report.timeline[report.peak_step]
    assert sum(b.bytes for b in report.peak_buffers) == report.timeline[report.peak_step]
    assert report.peak_buffers == sorted(report.peak_buffers, key=lambda b: -b.bytes)


def test_recomputing_everything_lowers_the_peak_s_residuals(two_layer):
    saved = two_layer.memory(policy='everything_saveable').bytes_by_kind['saved_residual']
    assert two_layer.memory(policy='nothing_saveable').bytes_by_kind['saved_residual'] <= saved


def two_layer_path():
    import pathlib
    return pathlib.Path(__file__).resolve().parents[2] / 'examples' / 'two_layer.jaxpr'


class Prim:
    def __init__(self, name):
        self.name = name


class Aval:
    """What jax.checkpoint gives a policy for each operand: its dtype (with .name) and shape."""

    def __init__(self, text):  # "f32[5,4]"
        dtype, shape = text.rstrip(']').split('[')
        names = {'f32': 'float32', 'bf16': 'bfloat16', 'f64': 'float64', 'i32': 'int32'}
        self.dtype = type('D', (), {'name': names.get(dtype, dtype)})()
        self.shape = tuple(int(d) for d in shape.split(',') if d)


def answers_of(policy, signature):
    prim, *operands = signature.split(' ')
    params = {}
    if operands and operands[-1].startswith('name='):
        params['name'] = operands.pop()[len('name='):]
    return policy(Prim(prim), *[Aval(o) for o in operands], **params)


def test_solve_fits_the_budget_and_its_jax_policy_answers_as_the_exported_file(source_dir):
    program = rematkit.Program.load(source_dir / 'tests' / 'data' / 'real' / '04_flax_mlp_train_step_value_and_grad.jaxpr')
    everything = program.memory(policy='everything_saveable').predicted_peak
    solution = program.solve(budget=0.5, for_jax=True)
    assert solution.smallest_peak <= solution.peak_bytes <= solution.budget_bytes <= everything
    assert 'peak:' in str(solution) and solution.decisions
    assert {d.decision for d in solution.decisions} <= {'saveable', 'recompute'}
    exported = {}
    exec(solution.jax_policy_text, exported)  # the --export-jax file
    policy = solution.jax_policy()
    for d in solution.decisions:
        assert answers_of(policy, d.signature) == answers_of(exported['policy'], d.signature) == (d.decision == 'saveable')
    assert answers_of(policy, 'exp f32[9]') is True  # not seen: saveable, as the file says
    # The decisions file (what `rematkit solve --decisions` writes, what solved('FILE') reads) says
    # the same of every equation, site by site.
    written = json.loads(solution.decisions_json)
    assert written['peak_bytes'] == solution.peak_bytes
    by_site = {d.site: d for d in solution.decisions}
    assert len(written['decisions']) == len(by_site)
    for entry in written['decisions']:
        d = by_site[entry['site']]
        assert entry['decision'] == d.decision
        assert answers_of(policy, d.signature) == (entry['decision'] == 'saveable')


def test_bytes_and_min_budgets(two_layer):
    smallest = two_layer.solve(budget='min')
    assert smallest.peak_bytes == smallest.smallest_peak
    assert two_layer.solve(budget=smallest.peak_bytes).peak_bytes <= smallest.peak_bytes
    with pytest.raises(rematkit.ProgramError, match='smallest'):
        two_layer.solve(budget=smallest.smallest_peak - 64)


def named_chain(unary):
    # op(b), named a; op of that, named b; op of that, named c; summed. `unary` is 'mul' (x * x) or 'sin'.
    op = (lambda v: 'mul %s %s' % (v, v)) if unary == 'mul' else (lambda v: 'sin ' + v)
    return ('{ lambda ; x:f32[1024]. let\n'
            '    a:f32[] = checkpoint[\n'
            '      differentiated=False\n'
            '      jaxpr={ lambda ; b:f32[1024]. let\n'
            '          c:f32[1024] = %s\n'
            '          d:f32[1024] = name[name=a] c\n'
            '          e:f32[1024] = %s\n'
            '          f:f32[1024] = name[name=b] e\n'
            '          g:f32[1024] = %s\n'
            '          h:f32[1024] = name[name=c] g\n'
            '          i:f32[] = reduce_sum[axes=(0,)] h\n'
            '        in (i,) }\n'
            '      policy=nothing_saveable\n'
            '      prevent_cse=True\n'
            '    ] x\n'
            '  in (a,) }\n') % (op('b'), op('d'), op('f'))


def test_jax_names_policy_where_names_say_the_answer(monkeypatch):
    # At a fraction's 1 nothing is recomputed: the backward pass reads d and f (each mul's operand,
    # which the names a and b output) and not h, so save_only_these_names('a', 'b') says it, as
    # the CLI's --export-jax writes (cli_test's SolveExportsJaxNamesPolicy...).
    calls = []
    policies = types.SimpleNamespace(save_only_these_names=lambda *names: calls.append(names) or 'names-policy')
    monkeypatch.setitem(sys.modules, 'jax', types.SimpleNamespace(checkpoint_policies=policies))
    named = rematkit.Program.parse(named_chain('mul'))
    solution = named.solve(budget=1, backend='reference', for_jax=True)
    assert (solution.names_saved, solution.names_offloaded, solution.names_why_not) == (['a', 'b'], [], '')
    assert solution.jax_names_policy() == 'names-policy'
    assert calls == [('a', 'b')]
    # sin's JVP keeps cos of each value, which no name outputs: names cannot say that answer.
    unnamed = rematkit.Program.parse(named_chain('sin'))
    why = unnamed.solve(budget=1, backend='reference', for_jax=True)
    assert why.names_why_not.startswith('the answer keeps 3 unnamed values')
    with pytest.raises(ValueError, match='names do not say this answer: the answer keeps 3 unnamed values'):
        why.jax_names_policy()
    assert calls == [('a', 'b')]
