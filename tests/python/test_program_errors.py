# Programs from text and files, and bad input as Python exceptions with their places.
import pytest

import rematkit

MLP = '''{ lambda ; w:f32[3,2] x:f32[4,3]. let
    y:f32[4,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    z:f32[4,2] = tanh y
    s:f32[] = reduce_sum[axes=(0, 1)] z
  in (s,) }'''


def test_parse_reads_the_binders_and_prints_the_program_back():
    p = rematkit.Program.parse(MLP, name='mlp.jaxpr')
    assert [(a['name'], a['dtype'], a['shape']) for a in p.arguments] == [('w', 'f32', (3, 2)), ('x', 'f32', (4, 3))]
    assert rematkit.Program.parse(p.text).text == p.text


def test_a_malformed_program_is_a_program_error_at_its_line_and_column():
    broken = MLP.replace('tanh y', 'tanh y q')  # an operand that does not exist, line 3
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.Program.parse(broken, name='mlp.jaxpr')
    e = caught.value
    assert (e.file, e.line) == ('mlp.jaxpr', 3)
    assert e.col is not None and e.col > 1
    assert str(e).startswith('mlp.jaxpr:3:%d: ' % e.col)


def test_an_unknown_primitive_names_its_place():
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.Program.parse(MLP.replace('tanh y', 'frobnicate y'), name='m.jaxpr')
    assert caught.value.line == 3 and 'frobnicate' in str(caught.value)


def test_an_unknown_policy_is_a_program_error():
    p = rematkit.Program.parse(MLP)
    with pytest.raises(rematkit.ProgramError, match='dots_savable'):
        p.residuals(policy='dots_savable')


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(rematkit.ProgramError, match='nothing.jaxpr'):
        rematkit.Program.load(tmp_path / 'nothing.jaxpr')


def test_wrong_input_shapes_are_a_program_error():
    p = rematkit.Program.parse(MLP)
    import numpy as np
    with pytest.raises(rematkit.ProgramError, match="'x'"):
        p.grad({'w': np.zeros((3, 2)), 'x': np.zeros((4, 4))})


def test_a_step_over_the_memory_limit_is_a_memory_limit_error():
    p = rematkit.Program.parse(MLP)
    import numpy as np
    with pytest.raises(rematkit.MemoryLimitError) as caught:
        p.grad({'w': np.zeros((3, 2)), 'x': np.zeros((4, 3))}, max_memory=64)
    assert caught.value.limit == 64 and caught.value.needed > 64
