"""Sharded programs from Python: one device's residuals and memory on the program's mesh or one
given, whole arrays on request, and a bad mesh refused in one line."""
import pytest

import rematkit

# x split over fsdp on its batch dim, a weight split over fsdp on its first dim (MaxText's way).
SHARDED = """{ lambda ; x:f32[64,32] w:f32[32,32]. let
    xc:f32[64,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] x
    wc:f32[32,32] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('fsdp': 8), spec=PartitionSpec('fsdp', None)) unconstrained_dims=frozenset()] w
    h:f32[64,32] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] xc wc
    a:f32[64,32] = tanh h
    l:f32[] = reduce_sum[axes=(0, 1)] a
  in (l,) }"""


def test_residuals_are_one_devices_on_the_programs_mesh():
    p = rematkit.Program.parse(SHARDED, 'sharded')
    per_device = p.residuals()
    whole = p.residuals(whole_arrays=True)
    # The tanh output and its derivative's factor: [64,32] whole, [8,32] per device of 8.
    assert [r.shape for r in whole if r.source.startswith('output of')][-2:] == [(64, 32), (64, 32)]
    assert [r.shape for r in per_device if r.source.startswith('output of')][-2:] == [(8, 32), (8, 32)]
    assert sum(r.nbytes for r in per_device) * 8 == sum(r.nbytes for r in whole)
    assert p.residuals(mesh={'fsdp': 8})[-1].shape == (8, 32)


def test_memory_is_one_devices():
    p = rematkit.Program.parse(SHARDED, 'sharded')
    assert 0 < p.memory().predicted_peak < p.memory(whole_arrays=True).predicted_peak


def test_a_mesh_the_program_does_not_name_is_refused():
    p = rematkit.Program.parse(SHARDED, 'sharded')
    with pytest.raises(rematkit.ProgramError, match="mesh: mesh axis 'data' is not one the program names"):
        p.residuals(mesh='data=2')


# Data parallel over 4 devices: each device runs its 2 rows, the loss summed over the devices.
DATA_PARALLEL = """{ lambda ; x:f32[8,4] w:f32[4,4]. let
    l:f32[] = shard_map[auto=frozenset() check_rep=False in_names=({0: ('data',)}, {}) jaxpr={ lambda ; xb:f32[2,4] wf:f32[4,4]. let
        h:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] xb wf
        a:f32[2,4] = tanh h
        s:f32[] = reduce_sum[axes=(0, 1)] a
        t:f32[] = psum[axes=('data',) axis_index_groups=None] s
      in (t,) } mesh=Mesh('data': 4) out_names=({},) rewrite=False] x w
  in (l,) }"""

WHOLE = """{ lambda ; x:f32[8,4] w:f32[4,4]. let
    h:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] x w
    a:f32[8,4] = tanh h
    l:f32[] = reduce_sum[axes=(0, 1)] a
  in (l,) }"""


def test_grad_of_a_shard_map_step_is_the_whole_programs():
    np = pytest.importorskip('numpy')
    rng = np.random.default_rng(0)
    inputs = {'x': rng.uniform(-1, 1, (8, 4)).astype(np.float32), 'w': rng.uniform(-1, 1, (4, 4)).astype(np.float32)}
    sharded = rematkit.Program.parse(DATA_PARALLEL, 'dp').grad(inputs, policy='nothing_saveable')
    whole = rematkit.Program.parse(WHOLE, 'whole').grad(inputs)
    assert abs(sharded.value - whole.value) < 1e-5
    for name in ('x', 'w'):
        assert np.max(np.abs(sharded.grads[name] - whole.grads[name])) < 1e-5
