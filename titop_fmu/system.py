"""In-process ("monolithic") TITOP systems: blocks wired port to port, the
algebraic loop solved exactly, all states integrated together.

The wiring of a TITOP block diagram links a child port ``A.ci`` (wrench in,
motion out) to a parent port ``B.p`` (motion in, wrench out). Per link the
loop unknowns are the spatial acceleration that flows down and the wrench
that flows up (12 numbers). At a given state every block is affine in them
(:meth:`~titop_fmu.blocks.base.Block.accelerations`), so the loop is linear
and is solved exactly, in one of two ways:

* ``solver="recursive"`` (default), O(N): the links form a tree (a loop
  closure has no acceleration feedthrough, so it cuts its loop), and the
  wrench a block sends to its parent is an affine function of the parent's
  acceleration, ``W = K a + k`` (the block's inverse model loaded by its
  subtree: ``-K`` is the articulated inertia). These maps are condensed from
  the leaves to the roots, each block evaluated on a batch of a few columns,
  then the accelerations are propagated from the roots to the leaves: the
  articulated-body algorithm in TITOP's own terms;
* ``solver="dense"``, O(N^2) to O(N^3): the blocks are evaluated once on a
  batch ``[0, I]`` of all the unknowns, which gives the loop map
  ``z -> A z + b``, and ``(1 - A) z = b`` is solved. Any wiring; kept as the
  tests' oracle of the recursive solve.

This run has no coupling error and is the ground truth for the co-simulation
master.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .blocks.base import Block, col
from .cosim.numerics import single_threaded_blas
from .errors import ConnectionError_, SolverError, did_you_mean
from .loop_solve import DenseLoop, NotFinite, RecursiveLoop, Wiring, not_finite, singular
from .topology import tree_order


@dataclass(frozen=True)
class Link:
    parent: str        # block owning the child port
    child_port: str    # e.g. "c1"
    child: str         # block owning the parent port
    parent_port: str   # e.g. "p"


class System:
    """A tree (plus loop-closure blocks) of TITOP blocks.

    >>> s = System()
    >>> s.add("base", FloatingBase(RigidBody(10, np.eye(3), children=[[0, -1, 0]])))
    >>> s.add("arm", RevoluteBody(RigidBody(1, com=[0, -1, 0])))
    >>> s.link("base.c1", "arm.p")
    >>> s.set_input("base.ext.w", [0, 9.81 * 11, 0, 0, 0, 0])

    ``solver``: how the algebraic loop is solved, ``"recursive"`` (O(N), a tree
    plus loop closures) or ``"dense"`` (any wiring); see the module docstring.
    """

    SOLVERS = ("recursive", "dense")

    def __init__(self, solver: str = "recursive"):
        if solver not in self.SOLVERS:
            raise ValueError(f"solver must be one of {self.SOLVERS}, got {solver!r}")
        self.solver = solver
        self.blocks: dict[str, Block] = {}
        self.links: list[Link] = []
        self.values: dict[tuple[str, str], np.ndarray] = {}
        self._plan = None

    # -- building ------------------------------------------------------------
    def add(self, name: str, block: Block) -> str:
        if not name or "." in name or name in self.blocks:
            raise ConnectionError_(f"block name {name!r} is empty, contains '.' or is already used")
        if not isinstance(block, Block):
            raise TypeError(f"{name}: {block!r} is not a TITOP block")
        self.blocks[name] = block
        self._plan = None
        return name

    def _split(self, ref: str):
        name, _, port = ref.partition(".")
        if name not in self.blocks:
            raise ConnectionError_(f"unknown block {name!r} in {ref!r}{did_you_mean(name, self.blocks)}; blocks: "
                                   f"{sorted(self.blocks)}")
        return name, port

    def link(self, child_port: str, parent_port: str):
        """Link the child port ``"A.ci"`` of a block to the parent port ``"B.p"`` of another
        (``"B"`` alone means ``"B.p"``). ``A.ci.m`` feeds ``B.p.m`` and ``B.p.w`` feeds ``A.ci.w``."""
        a, cport = self._split(child_port)
        b, pport = self._split(parent_port)
        pport = pport or "p"
        if cport not in self.blocks[a].child_ports:
            raise ConnectionError_(f"{a!r} has no child port {cport!r}{did_you_mean(cport, self.blocks[a].child_ports)}"
                                   f"; it has {self.blocks[a].child_ports}")
        if pport not in self.blocks[b].parent_ports:
            raise ConnectionError_(f"{b!r} has no parent port {pport!r}{did_you_mean(pport, self.blocks[b].parent_ports)}"
                                   f"; it has {self.blocks[b].parent_ports}")
        for link in self.links:
            if (link.parent, link.child_port) == (a, cport):
                raise ConnectionError_(f"child port {a}.{cport} is already connected")
            if (link.child, link.parent_port) == (b, pport):
                raise ConnectionError_(f"parent port {b}.{pport} is already connected")
        self.links.append(Link(a, cport, b, pport))
        self._plan = None

    def set_input(self, ref: str, value):
        """Give an unconnected input a constant value, e.g. ``"base.ext.w"``, ``"arm.joint.tau"``,
        or a free child port's wrench ``"arm.c1.w"``."""
        name, port = self._split(ref)
        spec = self.blocks[name].inputs
        if port not in spec:
            raise ConnectionError_(f"{name!r} has no input {port!r}{did_you_mean(port, spec)}; inputs: {sorted(spec)}")
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (spec[port],):
            raise ConnectionError_(f"input {ref} takes {spec[port]} values, got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ConnectionError_(f"input {ref} must be finite, got {v.tolist()}")
        old = self.values.get((name, port))
        if old is not None:             # the compiled plan holds views of it: changed in place
            old[:] = v
            return
        self.values[(name, port)] = v.copy()
        self._plan = None

    # -- compiled structure ----------------------------------------------------
    def plan(self):
        """Check the wiring and lay out states and loop unknowns (cached)."""
        if self._plan is None:
            self._plan = _Plan(self)
        return self._plan

    def initial_state(self) -> np.ndarray:
        p = self.plan()
        return np.concatenate([self.blocks[n].initial_state() for n in p.order] or [np.zeros(0)])

    def state_slice(self, name: str) -> slice:
        return self.plan().state_slices[name]

    def state_names(self) -> list:
        """``block.state`` of every state, in state order (a base's quaternion ``q_w .. q_z``)."""
        return [f"{n}.{s}" for n in self.plan().order for s in self.blocks[n].state_names]

    def diverged(self, t, y, what: str = "the state derivatives are not finite") -> SolverError:
        """The error of a run stopped at ``t`` by ``what``, naming the state of ``y`` that is not
        finite, else the largest: ``unit.state = value``."""
        names = self.state_names()
        bad = np.flatnonzero(~np.isfinite(y))
        j = bad[0] if bad.size else int(np.argmax(np.abs(y)))
        return SolverError(f"the run stopped at t = {t:.6g} s: {what}; {'' if bad.size else 'the largest state: '}"
                           f"{names[j]} = {y[j]:.6g}")

    def finite_rhs(self, rhs):
        """``rhs(t, y)`` that stops the run (:meth:`diverged`) when the state or its derivative
        is not finite; its ``last`` holds the last ``(t, y)`` it was given."""
        def f(t, y):
            f.last = t, y
            try:
                ydot = rhs(t, y)
            except NotFinite:
                ydot = None
            if ydot is None or not (np.all(np.isfinite(y)) and np.all(np.isfinite(ydot))):
                raise self.diverged(t, y)
            return ydot
        f.last = 0.0, np.zeros(0)
        return f

    # -- evaluation --------------------------------------------------------------
    def evaluate(self, y):
        """Kinematics and solved acceleration stage of every block at the state ``y``."""
        return self.plan().evaluate(y)

    def rhs(self, t, y):
        p = self.plan()
        kins, accs = p.evaluate(y, t)
        ydot = np.empty_like(y)
        for n in p.order:
            s = p.state_slices[n]
            ydot[s] = self.blocks[n].derivatives(y[s], kins[n], accs[n])
        return ydot

    def outputs(self, y) -> dict:
        """``{block: {output: value}}`` at the state ``y`` (the loop solved)."""
        p = self.plan()
        kins, accs = p.evaluate(y)
        return {n: self.blocks[n].assemble_outputs(y[p.state_slices[n]], kins[n], accs[n]) for n in p.order}

    def compiled_rhs(self):
        """:meth:`rhs` on the C kernel (:mod:`titop_fmu.kernel`, the same equations, equal to
        rounding); :class:`~titop_fmu.kernel.KernelUnavailable` says why it cannot run."""
        return self.plan().compiled_rhs()

    def outputs_at(self, ys, ports=None, kernel: str = "auto") -> dict:
        """``{block: {output: (n, size) array}}``: :meth:`outputs` at the ``n`` states ``ys``
        (``(n, n_states)``), only the ``(block, output)`` pairs ``ports`` if given, on the C
        kernel (all blocks' outputs in one call per state) or on the NumPy blocks as ``kernel``
        asks (as in :meth:`simulate`); equal to rounding."""
        ys = np.atleast_2d(np.asarray(ys, dtype=float))
        plan = self.plan()
        ports = [(n, o) for n in plan.order for o in self.blocks[n].outputs_spec] if ports is None else list(ports)
        f = self._on_kernel(kernel, plan.compiled_outputs)
        if f is not None:
            return f(ys, ports)
        rows = [self.outputs(y) for y in ys]
        table = {}
        for n, o in ports:
            table.setdefault(n, {})[o] = np.reshape([r[n][o] for r in rows], (len(ys), -1))
        return table

    def _on_kernel(self, kernel: str, compiled):
        """``compiled()`` (a function on the C kernel) if ``kernel`` (``"auto"``, ``"c"`` or
        ``"numpy"``) asks for it and it can run this system here; None for the NumPy blocks.
        ``"c"`` raises why it cannot: :class:`~titop_fmu.kernel.KernelUnavailable`, or a
        ``ValueError`` for the dense solver."""
        if kernel not in ("auto", "c", "numpy"):
            raise ValueError(f"kernel must be 'auto', 'c' or 'numpy', got {kernel!r}")
        if kernel != "numpy" and self.solver == "recursive":
            from .kernel import KernelUnavailable
            try:
                return compiled()
            except KernelUnavailable:
                if kernel == "c":
                    raise
        elif kernel == "c":
            raise ValueError(f"the C kernel solves the loop recursively: not with solver={self.solver!r}")
        return None

    def right_hand_side(self, kernel: str = "auto") -> tuple:
        """``(f(t, y), "c" or "numpy")``: :meth:`rhs` on the C kernel or the NumPy blocks, as
        ``kernel`` asks (:meth:`simulate`'s)."""
        fun = self._on_kernel(kernel, self.compiled_rhs)
        return (self.rhs, "numpy") if fun is None else (fun, "c")

    def simulate(self, t_stop: float, dt: float = 0.01, rtol: float = 1e-11, atol: float = 1e-11,
                 method: str = "DOP853", progress: bool = False, y0=None, kernel: str = "auto"):
        """Integrate all states together (scipy ``solve_ivp``) and sample every ``dt`` and at ``t_stop``.

        Returns a :class:`Trajectory`. ``progress=True`` shows a progress bar on
        runs that last more than a second. ``kernel``: the right-hand side on the C
        kernel (``"c"``), on the NumPy blocks (``"numpy"``), or on the kernel when it
        can run this system here (``"auto"``; :attr:`Trajectory.kernel` says which ran).
        """
        t_eval = output_grid(t_stop, dt)
        y0 = self.initial_state() if y0 is None else np.asarray(y0, dtype=float)
        fun, used = self.right_hand_side(kernel)
        fun = checked = self.finite_rhs(fun)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=float(t_eval[-1]), delay=1.0, unit="s(sim)", bar_format=(
                "{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]"))

            def fun(t, y, _rhs=fun):
                if t - bar.n >= 1e-9 * bar.total:     # no rate so small that the time left overflows
                    bar.update(t - bar.n)
                return _rhs(t, y)
        from scipy.integrate import solve_ivp     # here: importing it takes 0.4 s, the FMU runs never need it

        start = time.perf_counter()
        try:
            # BLAS on one thread: the matrices are 6x6 to 12 N, where threads cost more than they
            # give, and under CPU contention a multithreaded BLAS made one RHS 80 times slower;
            # overflows are no warnings: a state or derivative not finite stops the run, said once
            with single_threaded_blas(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                sol = solve_ivp(fun, (0.0, t_eval[-1]), y0, method=method, t_eval=t_eval,
                                rtol=rtol, atol=atol)
            if bar is not None and sol.status == 0:
                bar.update(bar.total - bar.n)               # the last evaluation may stop short of it
        finally:
            if bar is not None:
                bar.close()
        if sol.status != 0:
            raise self.diverged(*checked.last, f"the integration failed ({sol.message})")
        return Trajectory(self, sol.t, sol.y.T, nfev=sol.nfev, wall=time.perf_counter() - start, kernel=used)


def output_grid(t_stop: float, dt: float) -> np.ndarray:
    """The output rows' times: every ``dt`` from 0, and ``t_stop`` (the last row even when
    ``t_stop`` is not a multiple of ``dt``)."""
    if not (t_stop > 0 and dt > 0):
        raise ValueError(f"need t_stop > 0 and dt > 0, got {t_stop}, {dt}")
    n = int(round(t_stop / dt))
    n -= n * dt > t_stop * (1 + 1e-12)                  # the grid stops at t_stop ...
    t_eval = np.linspace(0.0, n * dt, n + 1)
    if t_stop - n * dt > 1e-9 * dt:                     # ... and includes it
        t_eval = np.append(t_eval, t_stop)
    return t_eval


@dataclass
class Trajectory:
    system: System
    t: np.ndarray
    y: np.ndarray       # (len(t), n_states)
    nfev: int
    wall: float
    kernel: str = "numpy"       # the right-hand side that ran: "c" (the C kernel) or "numpy"

    def states(self, block: str) -> np.ndarray:
        return self.y[:, self.system.state_slice(block)]


class _Plan:
    """Checked wiring of a :class:`System`: evaluation order, state layout, the sources of
    every block's inputs, and the solve of the algebraic loop."""

    def __init__(self, system: System):
        self.system = system
        blocks = system.blocks
        if not blocks:
            raise ConnectionError_("the system has no block")
        self.parent_link = {(l.child, l.parent_port): j for j, l in enumerate(system.links)}
        self.child_link = {(l.parent, l.child_port): j for j, l in enumerate(system.links)}
        self.order = self._topological_order()      # first: a cycle leaves ports free that are not the problem
        missing = []
        for n, b in blocks.items():
            for p in b.parent_ports:
                if (n, p) not in self.parent_link and (n, f"{p}.m") not in system.values:
                    missing.append(f"{n}.{p} (parent port: connect it to a child port)")
            for c in b.child_ports:
                if (n, c) not in self.child_link and (n, f"{c}.w") not in system.values:
                    missing.append(f"{n}.{c} (child port: connect it, or set {n}.{c}.w for a free end)")
        if missing:
            raise ConnectionError_("dangling port(s): " + ", ".join(missing))
        offset = 0
        self.state_slices = {}
        for n in self.order:
            k = blocks[n].n_states
            self.state_slices[n] = slice(offset, offset + k)
            offset += k
        self.n_states = offset
        self.wiring = {n: self._wiring(n) for n in self.order}
        # per block: its motion inputs, constant or (source block, "ci.m"), split once
        self.kinematics_steps = [
            (n, blocks[n], self.state_slices[n],
             {p: src for p, src in self.wiring[n].kin if isinstance(src, np.ndarray)},
             [(p, src) for p, src in self.wiring[n].kin if not isinstance(src, np.ndarray)])
            for n in self.order]
        if system.solver == "dense":
            self.loop = DenseLoop(self)
        else:
            self.loop = RecursiveLoop(self)
        self._compiled = None

    def kernel(self):
        """The plan on the C kernel (:class:`~titop_fmu.kernel.CompiledRHS`, built once)."""
        if self._compiled is None:
            from .kernel import CompiledRHS
            self._compiled = CompiledRHS(self)
        return self._compiled

    def compiled_rhs(self):
        """``f(t, y) -> ydot`` on the C kernel."""
        k = self.kernel()

        def f(t, y):
            ydot, code = k(y)
            if code:
                raise (singular if code == 1 else not_finite)(t)
            return ydot
        return f

    def compiled_outputs(self):
        """``f(ys, ports)``: :meth:`System.outputs_at` on the C kernel, each state's outputs of
        all blocks in one call (blocks in :attr:`order`, each one's in its ``outputs_spec``
        order), the columns of ``ports`` kept."""
        k, where, start = self.kernel(), {}, 0
        for n in self.order:
            for o, size in self.system.blocks[n].outputs_spec.items():
                where[n, o] = np.arange(start, start + size)
                start += size

        def f(ys, ports):
            cut = [where[p] for p in ports]
            columns = np.concatenate(cut) if cut else np.zeros(0, dtype=int)
            values = np.empty((len(ys), len(columns)))
            for i, y in enumerate(ys):
                out, code = k.outputs(y)
                if code:
                    raise (singular if code == 1 else not_finite)(None)
                values[i] = out[columns]
            table, start = {}, 0
            for (n, o), c in zip(ports, cut):
                table.setdefault(n, {})[o] = values[:, start:start + len(c)]
                start += len(c)
            return table
        return f

    def _wiring(self, n):
        """Where the inputs of block ``n`` come from: ``kin``, ``(port, (source block, "ci.m")
        or constant 18-vector)`` per parent port; ``const``, the constant acceleration-level
        inputs as columns; ``up`` and ``down``, ``(port, link index)`` of its linked parent
        and child ports."""
        b, links, values = self.system.blocks[n], self.system.links, self.system.values
        kin, const, up, down = [], {}, [], []
        for p in b.parent_ports:
            j = self.parent_link.get((n, p))
            if j is None:
                m = values[(n, f"{p}.m")]
                kin.append((p, m))
                const[f"{p}.a"] = col(m[0:6])
            else:
                kin.append((p, (links[j].parent, f"{links[j].child_port}.m")))
                up.append((p, j))
        for c in b.child_ports:
            j = self.child_link.get((n, c))
            if j is None:
                const[f"{c}.w"] = col(values[(n, f"{c}.w")])
            else:
                down.append((c, j))
        for e, size in b.extra_inputs.items():
            const[e] = col(values.get((n, e), np.zeros(size)))
        return Wiring(kin, const, up, down)

    def _topological_order(self):
        children = {n: [] for n in self.system.blocks}
        for link in self.system.links:
            children[link.parent].append(link.child)
        return tree_order(children, what="motion links",
                          hint="close kinematic loops with a LoopClosure block instead")

    def evaluate(self, y, t=None):
        """``(kins, accs)``: every block's kinematics (parents first) and its solved
        acceleration stage (1-D arrays)."""
        kins = {}
        for n, block, states, constant, linked in self.kinematics_steps:
            m_par = dict(constant)
            for p, (source, port) in linked:
                m_par[p] = kins[source].m_out[port]
            kins[n] = block.kinematics(y[states], m_par)
        return kins, self.loop.solve(kins, t)
