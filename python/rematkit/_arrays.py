"""Arrays between NumPy and the C++ library, which takes and gives float64 (exact for every dtype
a rematkit tensor holds; a complex array as its real and imaginary parts, a last dim of 2): each
result in its program dtype, bf16 as ml_dtypes.bfloat16 where that package is importable, else as
uint16 bit patterns (with a warning, once)."""
import warnings

import numpy as np

try:
    import ml_dtypes
except ImportError:  # optional: Debian 12 has no package for it
    ml_dtypes = None

_NUMPY = {'f32': np.float32, 'f64': np.float64, 'f16': np.float16, 'i32': np.int32, 'i64': np.int64,
          'u32': np.uint32, 'u8': np.uint8, 'i8': np.int8, 'bool': np.bool_, 'c64': np.complex64,
          'c128': np.complex128}
_warned_bf16 = False


def to_float64(value, dtype):
    """`value` (an array, a number or nested lists) as float64 for a binder of `dtype`."""
    if dtype == 'bf16':
        array = np.asarray(value)
        if array.dtype == np.uint16:  # bit patterns, as from_float64 gives them without ml_dtypes
            return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return array.astype(np.float32).astype(np.float64)
    if dtype in ('c64', 'c128'):
        array = np.asarray(value, dtype=np.complex128)
        return np.ascontiguousarray(np.stack([array.real, array.imag], axis=-1))
    return np.ascontiguousarray(np.asarray(value), dtype=np.float64)


def from_float64(array, dtype):
    """A float64 result as an array of the program's `dtype`."""
    global _warned_bf16
    if dtype == 'bf16':
        if ml_dtypes is not None:
            return array.astype(ml_dtypes.bfloat16)
        if not _warned_bf16:
            warnings.warn('ml_dtypes is not importable: bf16 arrays are given as uint16 bit patterns', stacklevel=3)
            _warned_bf16 = True
        return (array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: values are bf16
    if dtype in ('c64', 'c128'):
        return (array[..., 0] + 1j * array[..., 1]).astype(_NUMPY[dtype])
    return array.astype(_NUMPY.get(dtype, np.float64))
