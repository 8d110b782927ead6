"""The C kernel of the TITOP blocks (``kernel.c``): the fast path of the monolithic
right-hand side (:meth:`titop_fmu.system.System.simulate`) and of a block unit's
derivatives and outputs (:class:`~titop_fmu.unit.BlockUnit`, and so the FMUs).

The NumPy blocks stay the reference: the kernel follows them equation by equation
(the recursive loop solve of :mod:`titop_fmu.loop_solve` included) and is tested equal
to them to rounding. It covers every block of :mod:`titop_fmu.blocks` (floating and
imposed-motion bases, welded bodies, revolute and prismatic bodies forward and inverse,
loop closures); a system with another block runs on the NumPy blocks.

The kernel is compiled on first use with the C compiler (``$CC``, ``cc`` or ``gcc``;
about a second) into ``$XDG_CACHE_HOME/titop-fmu`` (default ``~/.cache``), keyed by
the source and the compiler, then only loaded; an FMU carries its own, compiled when
it was built (:data:`BUNDLED`). Without either, :class:`KernelUnavailable` says why
and the NumPy blocks run.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

import numpy as np

from . import integrators
from .blocks import FlexibleBody, FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody, RevoluteBody, WeldedBody
from .cbuild import CompileError, c_compiler, cached_build, compile_c, load_library
from .errors import SolverError, TitopError

SOURCE = Path(__file__).resolve().parent / "kernel.c"
#: the attitude algebra it includes (shared with the master's C library)
SPATIAL_H = Path(__file__).resolve().parent / "spatial.h"
#: the flexible body in C, which kernel.c includes
FLEXIBLE_H = Path(__file__).resolve().parent / "flexible.h"
#: the files kernel.c includes
HEADERS = (SPATIAL_H, FLEXIBLE_H)
#: the block types of kernel.c and the per-block integer and parameter layout (its enums)
BASE, WELDED, REVOLUTE, PRISMATIC, IMPOSED, CLOSURE = range(6)
TYPES = {FloatingBase: BASE, WeldedBody: WELDED, RevoluteBody: REVOLUTE, PrismaticBody: PRISMATIC,
         ImposedMotionBase: IMPOSED, LoopClosure: CLOSURE}
#: I_TYPE, I_PARENT, I_SLOT, I_STATE, I_NC, I_DPAR, I_INERTIAL, I_MCONST, I_EXT, I_TAU, I_INVERSE,
#: I_PARENT_R, I_SLOT_R, I_MCONST_R, I_CHILD, I_FLEX, I_MODES
NI = 17
I_CHILD = 14
D_PC = 90                # D_P (36), D_P^-1 (36), g (3), mounting DCM (9), axis (3), J, k, d; then [PC_i]


class KernelUnavailable(TitopError):
    """The C kernel cannot run this system here (no compiler, or a block it does not cover)."""


class KernelError(SolverError):
    """The kernel's evaluation failed (a singular loop, a non-finite solution)."""


#: the kernel compiled into an FMU (set by its slave): loaded, never compiled, when set
BUNDLED: Path | None = None
#: its file name, beside this module in an FMU's resources (not kernel.so: Python would import that as this module)
KERNEL_LIBRARY = "libtitop_kernel.so"


def library():
    """The compiled kernel (``ctypes.CDLL``): the FMU's own (:data:`BUNDLED`), or built into
    the cache when absent; :class:`KernelUnavailable` if neither can be had (remembered for
    the process: a failed build is not tried again for every unit)."""
    global _LOADED
    if _LOADED is None:
        try:
            _LOADED = _load(), None
        except KernelUnavailable as e:
            _LOADED = None, e
    dll, failure = _LOADED
    if failure is not None:
        raise failure
    return dll


def forget():
    """Forget the loaded kernel or its failure (tests that change the compiler or cache)."""
    global _LOADED
    _LOADED = None


_LOADED = None          # (library, None) or (None, KernelUnavailable), once tried


def _load():
    lib = BUNDLED
    if lib is None:
        cc = c_compiler()
        if not cc:
            raise KernelUnavailable("no C compiler (cc/gcc; or set CC) to build the C kernel")
        lib = cached_kernel(cc)
    try:
        dll = load_library(lib, "the C kernel")
    except CompileError as e:
        raise KernelUnavailable(str(e)) from None
    dll.titop_workspace.restype = ctypes.c_int
    dll.titop_workspace.argtypes = [ctypes.c_int, ctypes.c_void_p]
    return dll


def bundle(path):
    """Use the kernel compiled into an FMU (``path``; not if this process has loaded one
    already, or if there is none): an FMU never compiles."""
    global BUNDLED
    if BUNDLED is None and _LOADED is None and os.path.isfile(path):
        BUNDLED = Path(path)


def cached_kernel(cc: str) -> Path:
    """The kernel compiled by ``cc`` into the cache, once per source and compiler."""
    key = hashlib.sha256(SOURCE.read_bytes() + b"".join(h.read_bytes() for h in HEADERS) + cc.encode()).hexdigest()[:16]
    return cached_build(f"kernel-{key}.so", lambda dest: compile_kernel(dest, cc))


def compile_kernel(dest: Path, cc: str) -> Path:
    """Compile ``kernel.c`` to the shared library ``dest`` (deterministic: same source and
    compiler, same bytes)."""
    try:
        return compile_c(SOURCE, dest, cc, ["-O2", "-std=c99", "-shared", "-fPIC"], ["-lm"], "the C kernel",
                         includes=list(HEADERS))
    except CompileError as e:
        raise KernelUnavailable(str(e)) from None


class _Entry:
    """One block of a kernel's tree: the block, its state offset, per parent port (a loop
    closure has two) its parent (index, child slot) or the constant motion vector there, per
    child port the linked block's index or the constant wrench, its constant ``ext.w`` (an
    imposed-motion base: ``p.a``) and ``joint.tau`` (inverse mode: ``joint.qdd``): arrays
    whose memory the kernel reads, or None."""

    def __init__(self, name, block, state, parents=(), children=(), ext=None, tau=None):
        kind = TYPES.get(type(block))
        if kind is None:
            raise KernelUnavailable(f"the C kernel does not cover {name!r} ({type(block).__name__})")
        self.kind, self.block, self.state = kind, block, state
        self.parents, self.children, self.ext, self.tau = list(parents), list(children), ext, tau


def _extra(block, value):
    """``(ext, tau)`` of an :class:`_Entry` from ``value(input name)`` (an array or None)."""
    return (value("p.a" if isinstance(block, ImposedMotionBase) else "ext.w"),
            value("joint.qdd" if getattr(block, "mode", "") == "inverse" else "joint.tau"))


def tables(entries) -> tuple:
    """``(ints, par, keep)``: the kernel's integer table (the children's integers after it) and
    parameters of ``entries`` (parents first), and the arrays its pointers index (the
    constant inputs, read by the kernel at every call)."""
    ints, doubles, children, keep = [], [], [], []

    def pointer(value):
        if value is None:
            return -1
        keep.append(value)
        return len(keep) - 1

    for e in entries:
        b, kind = e.block, e.kind
        first = len(children)
        for c in e.children:
            children += [c, -1] if isinstance(c, int) else [-1, pointer(c)]
        ports = [(-1, -1, -1)] * 2                  # (parent, slot, constant) of l (or p), r
        for k, src in enumerate(e.parents):
            ports[k] = (*src, -1) if isinstance(src, tuple) else (-1, -1, pointer(src))
        if kind == CLOSURE:
            d, n_children = np.concatenate([b.K.ravel(), b.D.ravel()]), 0
        else:
            body = b.body
            n_children = body.n_children
            flex = flexible_data(body) if isinstance(body, FlexibleBody) else np.zeros(0)
            d = np.zeros(D_PC + 3 * n_children + flex.size)
            d[0:36] = body.D_P.ravel()
            d[72:75] = b.g
            d[75:84] = np.eye(3).ravel() if kind in (BASE, IMPOSED) else b.P_a0b.ravel()   # no mounting
            if kind == BASE and b.D_inv is not None:
                d[36:72] = b.D_inv.ravel()
            if kind in (REVOLUTE, PRISMATIC):
                d[84:87] = b.axis
                d[87:90] = (b.J_r if kind == REVOLUTE else body.mass), b.k, b.d
            for i, PC in enumerate(body.children):
                d[D_PC + 3 * i:D_PC + 3 * i + 3] = PC
            d[D_PC + 3 * n_children:] = flex
        (pl, sl, ml), (pr, sr, mr) = ports
        body = getattr(b, "body", None)
        ints.append([kind, pl, sl, e.state, n_children, sum(len(x) for x in doubles),
                     int(getattr(b, "ext_frame", "") == "inertial"), ml, pointer(e.ext), pointer(e.tau),
                     int(getattr(b, "mode", "") == "inverse"), pr, sr, mr, first,
                     int(isinstance(body, FlexibleBody)), getattr(body, "n_modes", 0)])
        doubles.append(d)
    table = np.array(ints, dtype=np.int32).reshape(-1, NI)
    table[:, I_CHILD] += table.size                # the children's integers follow the table
    return (np.concatenate([table.ravel(), np.array(children, dtype=np.int32)]),
            np.concatenate(doubles) if doubles else np.zeros(0), keep)


def flexible_data(body) -> np.ndarray:
    """A flexible body's data in the kernel's layout (flexible.h, FlexData): ``L^T``, ``omega^2``,
    ``2 zeta omega``, ``I_phi_phi``, ``I_phi_x0``, its traces, ``K0t``, ``K0r``, ``K0om`` (zero
    without stiffening), which of their n x n blocks are not zero, then per node ``phi``,
    ``psi``, ``K0F``, ``K0M`` and which of their blocks are not zero."""
    n = body.n_modes

    def nonzero(A, blocks):                    # which n x n blocks of A are not all zero
        return [float(np.any(B)) for B in np.reshape(A, (blocks, n * n))] if n else [0.0] * blocks

    parts = [np.vstack([body.C1, body.C2]), body.K, body.Dd, body.F, body.E9, body.trE, body.K0t, body.K0r,
             body.K0om, nonzero(body.F, 9), nonzero(body.K0t, 3), nonzero(body.K0r, 3), nonzero(body.K0om, 6)]
    for i in range(body.n_children):
        d = body.data
        parts += [d.phi[i], d.psi[i], body.K0F[i], body.K0M[i], nonzero(body.K0F[i], 3), nonzero(body.K0M[i], 3)]
    return np.concatenate([np.ravel(p) for p in parts])


class _Tree:
    """The kernel's tables for ``entries`` (parents first) and a call of ``titop_evaluate``."""

    def __init__(self, entries, n_outputs=0):
        self._ints, self._par, self._keep = tables(entries)
        self.n = len(entries)
        self._ptrs = (ctypes.c_void_p * max(1, len(self._keep)))(*[v.ctypes.data for v in self._keep])
        lib = library()
        self._ws = np.zeros(lib.titop_workspace(self.n, self._ints.ctypes.data))
        # the call's buffers, and its arguments converted once (a conversion per call cost
        # twice the kernel's own time on one block)
        self.y = np.zeros(sum(e.block.n_states for e in entries))
        self.ydot, self.out = np.zeros_like(self.y), np.zeros(n_outputs)
        self._fn = lib["titop_evaluate"]            # a function object of its own: no argtypes
        self._fn.restype = ctypes.c_int
        head = (ctypes.c_int(self.n), *(ctypes.c_void_p(a.ctypes.data) for a in (self._ints, self._par)),
                ctypes.c_void_p(ctypes.addressof(self._ptrs)), ctypes.c_void_p(self._ws.ctypes.data),
                ctypes.c_void_p(self.y.ctypes.data))
        self._rhs_args = head + (ctypes.c_void_p(self.ydot.ctypes.data), ctypes.c_void_p(None))
        self._out_args = head + (ctypes.c_void_p(None), ctypes.c_void_p(self.out.ctypes.data))
        self._both_args = head + (ctypes.c_void_p(self.ydot.ctypes.data), ctypes.c_void_p(self.out.ctypes.data))
        # titop_step: dopri5's tableau, its scratch, the step-size guess in and out
        self._step = lib["titop_step"]
        self._step.restype = ctypes.c_int
        n = len(self.y)
        self._h, self._K, self._xi = np.zeros(1), np.zeros(7 * n), np.zeros(n)
        self._tableau = (np.ascontiguousarray(integrators._A), np.ascontiguousarray(integrators._E))
        self._step_head = head[:5] + (ctypes.c_int(n), head[5])
        self._step_tail = (ctypes.c_void_p(self._h.ctypes.data), ctypes.c_int(integrators.MAX_STEPS),
                           *(ctypes.c_void_p(a.ctypes.data) for a in (*self._tableau, self._K, self._xi)))

    def step(self, y, h, rtol, atol, h_guess):
        """``(y after h, next step-size guess, code)``: :func:`~titop_fmu.integrators.dopri5`
        over ``h`` from ``y`` (code as ``titop_step`` returns it)."""
        np.copyto(self.y, y)
        self._h[0] = h_guess or 0.0
        code = self._step(*self._step_head, ctypes.c_double(h), ctypes.c_double(rtol), ctypes.c_double(atol),
                          *self._step_tail)
        return self.y.copy(), float(self._h[0]), code

    def derivatives(self, y):
        """``(ydot, code)`` at the states ``y``; code 0, or 1 (the loop is singular), 2 (its
        solution is not finite)."""
        np.copyto(self.y, y)
        code = self._fn(*self._rhs_args)
        return self.ydot.copy(), code

    def outputs(self, y):
        """``(every block's outputs, code)`` at the states ``y`` (``titop_evaluate``'s order)."""
        np.copyto(self.y, y)
        code = self._fn(*self._out_args)
        return self.out.copy(), code

    def derivatives_and_outputs(self, y):
        """``(ydot, outputs, code)`` at the states ``y``, in one call."""
        np.copyto(self.y, y)
        code = self._fn(*self._both_args)
        return self.ydot.copy(), self.out.copy(), code


def plan_entries(plan) -> list:
    """The kernel's :class:`_Entry` s of a checked :class:`~titop_fmu.system.System` plan, in
    its order: constant inputs are the system's own value arrays (read through pointers, so
    that :meth:`~titop_fmu.system.System.set_input`, which changes them in place, is seen)."""
    system = plan.system
    index = {n: i for i, n in enumerate(plan.order)}
    entries = []
    for n in plan.order:
        b = system.blocks[n]
        parents = [system.values[(n, f"{p}.m")] if isinstance(src, np.ndarray) else
                   (index[src[0]], system.blocks[src[0]].child_ports.index(src[1][:-2]))
                   for p, src in plan.wiring[n].kin]            # per parent port: linked, or given
        children = []
        for c in b.child_ports:
            j = plan.child_link.get((n, c))
            children.append(index[system.links[j].child] if j is not None else system.values[(n, f"{c}.w")])
        entries.append(_Entry(n, b, plan.state_slices[n].start, parents, children,
                              *_extra(b, lambda e: system.values.get((n, e)))))
    return entries


class CompiledRHS:
    """The right-hand side of a checked :class:`~titop_fmu.system.System` plan on the C
    kernel, and every block's outputs; :class:`KernelUnavailable` when a block is not covered.

    The constant inputs are read through pointers to the system's values, which
    :meth:`~titop_fmu.system.System.set_input` changes in place."""

    def __init__(self, plan):
        system = plan.system
        self._tree = _Tree(plan_entries(plan), sum(sum(system.blocks[n].outputs_spec.values()) for n in plan.order))

    def __call__(self, y):
        """``(ydot, code)``: code 0, or 1 (the loop is singular), 2 (its solution is not finite)."""
        return self._tree.derivatives(y)

    def outputs(self, y):
        """``(outputs, code)``: every block's outputs (blocks in the plan's order, each one's in
        its ``outputs_spec`` order) at the states ``y``; code as :meth:`__call__`'s."""
        return self._tree.outputs(y)

    def derivatives_and_outputs(self, y):
        """``(ydot, outputs, code)``: :meth:`__call__` and :meth:`outputs` in one call."""
        return self._tree.derivatives_and_outputs(y)


def block_entry(block, view: dict) -> _Entry:
    """The kernel's tree of one block whose inputs are the arrays ``view[input name]``."""
    ext, tau = _extra(block, view.get)
    return _Entry("block", block, 0, parents=[view[f"{p}.m"] for p in block.parent_ports],
                  children=[view[f"{c}.w"] for c in block.child_ports], ext=ext, tau=tau)


class BlockKernel:
    """One block's state derivatives and outputs on the C kernel, for inputs ``u`` laid out
    as ``slices`` says (``{input name: slice}``, a unit's): what
    :class:`~titop_fmu.unit.BlockUnit` computes, to rounding. :class:`KernelUnavailable`
    when the block is not covered."""

    def __init__(self, block, slices: dict, n_outputs: int):
        self.u = np.zeros(max((s.stop for s in slices.values()), default=0))      # read by the kernel
        self._tree = _Tree([block_entry(block, {n: self.u[s] for n, s in slices.items()})], n_outputs)

    def derivatives(self, x):
        """``xdot`` at the states ``x`` and the inputs in :attr:`u`."""
        xdot, code = self._tree.derivatives(x)
        if code:
            raise _error(code)
        return xdot

    def outputs(self, x):
        """All outputs (the unit's order) at the states ``x`` and the inputs in :attr:`u`."""
        out, code = self._tree.outputs(x)
        if code:
            raise _error(code)
        return out

    def step(self, x, h, rtol, atol, h_guess):
        """``(x after h, next step-size guess)``: :func:`~titop_fmu.integrators.dopri5` of
        :meth:`derivatives` over ``h``, in C."""
        x, h_next, code = self._tree.step(x, h, rtol, atol, h_guess)
        if code:
            raise _error(code)
        return x, h_next


def _error(code):
    return KernelError({1: "the block's joint acceleration is singular",
                        2: "the block's accelerations are not finite",
                        3: "non-finite state derivative during a step",
                        4: "step size underflow (below 1e-14 of the step) in a communication step",
                        5: f"more than {integrators.MAX_STEPS} internal steps in one communication step"}[code])
