"""Equilibria of a TITOP system (:func:`trim`): a state where every acceleration is zero,
found by Newton's method with exact Jacobians (:class:`~.linearize.Linearizer`).

The conditions are the *dynamic* rows of the minimal state derivative: every base's
spatial acceleration ``x'dot_P`` (6) and every joint's ``qdot`` and ``qddot``. A base's
position and attitude rates are not conditions, so a steady motion whose twist is held,
a body spinning at a constant rate about a principal axis for instance, is a (relative)
equilibrium too.

The unknowns are what is *free*: joint positions and velocities, a base's twist,
position or attitude, input components (a thruster force, a joint torque); the rest is
fixed where the given state and inputs put it. By default the free unknowns are every
joint position and every floating base's attitude, less the attitude directions that
do not change any acceleration at the start (*neutral*: the turn about the vertical under
gravity, any turn without it): those, and the bases' positions, are held where they
start. Steps are least-squares Newton steps with a backtracking line search, so a
consistent over-determined set of conditions (a balanced force that the unknowns cannot
change) is solved too. A free unknown along which the accelerations do not change is
an error that names it (under-determined), and so is a residual that Newton cannot
reduce to zero (no equilibrium), naming its largest conditions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..blocks import FloatingBase
from ..cosim import CoSystem
from ..errors import ConnectionError_, SolverError, TitopError
from ..spatial import dcm_from_quat, left_jacobian, quat_exp, quat_multiply
from ..titop.monolithic import is_closed_loop
from .closedloop import ClosedLoop, ClosedLoopLinearizer, linearize_closed_loop
from .coordinates import MINIMAL_BASE_STATES, Coordinates, resolve_inputs
from .linearizer import Linearizer, as_system

#: the largest change of an unknown in one Newton step (rad, m, m/s, or the input's unit): far
#: from an equilibrium a full step of a pendulum-like problem jumps by radians, past it
MAX_STEP = 0.5
#: the groups of a base's minimal coordinates a free name may give (its attitude: ``attitude``)
BASE_GROUPS = {"v": (0, 3), "w": (3, 6), "twist": (0, 6), "r": (6, 9)}


@dataclass
class Equilibrium:
    """A state of a system where the free unknowns make every acceleration zero."""

    state: np.ndarray            # the system's state vector there
    linearizer: Linearizer       # the system (its inputs at the values found) and its derivatives
    free: list                   # the unknowns solved for (names of coordinates and inputs)
    held: list = field(default_factory=list)     # the neutral directions held where they started
    residual: float = 0.0        # the largest acceleration condition left
    iterations: int = 0

    @property
    def system(self):
        """The system with its inputs at the equilibrium's values."""
        return self.linearizer.system

    @property
    def inputs(self) -> dict:
        """``{input name: value}`` of the inputs of the search (the free ones and those named)."""
        return dict(zip(self.linearizer.input_names, self.linearizer.u.tolist()))

    def linearize(self, inputs=None, outputs=()):
        """The :class:`~.model.LinearModel` at the equilibrium (:func:`~.linearize.linearize`)."""
        from .linearize import linearize
        return linearize(self.system, self.state, inputs, outputs)


class _Unknowns:
    """The free unknowns ``z`` and the state and inputs they make: minimal coordinates moved
    additively from the start (positions, velocities), input values, and per free base
    attitude the rotation vector ``rho`` (inertial frame) of the turn from the start,
    ``P_b/i = e^{(*rho)} P_b/i,start``, along the directions that change the accelerations."""

    def __init__(self, lin: Linearizer, free, y0):
        c = lin.coords
        self.lin, self.y0, self.u0 = lin, np.array(y0, dtype=float), lin.u
        self.coord, self.input, self.names = [], [], []      # (position in z, minimal or input index)
        self.attitude = []                                   # (base, native slice, minimal slice, z positions)
        bases = {b: (s, ms) for b, s, ms in c.bases}
        for ref in free:
            block, _, var = ref.partition(".")
            if ref in c.index and "rotvec" not in ref:
                self.coord.append((len(self.names), c.index[ref]))
                self.names.append(ref)
            elif block in bases and var in BASE_GROUPS:
                lo, hi = BASE_GROUPS[var]
                for i in range(lo, hi):
                    self.coord.append((len(self.names), bases[block][1].start + i))
                    self.names.append(f"{block}.{MINIMAL_BASE_STATES[i]}")
            elif block in bases and var == "attitude":
                self.attitude.append([block, *bases[block], list(range(len(self.names), len(self.names) + 3)),
                                      np.eye(3)])
                self.names += [f"{block}.attitude[{i}]" for i in "xyz"]
            elif ref in lin.input_names:
                self.input.append((len(self.names), lin.input_names.index(ref)))
                self.names.append(ref)
            else:
                raise TitopError(f"unknown free unknown {ref!r}: a state such as {c.state_names[-1]!r}, a base's "
                                 "v, w, twist, r or attitude (e.g. 'base.attitude'), or an input")
        self.size = len(self.names)

    def state(self, z) -> tuple:
        """``(y, u)``: the system's state and the inputs' values at the unknowns ``z``."""
        c = self.lin.coords
        dx = np.zeros(c.n)
        for k, i in self.coord:
            dx[i] = z[k]
        y = c.retract(self.y0, dx)                   # additive: no attitude moves here
        for block, s, ms, pos, D in self.attitude:
            q = quat_multiply(quat_exp(D.dot(z[pos[:D.shape[1]]])), self.y0[s.start + 9:s.start + 13])
            y[s.start + 9:s.start + 13] = q / np.linalg.norm(q)
        u = self.u0.copy()
        for k, j in self.input:
            u[j] += z[k]
        return y, u

    def columns(self, z, y) -> np.ndarray:
        """``(n + m, size)``: d(minimal coordinates, inputs)/dz at ``z`` (the state ``y``): the
        attitude's as body-frame rotation vectors ``P_b/i^T J_l(rho) d`` (:func:`left_jacobian`)."""
        n = self.lin.coords.n
        E = np.zeros((n + len(self.lin.inputs), self.size))
        for k, i in self.coord:
            E[i, k] = 1.0
        for k, j in self.input:
            E[n + j, k] = 1.0
        for block, s, ms, pos, D in self.attitude:
            P = dcm_from_quat(y[s.start + 9:s.start + 13])
            Jl = left_jacobian(D.dot(z[pos[:D.shape[1]]]))
            for j in range(D.shape[1]):
                E[ms.start + 9:ms.start + 12, pos[j]] = P.T.dot(Jl.dot(D[:, j]))
        return E


def _rows(lin: Linearizer) -> tuple:
    """``(positions, names)`` of the conditions in the minimal state derivative: each base's
    ``x'dot_P`` and each joint's ``qdot, qddot``."""
    c = lin.coords
    pos = [k for _, _, ms in c.bases for k in range(ms.start, ms.start + 6)]
    pos += [k for _, _, ms in c.joints + c.modal for k in range(ms.start, ms.stop)]
    pos.sort()
    return np.array(pos, dtype=int), [f"d({c.state_names[k]})/dt" for k in pos]


def default_free(coords: Coordinates) -> list:
    """Every joint's position and velocity, every flexible body's modal coordinates and rates
    (its deflection under the loads) and every floating base's attitude (the bases' twists stay
    as given: zero for a state of rest, a steady spin for a relative equilibrium)."""
    bases = [b for b, _, _ in coords.bases if isinstance(coords.system.blocks[b], FloatingBase)]
    return [f"{j}.{x}" for j, _, _ in coords.joints for x in ("q", "qd")] \
        + [coords.state_names[k] for _, _, ms in coords.modal for k in range(ms.start, ms.stop)] \
        + [f"{b}.attitude" for b in bases]


def trim(system, state=None, free=None, fixed=None, tol: float = 1e-10, max_iter: int = 50) -> Equilibrium:
    """An equilibrium of ``system`` (a :class:`~titop_fmu.system.System` or a
    :class:`~titop_fmu.cosim.CoSystem` of TITOP units) near ``state`` (default: its initial
    state): every base's spatial acceleration and every joint's velocity and acceleration
    zero to ``tol``, the ``free`` unknowns solved for (the module docstring; default: every
    joint position and velocity and base attitude, neutral directions held). Everything else
    is fixed where ``state`` and the system's inputs put it, or at the values ``fixed``
    gives, ``{name: value}`` of minimal coordinates (``"pendulum1.q"``, ``"hub.w_y"``; not an
    attitude) and of inputs (a free one starts there).
    :class:`~titop_fmu.errors.SolverError` when there is none or it is under-determined."""
    if isinstance(system, CoSystem) and is_closed_loop(system):
        if fixed:
            raise TitopError("trim: fixed values are for a plant alone; a closed loop's blocks set its inputs")
        return trim_closed_loop(system, state, free, tol, max_iter)
    system, _ = as_system(system)
    fixed = dict(fixed or {})
    coords = Coordinates(system)
    free = default_free(coords) if free is None else list(free)
    input_names = [f for f in free if f not in coords.index and f.partition(".")[2] not in
                   (*BASE_GROUPS, "attitude")]
    for name in input_names:
        try:
            resolve_inputs(system, [name])
        except ConnectionError_:
            raise TitopError(f"unknown free unknown {name!r}: a state such as {coords.state_names[-1]!r}, "
                             "a base's v, w, twist, r or attitude (e.g. 'base.attitude'), or an input") from None
    held_states = {k: v for k, v in fixed.items() if k in coords.index}
    lin = Linearizer(system, list(dict.fromkeys([*input_names, *(k for k in fixed if k not in held_states)])), ())
    u = lin.u
    for j, name in enumerate(lin.input_names):
        u[j] = fixed.get(name, u[j])
    lin.set_inputs(u)
    y = lin.system.initial_state() if state is None else np.array(state, dtype=float)
    if y.shape != (lin.coords.n_native,):
        raise TitopError(f"the state has {y.size} values; the system has {lin.coords.n_native} states")
    for name, value in held_states.items():
        k = coords.index[name]
        if "rotvec" in name:
            raise TitopError(f"{name}: an attitude is fixed through the state, not by a value")
        if name in free:
            raise TitopError(f"{name} is both free and fixed")
        y[next(s.start + k - m.start for _, s, m in [*coords.bases, *coords.joints, *coords.modal]
               if m.start <= k < m.stop)] = value
    unknowns = _Unknowns(lin, free, y)
    y, names, held, norm, it = solve(unknowns, lin, lin, *_rows(lin), free, tol, max_iter)
    return Equilibrium(y, lin, names, held, norm, it)


def solve(unknowns, inputs, derivatives, rows, row_names, free, tol, max_iter) -> tuple:
    """``(state, names of the active unknowns, held, residual, iterations)``: Newton's method
    with a line search on the conditions ``rows`` of the minimal state derivative that
    ``derivatives.at`` gives (a :class:`Linearizer`'s, or a closed loop's) over the ``unknowns``
    (:class:`_Unknowns`), the inputs set on ``inputs`` (a :class:`Linearizer`), the attitudes'
    neutral directions held; the errors of :func:`trim`."""

    def evaluate(z):
        y, u = unknowns.state(z)
        inputs.set_inputs(u)
        r = derivatives.at(y, outputs=False)
        return y, r["xdot"][rows], np.hstack([r["A"], r["B"]])[rows]
    # the neutral attitude directions: the turns about inertial axes that change no condition
    z = np.zeros(unknowns.size)
    y, R, J = evaluate(z)
    held = [f"{b}.r (position)" for b, _, _ in inputs.coords.bases if f"{b}.r" not in free]
    scale = max(1.0, float(np.max(np.abs(J), initial=0.0)))
    E = unknowns.columns(z, y)
    inactive = set()
    for group in unknowns.attitude:
        block, _, _, pos, _ = group
        _, sv, Vt = np.linalg.svd(J.dot(E[:, pos]))
        keep = sv > 1e-9 * scale
        group[4] = Vt[keep].T.copy()                                  # the turns that act, inertial frame
        inactive.update(pos[int(keep.sum()):])
        held += [f"{block}: turn about {(np.round(v * np.sign(v[np.argmax(np.abs(v))]), 12) + 0.0).tolist()} "
                 "(inertial frame)" for v in Vt[~keep]]
    active = np.array([k for k in range(unknowns.size) if k not in inactive], dtype=int)
    names = [unknowns.names[k] for k in active]

    it = 0
    norm = float(np.max(np.abs(R), initial=0.0))
    while norm > 0.0 and it < max_iter:             # on to rounding: the line search ends it there
        it += 1
        Jz = J.dot(unknowns.columns(z, y)[:, active])
        step = np.linalg.lstsq(Jz, -R, rcond=None)[0] if Jz.size else np.zeros(0)
        alpha = min(1.0, MAX_STEP / max(float(np.max(np.abs(step), initial=0.0)), 1e-300))
        while alpha >= 1e-6:
            trial = z.copy()
            trial[active] += alpha * step
            try:
                y_new, R_new, J_new = evaluate(trial)
            except SolverError:
                R_new = None
            if R_new is not None and np.linalg.norm(R_new) < (1 - 1e-4 * alpha) * np.linalg.norm(R):
                break
            alpha *= 0.5
        else:
            break
        z, y, R, J = trial, y_new, R_new, J_new
        norm = float(np.max(np.abs(R)))
    evaluate(z)                                     # the system left at the solution's inputs
    Jz = J.dot(unknowns.columns(z, y)[:, active])
    if Jz.shape[1]:
        _, sv, Vt = np.linalg.svd(Jz, full_matrices=False)
        if sv.min() <= 1e-9 * max(1.0, sv.max()):
            v = Vt[-1]
            which = [names[j] for j in np.flatnonzero(np.abs(v) > 0.1 * np.abs(v).max())]
            raise SolverError("the equilibrium is under-determined: the accelerations do not change along a "
                              f"combination of the free unknowns {which}; fix one of them (or free fewer)")
    if norm > tol:
        worst = [row_names[k] for k in np.argsort(-np.abs(R))[:3] if abs(R[k]) > tol]
        raise SolverError(f"no equilibrium found with the free unknowns {names}: after {it} Newton steps the "
                          f"accelerations stay at {norm:.3g} ({', '.join(worst)}); free what balances them (an "
                          "input, a position) or start closer")
    return y, names, held, norm, it


class _ClosedUnknowns:
    """The free unknowns of a closed loop's equilibrium: the plant's (:class:`~.trim._Unknowns`)
    then every block's continuous states (additive from where they start)."""

    def __init__(self, plant, lin: ClosedLoopLinearizer, Y0):
        self.plant, self.lin = plant, lin
        self.n_plant = lin.loop.plan.n_states
        self.xc0 = np.array(Y0[self.n_plant:], dtype=float)
        self.size = plant.size + lin.nc
        self.names = plant.names + lin.state_names[lin.lin.coords.n:]
        self.attitude = plant.attitude

    def state(self, z) -> tuple:
        y, u = self.plant.state(z[:self.plant.size])
        return np.concatenate([y, self.xc0 + z[self.plant.size:]]), u

    def columns(self, z, Y) -> np.ndarray:
        """d(the closed loop's minimal coordinates, kept inputs)/dz."""
        lin, n = self.lin, self.lin.lin.coords.n
        Ep = self.plant.columns(z[:self.plant.size], Y[:self.n_plant])
        E = np.zeros((n + lin.nc + len(lin.input_names), self.size))
        E[:n, :self.plant.size] = Ep[:n]
        E[n + lin.nc:n + lin.nc + len(lin.lin.input_names) - lin.n_fed, :self.plant.size] = Ep[n + lin.n_fed:]
        E[n:n + lin.nc, self.plant.size:] = np.eye(lin.nc)
        return E


def trim_closed_loop(cs, state=None, free=None, tol: float = 1e-10, max_iter: int = 50):
    """An equilibrium of the closed loop of ``cs``: the plant's accelerations and every block's
    state derivative zero, the plant's ``free`` unknowns (default: as :func:`~.trim.trim`'s)
    and every block's states solved for, the blocks driving the plant's inputs they feed."""
    loop = ClosedLoop(cs)
    lin = ClosedLoopLinearizer(loop, [], ())
    plant = lin.lin
    free = default_free(plant.coords) if free is None else list(free)
    fed = {name for name, _ in lin.fed}
    for name in free:
        if name in fed or name.partition(".")[0] in loop._node:
            raise TitopError(f"--trim {name}: the control units set it; a closed loop's free unknowns are the "
                             "plant's states (its blocks' states are solved for too)")
    Y0 = loop.initial_state() if state is None else np.array(state, dtype=float)
    plant_unknowns = _Unknowns(plant, free, Y0[:loop.plan.n_states])
    unknowns = _ClosedUnknowns(plant_unknowns, lin, Y0)
    rows, names = _rows(plant)
    n = plant.coords.n
    rows = np.concatenate([rows, n + np.arange(lin.nc)]).astype(int)
    names = names + [f"d({x})/dt" for x in lin.state_names[n:]]
    Y, active, held, norm, it = solve(unknowns, plant, lin, rows, names, free, tol, max_iter)
    return ClosedLoopEquilibrium(Y, plant, active, held, norm, it, cs)


@dataclass
class ClosedLoopEquilibrium(Equilibrium):
    """An equilibrium of a closed loop: its states (the plant's, then its blocks'); its system
    is the closed loop's :class:`~titop_fmu.cosim.CoSystem`."""

    cosystem: object = None

    @property
    def system(self):
        return self.cosystem

    @property
    def inputs(self) -> dict:
        return {}

    def linearize(self, inputs=None, outputs=()):
        return linearize_closed_loop(self.cosystem, self.state, inputs, outputs)
