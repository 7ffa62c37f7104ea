"""A program in jaxpr syntax, and what rematkit answers about it."""
import os

from . import _rematkit
from ._answers import MemoryReport, Residual, Solution
from ._arrays import from_float64, to_float64
from ._rows import Rows


def _edits(wrt, retarget_policy, mesh=None, whole_arrays=False):
    if isinstance(wrt, (str, int)):
        wrt = [wrt]
    if isinstance(mesh, dict):  # {'data': 2, 'fsdp': 4}
        mesh = ','.join('%s=%d' % (name, size) for name, size in mesh.items())
    return _rematkit.ProgramEdits([str(w) for w in (wrt or [])], retarget_policy or '', mesh or '', bool(whole_arrays))


def _run_on(backend, threads, max_memory=None, backend_options=None):
    if isinstance(backend, str):
        backend = backend.split(',')
    # {'onednn.weights_layout': 'as_it_lies'}, or ['onednn.weights_layout=as_it_lies'] as the CLI's
    # --backend-option takes them.
    if isinstance(backend_options, dict):
        backend_options = ['%s=%s' % (name, value) for name, value in backend_options.items()]
    elif isinstance(backend_options, str):
        backend_options = [backend_options]
    return _rematkit.RunOn(list(backend or []), int(threads), max_memory, [str(o) for o in (backend_options or [])])


def _budget_text(budget):
    """64MiB, 1.5e9 (bytes), 0.3 (a fraction), 'min'; bytes as an int."""
    if isinstance(budget, bool):
        raise TypeError('budget: give bytes (64 * 2**20, "64MiB"), a fraction (0.3) or "min"')
    if isinstance(budget, int):
        return str(budget)
    if isinstance(budget, float):
        return repr(budget)
    return str(budget)


class Gradients:
    """What `grad` computed: `value` (the output, or a list of them) and `grads` (the gradient of
    the sum of the outputs by argument name, for the differentiated arguments), as `rematkit grad`'s
    JSON has them."""

    def __init__(self, value, grads):
        self.value = value
        self.grads = grads

    def __repr__(self):
        return '<Gradients of %s>' % ', '.join(self.grads)


class Program:
    """A program in jaxpr syntax (what jax.make_jaxpr prints), read once.

    Program.parse(text) or Program.load(path); then residuals(), memory(), solve(), grad() and
    compare(), each under a policy (None: the checkpoints the program has; a name such as
    'dots_saveable' or a spec such as "save_only_these_names('a')" checkpoints the whole program)."""

    def __init__(self, handle):
        self._p = handle

    @classmethod
    def parse(cls, text, name='<stdin>'):
        """The program in `text`; errors name `name` as the file."""
        return cls(_rematkit.parse(str(text), name))

    @classmethod
    def load(cls, path):
        return cls(_rematkit.load(os.fspath(path)))

    @property
    def text(self):
        """The program printed back in jaxpr syntax."""
        return self._p.text()

    @property
    def arguments(self):
        """The arguments in binder order: dicts of name, dtype, shape, memory_space and text."""
        return self._p.arguments

    @property
    def constants(self):
        return self._p.constants

    def __repr__(self):
        return '<Program (%s) -> %d equations>' % (', '.join(a['name'] + ':' + a['text'] for a in self.arguments),
                                                  self._p.equations)

    def residuals(self, policy=None, wrt=None, retarget_policy=None, mesh=None, whole_arrays=False):
        """What the backward pass keeps, in print_saved_residuals' order: a list of Residual. On a
        mesh (`mesh` as 'data=2,fsdp=4' or {'data': 2, 'fsdp': 4}, else the one the program names)
        each is one device's part; whole_arrays=True counts whole arrays."""
        return [Residual(r) for r in _rematkit.residuals(self._p, policy or '',
                                                         _edits(wrt, retarget_policy, mesh, whole_arrays))]

    def memory(self, policy=None, wrt=None, retarget_policy=None, backend=None, threads=0, mesh=None,
               whole_arrays=False, backend_options=None):
        """The training step's memory plan: a MemoryReport (as `rematkit memory`), one device's on a
        mesh (as residuals). backend_options, here and in solve, grad and compare: a listed backend's
        own options, {'onednn.weights_layout': 'as_it_lies'} or ['onednn.weights_layout=as_it_lies']
        (the CLI's --backend-option; docs/backends.md has each backend's)."""
        return MemoryReport(_rematkit.memory_json(self._p, policy or '', _edits(wrt, retarget_policy, mesh, whole_arrays),
                                                  _run_on(backend, threads, None, backend_options)))

    def solve(self, budget, cost='flops', wrt=None, retarget_policy=None, backend=None, threads=0, for_jax=False,
              offload=False, structure=True, time_limit=8.0, mesh=None, whole_arrays=False, backend_options=None):
        """The cheapest save-or-recompute decisions whose planned peak fits `budget` (bytes as an int
        or '64MiB', a fraction such as 0.3, or 'min'): a Solution. for_jax=True gives equations a JAX
        policy cannot tell apart one answer, so that Solution.jax_policy() can say it. On a mesh (as
        residuals) the budget and every plan are one device's."""
        request = _rematkit.SolveRequest()
        request.budget = _budget_text(budget)
        request.cost = cost
        request.for_jax = bool(for_jax)
        request.offload = bool(offload)
        request.structure = bool(structure)
        request.time_limit_seconds = float(time_limit)
        return Solution(_rematkit.solve(self._p, request, _edits(wrt, retarget_policy, mesh, whole_arrays),
                                        _run_on(backend, threads, None, backend_options)))

    def grad(self, inputs, policy=None, backend=None, threads=0, wrt=None, retarget_policy=None, max_memory=None,
             backend_options=None):
        """The outputs and the gradient of their sum, as `rematkit grad` computes them (the same bits
        under every policy): `inputs` maps every argument (and constant) name to an array, or lists
        the arguments in binder order. Gives Gradients, arrays in the program's dtypes."""
        arguments, constants = self.arguments, self.constants
        if isinstance(inputs, dict):
            names = [b['name'] for b in constants + arguments]
            unknown = sorted(set(inputs) - set(names))
            missing = [n for n in names if n not in inputs]
            if unknown or missing:
                raise TypeError('grad: inputs ' + '; '.join(
                    (['unknown: ' + ', '.join(unknown)] if unknown else []) +
                    (['missing: ' + ', '.join(missing)] if missing else [])))
            given_c = [inputs[b['name']] for b in constants]
            given_a = [inputs[b['name']] for b in arguments]
        else:
            given_c, given_a = [], list(inputs)
        c = [to_float64(v, b['dtype']) for v, b in zip(given_c, constants)]
        a = [to_float64(v, b['dtype']) for v, b in zip(given_a, arguments)]
        outputs, gradients = _rematkit.grad(self._p, c, a, policy or '', _edits(wrt, retarget_policy),
                                            _run_on(backend, threads, max_memory, backend_options))
        values = [from_float64(o, t['dtype']) for o, t in zip(outputs, self._p.outputs)]
        grads = {b['name']: from_float64(g, b['dtype']) for b, g in zip(arguments, gradients) if g is not None}
        return Gradients(values[0] if len(values) == 1 else values, grads)

    def compare(self, policies, repetitions=3, wrt=None, retarget_policy=None, backend=None, threads=1,
                backend_options=None):
        """Each policy planned and run on the same drawn inputs (`rematkit compare`'s): Rows of
        policy, residuals, residual_bytes, predicted_peak, measured_peak, forward_flops,
        recompute_flops, backward_flops, median_ms and max_grad_diff (against the first policy)."""
        rows = _rematkit.compare(self._p, [p or '' for p in policies], int(repetitions), _edits(wrt, retarget_policy),
                                 _run_on(backend, threads, None, backend_options))
        keys = ('policy', 'residuals', 'residual_bytes', 'predicted_peak', 'measured_peak', 'forward_flops',
                'recompute_flops', 'backward_flops', 'median_ms', 'max_grad_diff')
        return Rows({k: getattr(r, k) for k in keys} for r in rows)

