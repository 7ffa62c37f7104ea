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
