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


def test_input_nested_past_the_limits_is_a_program_error_not_a_dead_kernel():
    # The inputs that overflowed the reader's stack (issue 42): a Python kernel must survive them.
    braces = '{ lambda ; a:f32[]. let b:f32[] = checkpoint[jaxpr=' + '{' * 50000
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.Program.parse(braces, name='braces.jaxpr')
    # The main jaxpr's { and the params' [ open two; the 511th { of the run opens the 513th.
    assert (caught.value.line, caught.value.col) == (1, 51 + 511)
    assert 'brackets nested more than 512 deep' in str(caught.value)
    unclosed = '{ lambda ; a:f32[]. let\n' + 'b:f32[] = checkpoint[jaxpr={ lambda ; c:f32[]. let\n' * 20000
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.Program.parse(unclosed, name='unclosed.jaxpr')
    assert (caught.value.line, caught.value.col) == (129, 28)
    assert 'programs nested more than 128 deep' in str(caught.value)
    p = rematkit.Program.parse(MLP, name='mlp.jaxpr')
    nots = 'not_(' * 20000 + 'dots_saveable' + ')' * 20000
    for kw in ('policy', 'retarget_policy'):
        with pytest.raises(rematkit.ProgramError) as caught:
            p.residuals(**{kw: nots})
        assert (caught.value.line, caught.value.col) == (1, 5 * 513)
    assert len(p.residuals(policy='dots_saveable')) > 0  # the kernel goes on


def test_a_sweep_nested_past_the_limit_is_a_program_error(tmp_path):
    path = tmp_path / 'deep.yaml'
    path.write_text('models: ' + '[' * 300 + ']' * 300 + '\n')
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.sweep(path)
    # The root map is level 1: the 256th '[' after "models: " (column 9 on) opens the 257th.
    assert (caught.value.line, caught.value.col) == (1, 8 + 256)
    assert 'YAML collections nested more than 256 deep' in str(caught.value)
    deep = 'x'
    for _ in range(300):
        deep = {'a': deep}
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.sweep({'models': [deep]})
    assert 'YAML collections nested more than 256 deep' in str(caught.value)


def test_effects_refs_and_complex_numbers_read_or_refused_in_one_line():
    # What issue 42 added to the reader, from Python: a ref read whole is its value, a ref indexed in
    # part a ProgramError at its place, a complex program's residuals its bytes (c64: 8 an element).
    refs = '''{ lambda ; a:f32[3]. let
    r:Ref{f32[3]} = new_ref[memory_space=None] a
    r[...] += a
    c:f32[3] <- r[...]
    d:f32[3] = sin c
  in (d,) }'''
    assert [r.nbytes for r in rematkit.Program.parse(refs).residuals()] == [12]  # sin's cos
    with pytest.raises(rematkit.ProgramError) as caught:
        rematkit.Program.parse(refs.replace('r[...] += a', 'r[1] += a'), name='refs.jaxpr')
    assert (caught.value.line, caught.value.col) == (3, 5) and 'part of a ref' in str(caught.value)
    spectral = '''{ lambda ; x:f32[8]. let
    y:c64[5] = fft[fft_lengths=(8,) fft_type=2] x
    z:c64[5] = mul y y
    w:f32[5] = real z
  in (w,) }'''
    assert [(r.dtype, r.nbytes) for r in rematkit.Program.parse(spectral).residuals()] == [('c64', 40)]
