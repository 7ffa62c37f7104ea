# program.grad: NumPy in, NumPy out, the same bits as `rematkit grad`'s JSON and under every policy.
import json

import numpy as np
import pytest

import rematkit

MLP = '''{ lambda ; w:f32[3,2] b:f32[2] x:f32[4,3] n:i32[]. let
    y:f32[4,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    c:f32[1,2] = reshape[dimensions=None new_sizes=(1, 2)] b
    d:f32[4,2] = add y c
    z:f32[4,2] = tanh d
    s:f32[] = reduce_sum[axes=(0, 1)] z
  in (s, z) }'''

BF16 = '''{ lambda ; w:bf16[3,2] x:bf16[4,3]. let
    y:bf16[4,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    z:bf16[4,2] = sin y
    s:bf16[] = reduce_sum[axes=(0, 1)] z
  in (s,) }'''


def inputs_file(tmp_path, values):
    path = tmp_path / 'inputs.json'
    path.write_text(json.dumps({k: np.asarray(v).tolist() for k, v in values.items()}))
    return path


def test_gradients_are_the_cli_s_bit_for_bit(tmp_path, cli):
    rng = np.random.default_rng(3)
    values = {'w': rng.standard_normal((3, 2)).astype(np.float32), 'b': rng.standard_normal(2).astype(np.float32),
              'x': rng.standard_normal((4, 3)).astype(np.float32), 'n': np.int32(7)}
    program = rematkit.Program.parse(MLP, name='mlp.jaxpr')
    (tmp_path / 'mlp.jaxpr').write_text(MLP)
    expected = cli.json('grad', tmp_path / 'mlp.jaxpr', '--inputs', inputs_file(tmp_path, values))
    got = program.grad(values)
    assert set(got.grads) == {'w', 'b', 'x'}  # n is an integer: no gradient
    for name, g in got.grads.items():
        assert g.dtype == np.float32 and g.shape == values[name].shape
        assert (g == np.asarray(expected['grads'][name], dtype=np.float32)).all(), name  # 9 digits: exact for f32
    s, z = got.value
    assert s.dtype == np.float32 and s.shape == () and z.shape == (4, 2)
    assert s == np.float32(expected['value'][0]) and (z == np.asarray(expected['value'][1], np.float32)).all()
    # Inputs in binder order, and under other policies: the same bits (on the same backends).
    for policy in ('nothing_saveable', 'dots_saveable'):
        again = program.grad([values['w'], values['b'], values['x'], values['n']], policy=policy)
        for name in got.grads:
            assert (again.grads[name].view(np.uint32) == got.grads[name].view(np.uint32)).all(), (policy, name)


def test_bf16_arrays_come_back_in_bf16(tmp_path, cli):
    rng = np.random.default_rng(5)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    program = rematkit.Program.parse(BF16, name='bf16.jaxpr')
    (tmp_path / 'bf16.jaxpr').write_text(BF16)
    expected = cli.json('grad', tmp_path / 'bf16.jaxpr', '--inputs', inputs_file(tmp_path, {'w': w, 'x': x}))
    with _maybe_warns():
        got = program.grad({'w': w, 'x': x})
    g = got.grads['w']
    want = np.asarray(expected['grads']['w'], dtype=np.float32)  # bf16 values, exact in f32
    if rematkit._arrays.ml_dtypes is not None:
        assert g.dtype == rematkit._arrays.ml_dtypes.bfloat16
        assert (g.astype(np.float32) == want).all()
    else:  # the bit patterns: the f32's top half
        assert g.dtype == np.uint16
        assert (g == (want.view(np.uint32) >> 16).astype(np.uint16)).all()
        # and bit patterns go in as the bf16 values they stand for
        bits = (w.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        values = (bits.astype(np.uint32) << 16).view(np.float32)
        assert (program.grad({'w': bits, 'x': x}).grads['w'] == program.grad({'w': values, 'x': x}).grads['w']).all()


def _maybe_warns():
    import contextlib
    import warnings
    if rematkit._arrays.ml_dtypes is not None:
        return contextlib.nullcontext()
    rematkit._arrays._warned_bf16 = False
    return pytest.warns(UserWarning, match='uint16')


def test_missing_and_unknown_inputs_are_named():
    program = rematkit.Program.parse(MLP)
    with pytest.raises(TypeError, match='unknown: q; missing: n'):
        program.grad({'w': 0, 'b': 0, 'x': 0, 'q': 1})


SPECTRAL = '''{ lambda ; x:f32[8] z:c64[8]. let
    r:c64[5] = fft[fft_lengths=(8,) fft_type=2] x
    c:c64[8] = fft[fft_lengths=(8,) fft_type=0] z
    m:c64[8] = mul c (0.5+1j)
    s:c64[5] = slice[limit_indices=(5,) start_indices=(0,) strides=None] m
    p:c64[5] = mul r s
    a:f32[5] = abs p
    l:f32[] = reduce_sum[axes=(0,)] a
  in (l, m) }'''


def test_complex_arrays_go_in_and_come_out_as_numpy_complex(tmp_path, cli):
    # The value and gradients against NumPy's FFT: d/dx by central differences in float64, and for
    # the complex z JAX's convention, df/dRe(z) - i df/dIm(z). The gradient is of the sum of the
    # outputs, a complex one's real parts (its cotangent is 1 + 0j, as jax.vjp's with ones).
    rng = np.random.default_rng(5)
    x = rng.standard_normal(8).astype(np.float32)
    z = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)
    got = rematkit.Program.parse(SPECTRAL, name='spectral.jaxpr').grad({'x': x, 'z': z})
    loss, m = got.value

    def f(x, z):
        c = np.fft.fft(z.astype(np.complex128)) * (0.5 + 1j)
        return np.sum(np.abs(np.fft.rfft(x.astype(np.float64)) * c[:5])), c

    def total(x, z):
        loss, c = f(x, z)
        return loss + np.sum(c.real)

    want_loss, want_m = f(x, z)
    assert m.dtype == np.complex64 and m.shape == (8,)
    np.testing.assert_allclose(m, want_m, rtol=1e-5, atol=1e-5)
    assert loss == pytest.approx(want_loss, rel=1e-5)
    h = 1e-6
    eye = np.eye(8)
    fd_x = [(total(x + h * eye[i], z) - total(x - h * eye[i], z)) / (2 * h) for i in range(8)]
    fd_z = [(total(x, z + h * eye[i]) - total(x, z - h * eye[i])) / (2 * h)
            - 1j * (total(x, z + 1j * h * eye[i]) - total(x, z - 1j * h * eye[i])) / (2 * h) for i in range(8)]
    assert got.grads['x'].dtype == np.float32 and got.grads['z'].dtype == np.complex64
    np.testing.assert_allclose(got.grads['x'], fd_x, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got.grads['z'], fd_z, rtol=1e-3, atol=1e-3)
    # The CLI gives a complex element as [re, im] and reads it back the same way.
    (tmp_path / 'spectral.jaxpr').write_text(SPECTRAL)
    pairs = {'x': x.tolist(), 'z': np.stack([z.real, z.imag], -1).tolist()}
    (tmp_path / 'in.json').write_text(json.dumps(pairs))
    cli_grad = cli.json('grad', tmp_path / 'spectral.jaxpr', '--inputs', tmp_path / 'in.json')
    np.testing.assert_allclose(np.array(cli_grad['grads']['z']), np.stack([got.grads['z'].real, got.grads['z'].imag], -1),
                               rtol=1e-6, atol=1e-7)
