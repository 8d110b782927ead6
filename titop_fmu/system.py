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
from .spatial import tau
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
        fun = self._on_kernel(kernel, self.compiled_rhs)
        fun, used = (self.rhs, "numpy") if fun is None else (fun, "c")
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=float(t_eval[-1]), delay=1.0, unit="s(sim)", bar_format=(
                "{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]"))

            def fun(t, y, _rhs=fun):
                if t > bar.n:
                    bar.update(t - bar.n)
                return _rhs(t, y)
        from scipy.integrate import solve_ivp     # here: importing it takes 0.4 s, the FMU runs never need it

        start = time.perf_counter()
        try:
            # BLAS on one thread: the matrices are 6x6 to 12 N, where threads cost more than they
            # give, and under CPU contention a multithreaded BLAS made one RHS 80 times slower
            with single_threaded_blas():
                sol = solve_ivp(fun, (0.0, t_eval[-1]), y0, method=method, t_eval=t_eval,
                                rtol=rtol, atol=atol)
            if bar is not None and sol.status == 0:
                bar.update(bar.total - bar.n)               # the last evaluation may stop short of it
        finally:
            if bar is not None:
                bar.close()
        if sol.status != 0:
            raise SolverError(f"integration failed at t={sol.t[-1] if sol.t.size else 0.0}: {sol.message}")
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
            self.loop = _DenseLoop(self)
        else:
            self.loop = _RecursiveLoop(self)
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
                raise (_singular if code == 1 else _not_finite)(t)
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
                    raise (_singular if code == 1 else _not_finite)(None)
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
        return _Wiring(kin, const, up, down)

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


@dataclass(frozen=True)
class _Wiring:
    kin: list       # (parent port, (source block, "ci.m") or constant 18-vector)
    const: dict     # acceleration-level input -> constant (n, 1) column
    up: list        # (parent port, link index) of the linked parent ports
    down: list      # (child port, link index) of the linked child ports


def _at(V, z):
    """The value at the inputs ``z`` of an output ``V`` evaluated on the batch ``[0, I]``:
    ``b + L z`` with ``b = V[:, 0]``, ``L = V[:, 1:] - b`` (one column: no dependence).

    ``L`` is formed before the product: an output that does not depend on an input
    then has an exact zero there. ``V [1 - sum(z); z]``, one product, adds
    ``b z_i - b z_i`` rounding terms for every input (measured: 1e-11 instead of
    2e-15 relative between the two solves on a 64-body chain)."""
    if V.shape[1] == 1:
        return V[:, 0]
    return V[:, 0] + (V[:, 1:] - V[:, 0:1]).dot(z)


def _affine(acc):
    """``{output: (b, L)}``: each output of a block evaluated on the batch ``[0, I]`` as
    ``b + L z`` (``L`` None: it does not depend on ``z``), ``L`` formed as in :func:`_at`."""
    return {k: (V[:, 0], V[:, 1:] - V[:, 0:1] if V.shape[1] > 1 else None) for k, V in acc.items()}


_EMPTY = np.zeros(0)


def _singular(t):
    return SolverError(f"the algebraic loop is singular (t={t}): check for bodies without "
                       "mass or inertia along a joint")


def _not_finite(t):
    return SolverError(f"the algebraic loop solution is not finite (t={t})")


class _DenseLoop:
    """The loop solved as one dense linear system over all the links' unknowns: blocks
    evaluated on the batch ``[0, I]`` of the 12 unknowns per link, ``(1 - A) z = b``."""

    def __init__(self, plan: _Plan):
        self.plan = plan
        n = 12 * len(plan.system.links)
        self.batch = np.hstack([np.zeros((n, 1)), np.eye(n)])
        self.identity = np.eye(n)

    def solve(self, kins, t):
        plan, blocks = self.plan, self.plan.system.blocks
        Z = self.batch
        Y = np.empty_like(Z)
        raw = {}
        for n in plan.order:
            w = plan.wiring[n]
            u = dict(w.const)
            u.update({f"{p}.a": Z[12 * j:12 * j + 6] for p, j in w.up})
            u.update({f"{c}.w": Z[12 * j + 6:12 * j + 12] for c, j in w.down})
            acc = raw[n] = blocks[n].accelerations(kins[n], u)
            for p, j in w.up:
                Y[12 * j + 6:12 * j + 12] = acc[f"{p}.w"]
            for c, j in w.down:
                Y[12 * j:12 * j + 6] = acc[f"{c}.a"]
        z = np.zeros(0)
        if len(Z):
            b0 = Y[:, 0]
            try:
                z = np.linalg.solve(self.identity - (Y[:, 1:] - b0[:, None]), b0)
            except np.linalg.LinAlgError:
                raise _singular(t) from None
            if not np.all(np.isfinite(z)):
                raise _not_finite(t)
        return {n: {k: _at(v, z) for k, v in acc.items()} for n, acc in raw.items()}


class _Node:
    """What the recursive solve keeps of a block: its linked ports, its inputs on the
    batch ``[0, I]`` of ``z = [a_p; w_1..w_c]`` (``n_a`` = 6 components of ``a_p``, or 0
    for a root, or 6 per parent port of a loop closure) and the output names it passes on."""

    def __init__(self, name, block, wiring: _Wiring):
        self.name, self.block = name, block
        self.up = wiring.up
        self.down = [(f"{c}.a", j) for c, j in wiring.down]
        self.wrench = [(f"{p}.w", j) for p, j in wiring.up]
        # several linked children of a block that reads their wrenches as one sum: ``w`` is
        # the one wrench at the first's port that gives that sum, and ``T[i]`` brings that
        # port's acceleration to child i's, ``a_i = T_i a_1`` (:meth:`_RecursiveLoop._condense`)
        self.T = None
        if len(wiring.down) > 1 and block.children_through_sum:
            tau_c = dict(zip(block.child_ports, block.body.tau_c))
            PC = dict(zip(block.child_ports, block.body.children))
            first = tau(PC[wiring.down[0][0]])                          # tau_C1P^-1 = tau_PC1
            self.T = [tau_c[c].dot(first) for c, _ in wiring.down]
        self.n_a, n_w = 6 * len(wiring.up), 6 if self.T else 6 * len(wiring.down)
        Z = np.hstack([np.zeros((self.n_a + n_w, 1)), np.eye(self.n_a + n_w)])
        self.inputs = dict(wiring.const)
        for i, (p, _) in enumerate(wiring.up):
            self.inputs[f"{p}.a"] = Z[6 * i:6 * i + 6]
        for i, (c, _) in enumerate(wiring.down):
            if self.T and i:                                            # gathered into the first's
                self.inputs[f"{c}.w"] = np.zeros((6, Z.shape[1]))
            else:
                self.inputs[f"{c}.w"] = Z[self.n_a + 6 * i:self.n_a + 6 * i + 6]
        self.identity = np.eye(n_w)


class _RecursiveLoop:
    """The loop solved in O(N) over the tree of links.

    Upward pass (children first): block ``n``, of inputs ``z = [a_p; w]`` (its
    parent's spatial acceleration at the joint, the wrenches of its linked children),
    is evaluated on the batch ``[0, I]`` of ``z``. Each child ``i`` already gave its
    wrench as ``w_i = K_i a_i + k_i`` of the acceleration ``a_i`` that ``n`` sends
    it, and ``a_i`` is an output of ``n`` (``x'dot_Ci = tau_CiP x'dot_P``, eq. (23),
    with the joint acceleration of eq. (22) or eq. (28) that depends on ``w``): so the
    children's wrenches are affine in ``z``, ``w = g + G_a a_p + G_w w``, solved for
    ``w = M a_p + m`` (:func:`_condense`). Put into ``n``'s own wrench on its parent
    (eq. (15), eq. (18) or eq. (29), the children's wrenches transported by eq. (13)), it gives
    ``n``'s map ``W_p = K a_p + k`` (:func:`_parent_map`). A block with several linked
    parent ports (a loop closure) must not feed accelerations through: its wrenches
    are constants ``k`` and it cuts its loop.

    Downward pass (parents first): ``a_p`` from the parent, ``w = M a_p + m``, and
    every output of ``n`` at ``z``.

    A TITOP body reads its children's wrenches only as their sum at its point (eq.
    (13)): its linked children are condensed as one wrench at one port (:meth:`_condense`),
    so a block costs the same with 2 children or 64, and the solve is O(N) on any tree.
    """

    def __init__(self, plan: _Plan):
        try:                                        # here, not with the module (as solve_ivp)
            from scipy.linalg.lapack import dgesv
        except ImportError:                         # an assembly FMU in a process without scipy
            dgesv = _gesv
        self.solve_linear = dgesv
        self.nodes = []
        for n in plan.order:
            w = plan.wiring[n]
            if len(w.up) > 1 and w.down:
                raise ConnectionError_(
                    f"{n!r} has several linked parent ports and linked child ports: the links do "
                    "not form a tree; use System(solver='dense')")
            self.nodes.append(_Node(n, plan.system.blocks[n], w))

    def solve(self, kins, t):
        maps = {}          # link -> (K, k): wrench the child sends up, W = K a + k (K None: 0)
        raw, cond = {}, {}
        for node in reversed(self.nodes):                                  # leaves to roots
            acc = raw[node.name] = _affine(node.block.accelerations(kins[node.name], node.inputs))
            if len(node.up) > 1:                                           # loop closure
                for key, j in node.wrench:
                    b, L = acc[key]
                    if L is not None and np.any(L):
                        raise SolverError(
                            f"{node.name!r} has several linked parent ports and feeds accelerations "
                            "through to its wrenches: the loop is not a tree; use "
                            "System(solver='dense')")
                    maps[j] = (None, b)
                continue
            M = m = None
            if node.down:
                M, m = cond[node.name] = self._condense(node, acc, maps, t)
            for key, j in node.wrench:
                maps[j] = _parent_map(acc[key], M, m)
        accs, a_link, check = {}, {}, 0.0
        for node in self.nodes:                                            # roots to leaves
            z = [a_link[j] for _, j in node.up]
            if node.down:
                M, m = cond[node.name]
                z.append(m if M is None else m + M.dot(z[0]))
            z = z[0] if len(z) == 1 else np.concatenate(z) if z else _EMPTY
            check += z.sum()
            out = accs[node.name] = {k: b if L is None else b + L.dot(z) for k, (b, L) in raw[node.name].items()}
            for key, j in node.down:
                a_link[j] = out[key]
        if not np.isfinite(check):
            raise _not_finite(t)
        return accs

    def _condense(self, node, acc, maps, t):
        """``(M, m)``: the wrenches of a block's linked children as ``w = M a_p + m`` of its
        parent acceleration ``a_p`` (``M`` None for a root).

        The block's batch outputs give the acceleration ``a_i`` it sends to child ``i``,
        affine in ``z = [a_p; w]``; the child's map gives ``w_i = K_i a_i + k_i``.
        Stacked, ``H = [g, G_a, G_w]``: ``w = g + G_a a_p + G_w w``, so
        ``(1 - G_w) [m, M] = [g, G_a]``.

        A block that reads its children's wrenches only as their sum at its point ``P``
        (``children_through_sum``; every TITOP body) and has several linked children is
        evaluated with one wrench ``w`` at the first child's port, the others zero: the one
        whose transport to ``P`` is that sum, ``tau_C1P^T w = sum_i tau_CiP^T w_i``. With
        ``a_i = T_i a_1``, ``T_i = tau_CiP tau_C1P^-1``, the children's maps add up to
        ``w = (sum_i T_i^T K_i T_i) a_1 + sum_i T_i^T k_i``: the articulated inertia of
        the children gathered at one port. A base with 64 children then costs 13 columns
        and a 6x6 solve instead of 391 columns and a 384x384 solve."""
        n_a = node.n_a
        H = np.zeros((len(node.identity), 1 + n_a + len(node.identity)), order="F")   # as LAPACK reads it
        children = [(i, node.down[i][0], maps[j]) for i, (_, j) in enumerate(node.down)]
        if node.T is not None:          # one wrench w at the first child's port: the sum of theirs,
            K1, k1 = None, 0.0          # tau_C1P^T w = sum_i tau_CiP^T (K_i T_i a_1 + k_i)
            for T, (_, _, (K, k)) in zip(node.T, children):
                k1 = k1 + T.T.dot(k)
                if K is not None:
                    K1 = T.T.dot(K).dot(T) + (0.0 if K1 is None else K1)
            children = [(0, node.down[0][0], (K1, k1))]
        for i, key, (K, k) in children:
            h = H[6 * i:6 * i + 6]
            if K is None:                              # a constant wrench (loop closure)
                h[:, 0] = k
                continue
            b, L = acc[key]
            h[:, 0] = K.dot(b) + k
            if L is not None:
                h[:, 1:] = K.dot(L)
        A = np.subtract(node.identity, H[:, 1 + n_a:], order="F")
        _, _, X, info = self.solve_linear(A, H[:, :1 + n_a], overwrite_a=1, overwrite_b=1)
        if info > 0:
            raise _singular(t)
        return (X[:, 1:] if n_a else None), X[:, 0]


def _gesv(a, b, overwrite_a=0, overwrite_b=0):
    """``(_, _, x, info)`` of ``a x = b`` as LAPACK's ``dgesv`` returns them, by numpy (for
    assembly FMUs, which run in hosts that may have numpy but not scipy)."""
    try:
        return None, None, np.linalg.solve(a, b), 0
    except np.linalg.LinAlgError:
        return None, None, None, 1


def _parent_map(W, M, m):
    """``(K, k)``: the wrench a block sends to its parent, ``W_p = K a_p + k`` (``K`` None:
    a constant), from its output ``W = b + L_a a_p + L_w w`` (:func:`_affine`) and its
    children's wrenches ``w = M a_p + m`` (``M`` None: no linked child)."""
    b, L = W
    if L is None:
        return None, b
    La, Lw = L[:, :6], L[:, 6:]
    if M is None:
        return La, b
    return La + Lw.dot(M), b + Lw.dot(m)
