# The GIL is let go while C++ works, and the names the library knows.
import threading
import time

import rematkit

WIDE = '''{ lambda ; w:f32[256,256] x:f32[256,256]. let
    y:f32[256,256] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    z:f32[256,256] = tanh y
    u:f32[256,256] = dot_general[dimension_numbers=(([1], [0]), ([], []))] z w
    s:f32[] = reduce_sum[axes=(0, 1)] u
  in (s,) }'''


def test_python_runs_while_a_comparison_works():
    program = rematkit.Program.parse(WIDE)
    done = threading.Event()

    def work():
        program.compare(['everything_saveable', 'nothing_saveable'], repetitions=40)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    ticks = 0
    while not done.is_set():  # would not run at all while the worker held the GIL
        ticks += 1
        time.sleep(0.001)
    worker.join()
    # Holding the GIL, the worker would leave this loop one tick, when it returned.
    assert ticks >= 10, ticks


def test_backends_and_policies_are_named():
    assert 'reference' in rematkit.backends()
    assert {'everything_saveable', 'nothing_saveable', 'dots_saveable'} <= set(rematkit.policies())
