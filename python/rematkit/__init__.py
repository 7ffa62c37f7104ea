"""rematkit: what a gradient-checkpointing policy keeps, what it costs, and which fits a memory budget,
for programs in jaxpr syntax (what jax.make_jaxpr prints), from C++.

    import rematkit
    program = rematkit.Program.parse(text)              # or Program.load(path), rematkit.trace(f, x)
    for r in program.residuals(policy='dots_saveable'):  # jax.ad_checkpoint.print_saved_residuals
        print(r)
    program.memory(policy='nothing_saveable')            # the peak, what is alive there, the timeline
    solution = program.solve(budget='64MiB', for_jax=True)
    policy = solution.jax_policy()                       # jax.checkpoint(f, policy=policy)
    program.grad({'x': x, 'w': w})                       # NumPy in, NumPy out
    rematkit.sweep('examples/budget_sweep.yaml')         # rows as dicts (.to_pandas())

docs/python.md walks through it."""
from ._errors import Error, MemoryLimitError, ProgramError
from ._answers import Buffer, Decision, MemoryReport, Residual, Solution, jax_signature
from ._program import Gradients, Program
from ._rows import Rows
from ._sweep import sweep
from ._trace import trace
from . import _rematkit


def backends():
    """The backends installed, as --backend names them."""
    return list(_rematkit.backends())


def policies():
    """The policies known by name (JAX's, and those of loaded plugins)."""
    return list(_rematkit.policies())


__all__ = ['Buffer', 'Decision', 'Error', 'Gradients', 'MemoryLimitError', 'MemoryReport', 'Program', 'ProgramError',
           'Residual', 'Rows', 'Solution', 'backends', 'jax_signature', 'policies', 'sweep', 'trace']
