"""In-process ("monolithic") TITOP systems: blocks wired port to port, the
algebraic loop solved exactly, all states integrated together.

The wiring of a TITOP block diagram links a child port ``A.ci`` (wrench in,
motion out) to a parent port ``B.p`` (motion in, wrench out). Per link the
loop unknowns are the spatial acceleration that flows down and the wrench
that flows up (12 numbers). At a given state every block is affine in them
(:meth:`~titop_fmu.blocks.base.Block.accelerations`), so the loop is one
linear solve: the blocks are evaluated once on a batch ``[0, I]`` of unknown
values, which gives the loop map ``z -> A z + b`` exactly, and
``(1 - A) z = b`` is solved. This run has no coupling error and is the ground
truth for the co-simulation master.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .blocks.base import Block, col
from .errors import ConnectionError_, SolverError


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
    """

    def __init__(self):
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
            raise ConnectionError_(f"unknown block {name!r} in {ref!r}; blocks: {sorted(self.blocks)}")
        return name, port

    def link(self, child_port: str, parent_port: str):
        """Link the child port ``"A.ci"`` of a block to the parent port ``"B.p"`` of another
        (``"B"`` alone means ``"B.p"``). ``A.ci.m`` feeds ``B.p.m`` and ``B.p.w`` feeds ``A.ci.w``."""
        a, cport = self._split(child_port)
        b, pport = self._split(parent_port)
        pport = pport or "p"
        if cport not in self.blocks[a].child_ports:
            raise ConnectionError_(f"{a!r} has no child port {cport!r}; it has {self.blocks[a].child_ports}")
        if pport not in self.blocks[b].parent_ports:
            raise ConnectionError_(f"{b!r} has no parent port {pport!r}; it has {self.blocks[b].parent_ports}")
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
            raise ConnectionError_(f"{name!r} has no input {port!r}; inputs: {sorted(spec)}")
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (spec[port],):
            raise ConnectionError_(f"input {ref} takes {spec[port]} values, got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ConnectionError_(f"input {ref} must be finite, got {v.tolist()}")
        self.values[(name, port)] = v
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

    def simulate(self, t_stop: float, dt: float = 0.01, rtol: float = 1e-11, atol: float = 1e-11,
                 method: str = "DOP853", progress: bool = False, y0=None):
        """Integrate all states together (scipy ``solve_ivp``) and sample every ``dt``.

        Returns a :class:`Trajectory`. ``progress=True`` shows a progress bar on
        runs that last more than a second.
        """
        if not (t_stop > 0 and dt > 0):
            raise ValueError(f"need t_stop > 0 and dt > 0, got {t_stop}, {dt}")
        n = int(round(t_stop / dt))
        t_eval = np.linspace(0.0, n * dt, n + 1)
        y0 = self.initial_state() if y0 is None else np.asarray(y0, dtype=float)
        fun = self.rhs
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=float(t_eval[-1]), delay=1.0, unit="s(sim)", bar_format=(
                "{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]"))

            def fun(t, y, _rhs=self.rhs):
                if t > bar.n:
                    bar.update(t - bar.n)
                return _rhs(t, y)
        from scipy.integrate import solve_ivp     # here: importing it takes 0.4 s, the FMU runs never need it

        start = time.perf_counter()
        try:
            sol = solve_ivp(fun, (0.0, t_eval[-1]), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol)
        finally:
            if bar is not None:
                bar.close()
        if sol.status != 0:
            raise SolverError(f"integration failed at t={sol.t[-1] if sol.t.size else 0.0}: {sol.message}")
        return Trajectory(self, sol.t, sol.y.T, nfev=sol.nfev, wall=time.perf_counter() - start)


@dataclass
class Trajectory:
    system: System
    t: np.ndarray
    y: np.ndarray       # (len(t), n_states)
    nfev: int
    wall: float

    def states(self, block: str) -> np.ndarray:
        return self.y[:, self.system.state_slice(block)]


class _Plan:
    """Checked wiring of a :class:`System`: evaluation order, state and unknown layout."""

    def __init__(self, system: System):
        self.system = system
        blocks = system.blocks
        if not blocks:
            raise ConnectionError_("the system has no block")
        self.parent_link = {(l.child, l.parent_port): j for j, l in enumerate(system.links)}
        self.child_link = {(l.parent, l.child_port): j for j, l in enumerate(system.links)}
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
        self.order = self._topological_order()
        offset = 0
        self.state_slices = {}
        for n in self.order:
            k = blocks[n].n_states
            self.state_slices[n] = slice(offset, offset + k)
            offset += k
        self.n_states = offset
        self.n_unknowns = 12 * len(system.links)
        self.batch = np.hstack([np.zeros((self.n_unknowns, 1)), np.eye(self.n_unknowns)])
        self.identity = np.eye(self.n_unknowns)
        self.wiring = {n: self._wiring(n) for n in self.order}

    def _wiring(self, n):
        """Where each input of block ``n`` comes from and where its loop outputs go.

        ``kin``: ``(port, (source block, "ci.m") or constant 18-vector)``;
        ``acc_in``: ``(name, rows of the unknowns or constant column)``;
        ``acc_out``: ``(name, rows of the unknowns)``.
        """
        b, links, values = self.system.blocks[n], self.system.links, self.system.values
        kin, acc_in, acc_out = [], [], []
        for p in b.parent_ports:
            j = self.parent_link.get((n, p))
            if j is None:
                m = values[(n, f"{p}.m")]
                kin.append((p, m))
                acc_in.append((f"{p}.a", col(m[0:6])))
            else:
                kin.append((p, (links[j].parent, f"{links[j].child_port}.m")))
                acc_in.append((f"{p}.a", slice(12 * j, 12 * j + 6)))
                acc_out.append((f"{p}.w", slice(12 * j + 6, 12 * j + 12)))
        for c in b.child_ports:
            j = self.child_link.get((n, c))
            if j is None:
                acc_in.append((f"{c}.w", col(values[(n, f"{c}.w")])))
            else:
                acc_in.append((f"{c}.w", slice(12 * j + 6, 12 * j + 12)))
                acc_out.append((f"{c}.a", slice(12 * j, 12 * j + 6)))
        for e, size in b.extra_inputs.items():
            acc_in.append((e, col(values.get((n, e), np.zeros(size)))))
        return kin, acc_in, acc_out

    def _topological_order(self):
        sysm = self.system
        deps = {n: set() for n in sysm.blocks}
        for l in sysm.links:
            deps[l.child].add(l.parent)
        order, done = [], set()
        while len(order) < len(deps):
            ready = [n for n in deps if n not in done and deps[n] <= done]
            if not ready:
                cyc = sorted(n for n in deps if n not in done)
                raise ConnectionError_(f"the motion links form a cycle through {cyc}; close kinematic "
                                       "loops with a LoopClosure block instead")
            for n in ready:
                order.append(n)
                done.add(n)
        return order

    def evaluate(self, y, t=None):
        blocks = self.system.blocks
        # 1. kinematic pass, parents first
        kins = {}
        for n in self.order:
            kin_src = self.wiring[n][0]
            m_par = {p: src if isinstance(src, np.ndarray) else kins[src[0]].m_out[src[1]]
                     for p, src in kin_src}
            kins[n] = blocks[n].kinematics(y[self.state_slices[n]], m_par)
        # 2. acceleration stage on the batch [0, I] of loop unknowns
        Z = self.batch
        Y = np.empty_like(Z)
        raw = {}
        for n in self.order:
            _, acc_in, acc_out = self.wiring[n]
            u = {k: Z[src] if isinstance(src, slice) else src for k, src in acc_in}
            acc = raw[n] = blocks[n].accelerations(kins[n], u)
            for k, rows in acc_out:
                Y[rows] = acc[k]
        # 3. the loop: z = A z + b, solved exactly
        if self.n_unknowns:
            b0 = Y[:, 0]
            try:
                z = np.linalg.solve(self.identity - (Y[:, 1:] - b0[:, None]), b0)
            except np.linalg.LinAlgError:
                raise SolverError(f"the algebraic loop is singular (t={t}): check for bodies without "
                                  "mass or inertia along a joint") from None
            if not np.all(np.isfinite(z)):
                raise SolverError(f"the algebraic loop solution is not finite (t={t})")
        accs = {n: {k: v[:, 0] + (v[:, 1:] - v[:, 0:1]) @ z if v.shape[1] > 1 else v[:, 0]
                    for k, v in acc.items()}
                for n, acc in raw.items()}
        return kins, accs
