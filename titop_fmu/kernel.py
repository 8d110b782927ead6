"""The C kernel of the monolithic right-hand side (``kernel.c``): the fast path of
:meth:`titop_fmu.system.System.simulate`.

The NumPy blocks stay the reference: the kernel follows them equation by equation
(the recursive loop solve of :mod:`titop_fmu.system` included) and is tested equal
to them to rounding. It covers trees of floating bases, welded bodies and revolute
and prismatic bodies in forward mode; a system with another block (loop closure,
imposed-motion base, inverse mode) runs on the NumPy blocks.

The kernel is compiled on first use with the C compiler (``$CC``, ``cc`` or ``gcc``;
about a second) into ``$XDG_CACHE_HOME/titop-fmu`` (default ``~/.cache``), keyed by
the source and the compiler, then only loaded. Without a compiler,
:class:`KernelUnavailable` says why and the NumPy blocks run.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from .blocks import FloatingBase, PrismaticBody, RevoluteBody, WeldedBody
from .errors import TitopError

SOURCE = Path(__file__).resolve().parent / "kernel.c"
#: the block types of kernel.c and the per-block integer and parameter layout (its enums)
TYPES = {FloatingBase: 0, WeldedBody: 1, RevoluteBody: 2, PrismaticBody: 3}
NI = 11                  # I_TYPE, I_PARENT, I_SLOT, I_STATE, I_NC, I_DPAR, I_INERTIAL, I_MCONST, I_EXT, I_TAU, I_CHILD
D_PC = 90                # D_P (36), D_P^-1 (36), g (3), mounting DCM (9), axis (3), J, k, d; then [PC_i]


class KernelUnavailable(TitopError):
    """The C kernel cannot run this system here (no compiler, or a block it does not cover)."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/titop-fmu`` (default ``~/.cache/titop-fmu``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "titop-fmu"


@lru_cache(maxsize=None)
def library():
    """The compiled kernel (``ctypes.CDLL``), built into the cache when absent."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise KernelUnavailable("no C compiler (cc/gcc; or set CC) to build the C kernel")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + cc.encode()).hexdigest()[:16]
    lib = cache_root() / f"kernel-{key}.so"
    if not lib.is_file():
        lib.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="titop_kernel_", dir=lib.parent) as tmp:
            cmd = [*cc.split(), "-O2", "-std=c99", "-shared", "-fPIC", "-o", "kernel.so", str(SOURCE), "-lm"]
            try:
                r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            except OSError as e:
                raise KernelUnavailable(f"cannot run the C compiler {cc!r} ({e})") from None
            if r.returncode:
                raise KernelUnavailable(f"compiling the C kernel failed ({' '.join(cmd)}):\n{r.stderr}")
            os.replace(Path(tmp) / "kernel.so", lib)          # atomic: concurrent builds are harmless
    dll = ctypes.CDLL(str(lib))
    dll.titop_workspace.restype = ctypes.c_int
    dll.titop_workspace.argtypes = [ctypes.c_int, ctypes.c_void_p]
    dll.titop_rhs.restype = ctypes.c_int
    dll.titop_rhs.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 6
    return dll


class CompiledRHS:
    """The right-hand side of a checked :class:`~titop_fmu.system.System` plan on the C
    kernel; :class:`KernelUnavailable` when a block is not covered.

    The constant inputs are read through pointers to the system's values, which
    :meth:`~titop_fmu.system.System.set_input` changes in place."""

    def __init__(self, plan):
        system = plan.system
        index = {n: i for i, n in enumerate(plan.order)}
        ints, doubles, children, self._keep = [], [], [], []

        def pointer(value):
            if value is None:
                return -1
            self._keep.append(value)
            return len(self._keep) - 1

        for n in plan.order:
            b = system.blocks[n]
            kind = TYPES.get(type(b))
            if kind is None or getattr(b, "mode", "forward") != "forward":
                what = f"{type(b).__name__}" + (f" in {b.mode} mode" if kind is not None else "")
                raise KernelUnavailable(f"the C kernel does not cover {n!r} ({what})")
            parent = slot = m_const = -1
            for _, src in plan.wiring[n].kin:           # the one parent port "p", if any
                if isinstance(src, np.ndarray):
                    m_const = pointer(system.values[(n, "p.m")])
                else:
                    parent, slot = index[src[0]], system.blocks[src[0]].child_ports.index(src[1][:-2])
            first = len(children)
            for c in b.child_ports:
                j = plan.child_link.get((n, c))
                children += [index[system.links[j].child], -1] if j is not None else \
                    [-1, pointer(system.values[(n, f"{c}.w")])]
            body = b.body
            d = np.zeros(D_PC + 3 * body.n_children)
            d[0:36] = body.D_P.ravel()
            d[72:75] = b.g
            d[75:84] = np.eye(3).ravel() if kind == 0 else b.P_a0b.ravel()
            if kind == 0:
                d[36:72] = b.D_inv.ravel()
            if kind >= 2:
                d[84:87] = b.axis
                d[87:90] = (b.J_r if kind == 2 else body.mass), b.k, b.d
            for i, PC in enumerate(body.children):
                d[D_PC + 3 * i:D_PC + 3 * i + 3] = PC
            ints.append([kind, parent, slot, plan.state_slices[n].start, body.n_children,
                         sum(len(x) for x in doubles), int(getattr(b, "ext_frame", "") == "inertial"),
                         m_const, pointer(system.values.get((n, "ext.w"))),
                         pointer(system.values.get((n, "joint.tau"))), first])
            doubles.append(d)
        self.n = len(ints)
        table = np.array(ints, dtype=np.int32).reshape(-1, NI)
        table[:, NI - 1] += table.size                 # the children's integers follow the table
        self._ints = np.ascontiguousarray(np.concatenate([table.ravel(), np.array(children, dtype=np.int32)]),
                                          dtype=np.int32)
        self._par = np.ascontiguousarray(np.concatenate(doubles))
        self._ptrs = (ctypes.c_void_p * max(1, len(self._keep)))(*[v.ctypes.data for v in self._keep])
        self._lib = library()
        self._ws = np.zeros(self._lib.titop_workspace(self.n, self._ints.ctypes.data))
        self._args = (self.n, self._ints.ctypes.data, self._par.ctypes.data, ctypes.addressof(self._ptrs),
                      self._ws.ctypes.data)

    def __call__(self, y):
        """``(ydot, code)``: code 0, or 1 (the loop is singular), 2 (its solution is not finite)."""
        y = np.ascontiguousarray(y, dtype=float)
        ydot = np.empty_like(y)
        return ydot, self._lib.titop_rhs(*self._args, y.ctypes.data, ydot.ctypes.data)
