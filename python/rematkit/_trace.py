"""rematkit.trace: a JAX function's program, through jax.make_jaxpr's printed text."""
from ._program import Program


def trace(fun, *args, **kwargs):
    """jax.make_jaxpr(fun)(*args, **kwargs), read as a Program (its text is what rematkit reads
    everywhere). Needs jax importable."""
    try:
        import jax
    except ImportError as e:
        raise ImportError('rematkit.trace needs jax; without it, give Program.parse the text '
                          'str(jax.make_jaxpr(f)(*args)) printed where jax is') from e
    closed = jax.make_jaxpr(fun)(*args, **kwargs)
    return Program.parse(str(closed), name='<trace of %s>' % getattr(fun, '__name__', 'a function'))
