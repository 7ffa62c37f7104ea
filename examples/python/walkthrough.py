"""docs/python.md's walk-through: a Flax MLP's program (three nn.remat(Dense -> tanh) layers, as
jax.make_jaxpr prints its loss) -> what each policy keeps -> where the memory goes -> the cheapest
decisions under a budget -> a policy for jax.checkpoint. Run: PYTHONPATH=build/python python3 examples/python/walkthrough.py"""
import numpy as np

import rematkit

# What jax.make_jaxpr(loss)(params, x) prints for loss = sum(mlp(x)), each layer nn.remat'ed.
# (With JAX at hand: program = rematkit.trace(loss, params, x).)
TEXT = '''{ lambda ; x:f32[32,16] w0:f32[16,64] b0:f32[64] w1:f32[64,64] b1:f32[64] w2:f32[64,8] b2:f32[8]. let
    h0:f32[32,64] = checkpoint[
      jaxpr={ lambda ; a:f32[32,16] w:f32[16,64] b:f32[64]. let
          y:f32[32,64] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] a w
          c:f32[1,64] = reshape[dimensions=None new_sizes=(1, 64)] b
          z:f32[32,64] = add y c
          t:f32[32,64] = tanh z
        in (t,) }
      policy=None
      prevent_cse=True
    ] x w0 b0
    h1:f32[32,64] = checkpoint[
      jaxpr={ lambda ; a:f32[32,64] w:f32[64,64] b:f32[64]. let
          y:f32[32,64] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] a w
          c:f32[1,64] = reshape[dimensions=None new_sizes=(1, 64)] b
          z:f32[32,64] = add y c
          t:f32[32,64] = tanh z
        in (t,) }
      policy=None
      prevent_cse=True
    ] h0 w1 b1
    y2:f32[32,8] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] h1 w2
    c2:f32[1,8] = reshape[dimensions=None new_sizes=(1, 8)] b2
    out:f32[32,8] = add y2 c2
    loss:f32[] = reduce_sum[axes=(0, 1)] out
  in (loss,) }'''

program = rematkit.Program.parse(TEXT, name='mlp.jaxpr')
print(program)

# 1. What the backward pass keeps (jax.ad_checkpoint.print_saved_residuals), with the params trained
#    (wrt) as a training step trains them, not the data x.
params = ['w0', 'b0', 'w1', 'b1', 'w2', 'b2']
print('\n== residuals, the program as written (nn.remat: nothing saveable inside) ==')
for r in program.residuals(wrt=params):
    print(r)
print('\n== residuals with dots_saveable in every checkpoint ==')
kept = program.residuals(wrt=params, retarget_policy='dots_saveable')
for r in kept:
    print('%-45s %5d bytes  (%s)' % (r, r.nbytes, r.why.split(' in the checkpoint')[0]))

# 2. Where the training step's memory goes, before anything runs.
print('\n== memory ==')
for policy in ('dots_saveable', 'nothing_saveable'):
    m = program.memory(wrt=params, retarget_policy=policy)
    print('%-17s peak %6d bytes at step %d of %d (%s: %s)' % (policy, m.predicted_peak, m.peak_step, len(m.timeline),
                                                             m.peak_pass, m.peak_runs))
    print('                  at the peak: %s' % ', '.join('%s %d' % (k, v) for k, v in m.bytes_by_kind.items() if v))

# 3. The cheapest decisions whose peak fits halfway between the smallest and everything_saveable's.
print('\n== solve(budget=0.5) ==')
solution = program.solve(budget=0.5, wrt=params, for_jax=True)
print(solution)

# 4. ... as a policy for jax.checkpoint, built here from the decisions (no JAX needed to build it).
policy = solution.jax_policy()
print('== the JAX policy: save? by what jax.checkpoint shows a policy ==')
for signature, save in sorted(policy.saveable.items()):
    print('  %-45s %s' % (signature, save))
# jax.checkpoint(layer, policy=policy), or nn.remat(Block, policy=policy).

# 5. Gradients, NumPy in and out: the same bits under every policy.
rng = np.random.default_rng(0)
inputs = {a['name']: rng.standard_normal(a['shape']).astype(np.float32) for a in program.arguments}
g_written = program.grad(inputs, wrt=params)
g_dots = program.grad(inputs, wrt=params, retarget_policy='dots_saveable')
same = all((g_written.grads[k] == g_dots.grads[k]).all() for k in params)
print('\n== grad ==\nloss %.6f; d loss / d w0 %s %s; the same bits under dots_saveable: %s' % (
    g_written.value, g_written.grads['w0'].dtype, g_written.grads['w0'].shape, same))

# 6. The policies side by side, run on the same inputs.
print('\n== compare ==')
for row in program.compare(['everything_saveable', 'dots_saveable', 'nothing_saveable'], wrt=params):
    print('%-20s residuals %6d bytes, peak %6d bytes, recompute %7d FLOP, max grad diff %g' % (
        row['policy'], row['residual_bytes'], row['predicted_peak'], row['recompute_flops'], row['max_grad_diff']))
