# Residuals as objects: worked out by hand from JAX's rules for the built-in example, and the same
# lines as the CLI's for every real program in tests/data/real.
import pytest

import rematkit


def test_the_two_layer_example_keeps_what_jax_keeps(two_layer):
    rs = two_layer.residuals()
    # Worked out by hand (jax/_src/ad_checkpoint.py, partial_eval.py): the checkpoint's inputs W1, x
    # are saved by its caller; inside it dots_with_no_batch_dims_saveable saves the dot (y), and sin's
    # cos is recomputed from it; the top level keeps W2 and sin's output a for the outer dot, and
    # cos(b) for the outer sin.
    assert [str(r) for r in rs] == [
        'f32[5,4] from the argument W1',
        'f32[6,5] from the argument W2',
        'f32[4] from the argument x',
        'f32[5] output of dot_general from %s:6' % rs[3].file,
        'f32[5] output of sin from %s:7' % rs[4].file,
        'f32[6] output of cos from %s:10' % rs[5].file,
    ]
    assert [r.nbytes for r in rs] == [80, 120, 16, 20, 20, 24]
    assert rs[0].line is None and rs[0].file is None
    assert (rs[3].line, rs[3].col, rs[3].dtype, rs[3].shape) == (6, 20, 'f32', (5,))
    assert all(r.memory_space == 'device' for r in rs)
    assert 'dots_with_no_batch_dims_saveable answered Saveable for dot_general' in rs[3].why
    assert rs[1].why.startswith('top level')


def test_a_policy_and_wrt_change_what_is_kept(two_layer):
    # nothing_saveable around the whole program keeps its inputs alone; only W2 differentiated.
    assert [str(r) for r in two_layer.residuals(policy='nothing_saveable')] == [
        'f32[5,4] from the argument W1', 'f32[6,5] from the argument W2', 'f32[4] from the argument x']
    kept = [str(r) for r in two_layer.residuals(wrt=['W2'])]
    assert 'f32[6,5] from the argument W2' not in kept  # W2's own gradient does not read W2
    retargeted = two_layer.residuals(retarget_policy='nothing_saveable')
    assert not any('dot_general from' in str(r) and r.line == 6 for r in retargeted)


def real_programs(source):
    return sorted((source / 'tests' / 'data' / 'real').rglob('*.jaxpr'))


def test_the_real_programs_give_the_cli_s_residuals(source_dir, cli):
    programs = real_programs(source_dir)
    assert len(programs) >= 20
    checked = 0
    for path in programs:
        done = cli('residuals', path, check=False)
        if done.returncode != 0:  # refused by the CLI: refused by Python too, with the same message
            with pytest.raises(rematkit.ProgramError) as caught:
                rematkit.Program.load(path).residuals()
            assert str(caught.value) in done.stderr, path
            continue
        lines = [str(r) for r in rematkit.Program.load(path).residuals()]
        assert lines == done.stdout.splitlines(), path
        checked += 1
    assert checked >= 20
