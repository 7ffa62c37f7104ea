# A listed backend's own options from Python (the CLI's --backend-option): they reach the backend
# they name, and a wrong one is refused with the backend's or the parser's own message.
import numpy as np
import pytest

import rematkit

# x^T w, the lhs read transposed: with transposed_operands='reordered' oneDNN copies it plain into
# the kernel's workspace on every CPU; with 'strides' it reads it where it lies.
PRODUCT = '''{ lambda ; x:f32[96,768] w:f32[96,200]. let
    y:f32[768,200] = dot_general[dimension_numbers=(([0], [0]), ([], []))] x w
    l:f32[] = reduce_sum[axes=(0, 1)] y
  in (l,) }'''

pytestmark = pytest.mark.skipif('onednn' not in rematkit.backends(), reason='the onednn backend is not built')


def workspace(report):
    return sum(b.bytes for b in report.buffers if b.kind == 'kernel_workspace')


def test_an_option_reaches_the_backend_it_names():
    p = rematkit.Program.parse(PRODUCT, name='product')
    on = dict(backend='onednn,reference', threads=1)
    strides = p.memory(backend_options={'onednn.transposed_operands': 'strides'}, **on)
    reordered = p.memory(backend_options=['onednn.transposed_operands=reordered'], **on)
    assert workspace(reordered) >= workspace(strides) + 96 * 768 * 4
    # The same options in grad, compare and solve; the gradients agree either way.
    rng = np.random.default_rng(96)
    inputs = {'x': rng.uniform(-1, 1, (96, 768)).astype('float32'), 'w': rng.uniform(-1, 1, (96, 200)).astype('float32')}
    a = p.grad(inputs, backend_options={'onednn.transposed_operands': 'strides'}, **on)
    b = p.grad(inputs, backend_options={'onednn.transposed_operands': 'reordered'}, **on)
    for name in ('x', 'w'):
        assert abs(a.grads[name] - b.grads[name]).max() < 1e-3
    rows = p.compare(['everything_saveable'], repetitions=1, backend_options={'onednn.transposed_operands': 'reordered'},
                     **on)
    assert rows[0]['predicted_peak'] == reordered.predicted_peak
    assert p.solve('min', backend_options={'onednn.transposed_operands': 'reordered'}, **on).peak_bytes > 0
    with pytest.raises(rematkit.Error):
        p.solve('min', backend_options={'onednn.transposed_operands': 'sideways'}, **on)


@pytest.mark.parametrize('options, message', [
    ({'onednn.transposed_operands': 'sideways'}, "transposed_operands='chosen', 'strides' or 'reordered'"),
    ({'highway.x': 1}, 'backend option highway.x is for a backend not in the list (onednn, reference)'),
    (['transposed_operands=strides'], 'BACKEND.NAME=VALUE'),
])
def test_a_wrong_option_is_refused_with_what_is_wrong(options, message):
    p = rematkit.Program.parse(PRODUCT, name='product')
    with pytest.raises(rematkit.Error) as e:
        p.memory(backend='onednn,reference', backend_options=options)
    assert message in str(e.value)
