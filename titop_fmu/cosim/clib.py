"""The co-simulation master's C library (``master.c``): the loop solve's plans over FMUs
(:mod:`.plan`) and the attitude charts' arithmetic (:mod:`.charts`), what the master does
at every coupling iteration. Compiled on first use into the cache, like the blocks' kernel
(:mod:`titop_fmu.cbuild`); where there is no C compiler the master does the same in Python,
with the same results.
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path

from ..cbuild import CompileError, c_compiler, cached_build, compile_c, load_library

SOURCE = Path(__file__).resolve().parent / "master.c"
#: the attitude algebra it includes (titop_fmu/spatial.py in C)
SPATIAL_H = Path(__file__).resolve().parents[1] / "spatial.h"
#: -O3: the products with the step Jacobian, sums of columns, vectorized (no -ffast-math: the
#: same additions in the same order as at -O2)
FLAGS = ["-O3", "-std=c99", "-shared", "-fPIC"]

_LOADED = None          # the library, or False once it could not be had


def library():
    """The compiled ``master.c`` (``ctypes.CDLL``), or None where there is no C compiler or it
    fails (tried once per process)."""
    global _LOADED
    if _LOADED is None:
        _LOADED = False
        cc = c_compiler()
        if cc:
            key = hashlib.sha256(SOURCE.read_bytes() + SPATIAL_H.read_bytes() + cc.encode()
                                 + " ".join(FLAGS).encode()).hexdigest()[:16]
            try:
                lib = cached_build(f"master-{key}.so", lambda dest: compile_c(
                    SOURCE, dest, cc, FLAGS, ["-lm"], "the master's C library", includes=[SPATIAL_H]))
                _LOADED = load_library(lib, "the master's C library")
            except CompileError:
                pass
    return _LOADED or None


def function(name, restype=ctypes.c_int):
    """The function ``name`` of the library (a function object of its own: no argtypes, the
    arguments given converted, :func:`address`), or None without the library."""
    dll = library()
    if dll is None:
        return None
    f = dll[name]
    f.restype = restype
    return f


def address(array):
    """A numpy array's data as a C pointer argument (the array must outlive its use)."""
    return ctypes.c_void_p(array.ctypes.data)
