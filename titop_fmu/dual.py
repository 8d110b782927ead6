"""Forward-mode derivatives of the C kernel: ``kernel_dual.cpp``, which is ``kernel.c``
compiled once more on dual numbers (a value and :data:`width` tangents per number).

A :class:`DualTree` evaluates a kernel tree (:func:`titop_fmu.kernel.tables`) at states
``y`` and gives the state derivatives and every block's outputs together with their
derivatives along any number of directions of the states and of the constant inputs:
the columns of ``(d ydot, d out) / (d y, d u)`` times the seeds, exact to rounding (no step,
no truncation), :data:`width` directions per call of the kernel.

The library is compiled on first use as the kernel is (:func:`titop_fmu.kernel.library`),
by the C compiler driver in C++ mode (``cc -x c++``: it needs the C++ front end, ``g++``),
into the same cache, and only loaded afterwards. Without it, :class:`KernelUnavailable`
says why.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

import numpy as np

from .cbuild import CompileError, c_compiler, cached_build, compile_c, load_library
from .kernel import HEADERS, KernelUnavailable, SOURCE as KERNEL_SOURCE, block_entry, tables

SOURCE = Path(__file__).resolve().parent / "kernel_dual.cpp"
#: tangents per dual number: the directions one kernel call differentiates along (measured:
#: benchmarks/linearize.py --widths)
WIDTH = 8
FLAGS = ["-x", "c++", "-O3", "-shared", "-fPIC", "-fno-exceptions", "-fno-rtti",
         "-fno-threadsafe-statics"]

_LOADED = {}            # width -> (library, None) or (None, KernelUnavailable)
#: the forward-mode kernel compiled into an FMU (set by its slave): loaded, never compiled, when set
BUNDLED: Path | None = None
#: its file name in an FMU's resources
DUAL_LIBRARY = "libtitop_kernel_dual.so"


def library(width: int = WIDTH):
    """The forward-mode kernel with ``width`` tangents (``ctypes.CDLL``): an FMU's own
    (:data:`BUNDLED`, of :data:`WIDTH`), or compiled into the cache when absent;
    :class:`KernelUnavailable` if it cannot be had (remembered)."""
    if width not in _LOADED:
        try:
            _LOADED[width] = _load(width), None
        except KernelUnavailable as e:
            _LOADED[width] = None, e
    dll, failure = _LOADED[width]
    if failure is not None:
        raise failure
    return dll


def bundle(path):
    """Use the forward-mode kernel compiled into an FMU (``path``; not if this process has
    loaded one already, or if there is none: an FMU built without a C++ compiler compiles
    it where a compiler is, else its derivatives w.r.t. its states say why not)."""
    global BUNDLED
    if BUNDLED is None and not _LOADED and os.path.isfile(path):
        BUNDLED = Path(path)


def compile_library(dest: Path, cc: str, width: int = WIDTH) -> Path:
    """Compile ``kernel_dual.cpp`` (with ``kernel.c`` beside it) to the shared library ``dest``."""
    try:
        return compile_c(SOURCE, dest, cc, FLAGS + [f"-DTITOP_DUAL_WIDTH={width}"], ["-lm"],
                         "the forward-mode kernel (C++: needs g++)", includes=[KERNEL_SOURCE, *HEADERS])
    except CompileError as e:
        raise KernelUnavailable(str(e)) from None


def _load(width):
    if BUNDLED is not None and width == WIDTH and BUNDLED.is_file():   # (an FMU's folder may be gone)
        return _open(BUNDLED, width)
    cc = c_compiler()
    if not cc:
        raise KernelUnavailable("no C compiler (cc/gcc with g++'s C++ front end; or set CC) to build the "
                                "forward-mode kernel")
    return _open(cached_library(cc, width), width)


def cached_library(cc: str, width: int = WIDTH) -> Path:
    """The forward-mode kernel with ``width`` tangents compiled by ``cc`` into the cache, once
    per source, compiler and width; :class:`KernelUnavailable` if it cannot be compiled."""
    key = hashlib.sha256(SOURCE.read_bytes() + KERNEL_SOURCE.read_bytes() + b"".join(h.read_bytes() for h in HEADERS) + cc.encode()
                         + str(width).encode() + " ".join(FLAGS).encode()).hexdigest()[:16]
    return cached_build(f"kernel-dual{width}-{key}.so", lambda dest: compile_library(dest, cc, width))


def _open(lib: Path, width: int):
    try:
        dll = load_library(lib, "the forward-mode kernel")
    except CompileError as e:
        raise KernelUnavailable(str(e)) from None
    dll.titop_dual_workspace.restype = ctypes.c_int
    dll.titop_dual_workspace.argtypes = [ctypes.c_int, ctypes.c_void_p]
    dll.titop_dual_width.restype = ctypes.c_int
    if dll.titop_dual_width() != width:
        raise KernelUnavailable(f"the forward-mode kernel {lib.name} has the wrong width")
    dll.titop_dual_evaluate.restype = ctypes.c_int
    dll.titop_dual_motion.restype = ctypes.c_void_p
    dll.titop_dual_motion.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    return dll


class DualTree:
    """A kernel tree (``entries`` as :func:`titop_fmu.kernel.tables` takes them) evaluated on
    dual numbers: :meth:`evaluate` gives the state derivatives and the ``n_outputs`` outputs
    at the states ``y`` and the constant inputs' current values, and their derivatives
    along seeds of the states and of the constant inputs. ``bodies``: positions among
    ``entries`` of blocks whose motion vector at their port (18 each, their own frame: what the
    inertial record outputs are computed from) follows the outputs, with its derivatives."""

    def __init__(self, entries, n_outputs: int = 0, width: int = WIDTH, bodies=()):
        lib = library(width)
        self.width = w = width
        ints, par, self.keep = tables(entries)
        self.n, self.n_states, self.n_outputs = len(entries), sum(e.block.n_states for e in entries), n_outputs
        self._ints = ints
        self._par = _dual(par, w)
        self._inputs = [_dual(v, w) for v in self.keep]        # the constant inputs, values refreshed per call
        self._ptrs = (ctypes.c_void_p * max(1, len(self._inputs)))(*[v.ctypes.data for v in self._inputs])
        self._ws = np.zeros((lib.titop_dual_workspace(self.n, ints.ctypes.data), 1 + w))
        self._y = np.zeros((self.n_states, 1 + w))
        self._ydot = np.zeros_like(self._y)
        self._out = np.zeros((n_outputs, 1 + w))
        ws = self._ws.ctypes.data
        at = [(lib.titop_dual_motion(b, ints.ctypes.data, ws) - ws) // self._ws[0].nbytes for b in bodies]
        self._motion_rows = np.array([i + k for i in at for k in range(18)], dtype=int)   # in the workspace
        self._fn = lib["titop_dual_evaluate"]
        self._args = (ctypes.c_int(self.n), *(ctypes.c_void_p(a.ctypes.data) for a in (ints, self._par)),
                      ctypes.c_void_p(ctypes.addressof(self._ptrs)), ctypes.c_void_p(self._ws.ctypes.data),
                      ctypes.c_void_p(self._y.ctypes.data), ctypes.c_void_p(self._ydot.ctypes.data),
                      ctypes.c_void_p(self._out.ctypes.data if n_outputs else None))

    def input_index(self, array) -> int:
        """The position among the constant inputs (:meth:`evaluate`'s ``input_seeds`` keys) of
        the array ``array`` the tree reads (by identity); ValueError if it reads no such array."""
        for i, v in enumerate(self.keep):
            if v is array:
                return i
        raise ValueError("the kernel tree does not read this array")

    def evaluate(self, y, state_seeds=None, input_seeds=None):
        """``(ydot, dydot, out, dout, code)`` at the states ``y``: the state derivatives and
        outputs (then the ``bodies``' motion vectors), and their derivatives along the ``k``
        seed columns, ``state_seeds`` (``(n_states, k)``, or None: zero) and ``input_seeds``
        (``{input position: (size, k)}``);
        ``code`` as ``titop_evaluate`` returns it (0: fine, 1: the loop is singular, 2: its
        solution is not finite)."""
        k = 0 if state_seeds is None else np.shape(state_seeds)[1]
        for s in (input_seeds or {}).values():
            k = max(k, np.shape(s)[1])
        w = self.width
        n_out = self.n_outputs
        dydot, dout = np.zeros((self.n_states, k)), np.zeros((n_out + len(self._motion_rows), k))
        self._y[:, 0] = y
        for v, d in zip(self.keep, self._inputs):
            d[:, 0] = v
        ydot = out = None
        code = 0
        for start in range(0, max(k, 1), w):
            m = min(w, k - start)
            self._y[:, 1:] = 0.0
            if state_seeds is not None and m > 0:
                self._y[:, 1:1 + m] = state_seeds[:, start:start + m]
            for d in self._inputs:
                d[:, 1:] = 0.0
            for i, s in (input_seeds or {}).items():
                if m > 0:
                    self._inputs[i][:, 1:1 + m] = s[:, start:start + m]
            code = code or self._fn(*self._args)
            if ydot is None:
                ydot = self._ydot[:, 0].copy()
                out = np.concatenate([self._out[:, 0], self._ws[self._motion_rows, 0]])
            if m > 0:
                dydot[:, start:start + m] = self._ydot[:, 1:1 + m]
                dout[:n_out, start:start + m] = self._out[:, 1:1 + m]
                dout[n_out:, start:start + m] = self._ws[self._motion_rows, 1:1 + m]
        return ydot, dydot, out, dout, code


def _dual(values, width) -> np.ndarray:
    """``values`` as dual numbers with zero tangents: an ``(n, 1 + width)`` array."""
    d = np.zeros((len(values), 1 + width))
    d[:, 0] = values
    return d


class DualBlock:
    """One block's outputs and state derivatives and their derivatives w.r.t. its inputs and
    states, on the forward-mode kernel, for inputs laid out as ``slices`` says (a unit's):
    :meth:`derivatives` is what a block unit's ``state_space_derivatives`` gives."""

    def __init__(self, block, slices: dict, n_outputs: int):
        self.u = np.zeros(max((s.stop for s in slices.values()), default=0))      # read through the tree
        self.tree = DualTree([block_entry(block, {n: self.u[s] for n, s in slices.items()})], n_outputs)
        base = self.u.ctypes.data
        # each input array the tree reads: its first position in u
        self._starts = [(v.ctypes.data - base) // v.itemsize for v in self.tree.keep]

    def derivatives(self, x, u, seeds) -> tuple:
        """``(d outputs, d xdot)`` along the columns of ``seeds`` over ``[inputs; states]``, at
        the states ``x`` and inputs ``u``; :class:`KernelUnavailable`-free: ``code`` as
        :meth:`DualTree.evaluate` returns it."""
        np.copyto(self.u, u)
        n_in = len(self.u)
        input_seeds = {i: seeds[s:s + len(v)] for i, (s, v) in enumerate(zip(self._starts, self.tree.keep))}
        _, dxdot, _, dout, code = self.tree.evaluate(x, seeds[n_in:], input_seeds)
        return dout, dxdot, code
