"""What rematkit answers about a program, as objects: residuals, the memory plan, a solved budget."""
import json

import numpy as np


class Residual:
    """A value the backward pass keeps: `dtype` ('f32'), `shape`, `nbytes`, `source` ('from the
    argument W1', 'output of cos from FILE:LINE'), `file`, `line`, `col` (the equation's place; None
    for an argument or constant), `memory_space` ('device' or 'pinned_host') and `why` (the policy
    decision that kept it). str() is jax.ad_checkpoint.print_saved_residuals' line."""

    def __init__(self, row):
        self.dtype = row.dtype
        self.shape = tuple(row.shape)
        self.nbytes = row.nbytes
        self.source = row.source
        self.file = row.file or None
        self.line = row.line or None
        self.col = row.column or None
        self.memory_space = row.memory_space
        self.why = row.why
        self._line = row.line_text

    def __str__(self):
        return self._line

    def __repr__(self):
        return '<Residual %s>' % self._line


class Buffer:
    """A buffer of the memory plan: `kind` ('saved_residual', 'parameter', ...), `bytes`, `type`,
    `space`, `first_step`, `last_step`, `source` and `where`."""

    def __init__(self, d):
        self.__dict__.update(d)

    def __repr__(self):
        return '<Buffer %s %s, %d bytes, %s>' % (self.kind, self.type, self.bytes, self.source)


class MemoryReport:
    """Where a training step's memory goes, from its plan (known before anything runs).

    `peak_step` (index into the timeline), `peak_pass` ('forward', 'recompute' or 'backward'),
    `peak_runs` (what that step runs), `predicted_peak` (device bytes: what a run measures),
    `live_peak`, `peak_buffers` (the device buffers alive at the peak, largest first),
    `bytes_by_kind` (theirs, per kind), `buffers` (every buffer), and the timeline as arrays:
    `timeline` (device bytes alive at each step) and `timeline_by_kind[kind]`; `steps` says what
    each step runs."""

    def __init__(self, text):
        d = json.loads(text)
        self.buffers = [Buffer(b) for b in d['buffers']]
        self.peak_step = d['peak_step']
        self.peak_pass = d['peak_pass']
        self.peak_runs = d['peak_runs']
        self.predicted_peak = d['predicted_peak']['device']
        self.predicted_peak_pinned_host = d['predicted_peak']['pinned_host']
        self.live_peak = d['live_peak']['device']
        self.peak_buffers = [self.buffers[i] for i in d['peak_buffers']]
        self.bytes_by_kind = dict(d['peak_bytes'])
        self.steps = [{'pass': s['pass'], 'runs': s['runs'], 'where': s['where']} for s in d['steps']]
        self.timeline = np.array([s['live_bytes']['device'] for s in d['steps']], dtype=np.int64)
        kinds = list(d['peak_bytes'])
        self.timeline_by_kind = {k: np.array([s['device_bytes'][k] for s in d['steps']], dtype=np.int64) for k in kinds}

    def __repr__(self):
        return '<MemoryReport peak %d bytes at step %d (%s): %s>' % (self.predicted_peak, self.peak_step, self.peak_pass,
                                                                    self.peak_runs)


class Decision:
    """One equation the solver decided: `site`, `primitive`, `signature` (what a JAX policy sees:
    'dot_general f32[8,16] f32[16,32]'), `type`, `where`, `decision` ('saveable', 'recompute' or
    'offloadable', as the decisions file says), `read_by_backward`, `bytes`, `iterations` and `cost`."""

    def __init__(self, e):
        for name in ('site', 'primitive', 'signature', 'type', 'where', 'decision', 'read_by_backward', 'bytes',
                     'iterations', 'cost'):
            setattr(self, name, getattr(e, name))

    def __repr__(self):
        return '<Decision %s %s at %s>' % (self.decision, self.signature, self.where)


_SHORT_DTYPES = {'float32': 'f32', 'bfloat16': 'bf16', 'float16': 'f16', 'float64': 'f64', 'int32': 'i32',
                 'int64': 'i64', 'uint32': 'u32', 'uint8': 'u8', 'int8': 'i8', 'bool': 'bool'}


def jax_signature(prim, *avals, **params):
    """What the solver's decisions are keyed by, from what jax.checkpoint gives a policy: the
    primitive's name, each operand's dtype and shape, and checkpoint_name's name."""
    key = prim.name
    for a in avals:
        dtype = _SHORT_DTYPES.get(a.dtype.name, a.dtype.name)
        key += ' %s[%s]' % (dtype, ','.join(str(d) for d in a.shape))
    if prim.name == 'name':
        key += ' name=%s' % params.get('name')
    return key


class Solution:
    """The cheapest save-or-recompute decisions `rematkit solve` found under a budget.

    `decisions` (one per equation inside the checkpoints), `peak_bytes` (planned, what a run
    measures), `budget_bytes`, `smallest_peak`, `residual_bytes`, `recompute_flops`, `cost`,
    `method`, `proven_optimal`, `seconds`; `decisions_json` is the file solved('FILE') reads and
    `jax_policy_text` the --export-jax file; `names_saved` and `names_offloaded` the checkpoint_name
    names JAX's names policy would list, or `names_why_not` (non-empty) the values names cannot say.
    str() is what `rematkit solve` prints."""

    def __init__(self, answer):
        self.decisions = [Decision(e) for e in answer.equations]
        for name in ('budget_bytes', 'peak_bytes', 'smallest_peak', 'residual_bytes', 'recompute_flops', 'cost',
                     'method', 'proven_optimal', 'whole_program', 'seconds', 'decisions_json', 'jax_policy_text',
                     'names_why_not'):
            setattr(self, name, getattr(answer, name))
        self.names_saved = list(answer.names_saved)
        self.names_offloaded = list(answer.names_offloaded)
        self._summary = answer.summary

    def __str__(self):
        return self._summary

    def __repr__(self):
        return '<Solution peak %d of %d bytes, %g FLOP recomputed>' % (self.peak_bytes, self.budget_bytes,
                                                                      self.recompute_flops)

    def jax_names_policy(self):
        """JAX's own names policy for the answer: jax.checkpoint_policies.save_only_these_names(...),
        or save_and_offload_only_these_names(...) when values are offloaded. A dataclass under
        jax_remat3 (JAX 0.10.2 on), which reads it where it never calls a function policy. A
        ValueError naming the values names cannot say when the answer keeps unnamed ones."""
        if self.names_why_not:
            raise ValueError('names do not say this answer: ' + self.names_why_not + '; use jax_policy()')
        import jax  # only here: the rest of the package needs no JAX
        policies = jax.checkpoint_policies
        if not self.names_offloaded:
            return policies.save_only_these_names(*self.names_saved)
        return policies.save_and_offload_only_these_names(
            names_which_can_be_saved=list(self.names_saved), names_which_can_be_offloaded=list(self.names_offloaded),
            offload_src='device', offload_dst='pinned_host')

    def jax_policy(self):
        """A policy(prim, *avals, **params) for jax.checkpoint (or flax.linen.remat), built here
        from the decisions: True (save) or False (recompute) by JAX signature, True for any
        equation the solver has not seen. A ValueError when two equations a JAX policy cannot
        tell apart were decided differently: solve with for_jax=True."""
        saveable = {}
        for d in self.decisions:
            if d.decision == 'offloadable':
                raise ValueError('an offloading answer has no JAX-policy form; solve without offload')
            save = d.decision != 'recompute'
            if saveable.setdefault(d.signature, save) != save:
                raise ValueError('equations with the signature %r are decided both ways: a JAX policy cannot tell them '
                                 'apart; solve with for_jax=True' % d.signature)

        def policy(prim, *avals, **params):
            return saveable.get(jax_signature(prim, *avals, **params), True)

        policy.saveable = dict(saveable)
        return policy
