"""The co-simulation algorithm: macro steps, coupling iteration, extrapolation,
step-size control, dense output, statistics.

Scheme (``benchmarks/cosim_order.py`` measures the orders):

1. **Base step: second order and symmetric.** A unit only accepts inputs held
   constant over a ``doStep``. Over ``[t, t+h]`` every coupling input is held at
   the midpoint ``(u(t) + u(t+h)) / 2`` of its values at both ends (attitude
   angles averaged modulo 2 pi), ``u(t+h)`` being the loop solution at the new
   states: an implicit equation ``z = G(z)`` in the coupling inputs at ``t+h``,
   solved by restoring the units' states (``fmi2SetFMUstate``) and repeating the
   step: Newton on ``z`` with the step Jacobian ``dG/dz = 1/2 (I - M)^-1 P``
   (``M`` the units' direct feedthrough, ``P`` the sensitivity of each unit's
   outputs after a step to its held inputs: one perturbed ``doStep`` of that
   unit per coupling input), kept across steps, rescaled with ``h`` and
   corrected by Broyden updates. Swapping the ends and stepping back gives the
   same equations: the step is symmetric, its global error expands in even
   powers of ``h``.

2. **Extrapolation: order 2k.** ``k`` independent runs of the whole system
   (their own unit instances) cover every macro interval ``H`` with
   ``n_1 < .. < n_k`` base steps (default ``1, 2, 3``); at the interval ends
   their recorded outputs are combined by Aitken-Neville extrapolation in
   ``(H/n)^2`` to ``H -> 0``. The runs never exchange states (the FMUs keep
   them opaque): this is global extrapolation, valid on any mesh the runs
   share. The runs are independent, so they run in parallel processes.

3. **Error estimate, step-size control.** The coarsest run predicts ``z`` by
   extrapolating its past coupling inputs with a polynomial of degree
   ``2k - 1``; the change of the step result that Newton's first correction
   brings, ``est = |dG/dz (I - dG/dz)^-1 r_0|`` (inputs scaled by their
   magnitudes), is of order ``H^(2k+1)``, like the local error of the
   extrapolated scheme: both are the effect of the inputs' ``2k``-th
   derivative held over the step, so the local error is ``kappa * est`` with
   ``kappa`` from the Euler-Maclaurin expansion (:func:`error_factor`). The
   error per interval is held to its share ``tol * H / span`` of the
   tolerance (error per unit step): intervals above ``reject`` times their
   share are redone, the next ``H`` is ``0.9 (share / error)^(1/2k)`` times
   the last. A coupling iterate is accepted once its predicted change is below
   ``accept`` times the share.

4. **Output.** The macro intervals end on the output grid points they reach;
   values between are interpolated, quintic Hermite when the observer gives
   first and second derivatives, local Lagrange of degree 5 otherwise.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import SolverError
from .graph import Structure
from .loop import LoopSolver, Sensitivities, wrap


@dataclass
class Options:
    """Settings of the master (times in seconds).

    tol:       target of the coupling error (absolute, on coupling inputs scaled by their
               largest magnitude so far), shared out over ``span`` (default: the simulated time);
               units with ``rtol``/``atol`` parameters integrate at ``unit_rtol``
    sequence:  base steps per macro interval of each extrapolated run; ``(1,)``: no extrapolation
    h0, h_max: first and largest macro interval; ``fixed``: keep ``h0`` (order studies)
    hold:      the first-order reference: inputs held at their start value, no iteration
    workers:   processes computing the runs, this one included (0 or 1: all in this process)
    """

    tol: float = 3e-5
    sequence: tuple = (1, 2, 3)
    h0: float | None = None
    h_max: float = 0.025
    h_min: float = 1e-9
    fixed: bool = False
    hold: bool = False
    span: float | None = None
    kappa: float | None = None      # local error / estimate (default: error_factor(sequence))
    accept: float = 1.0
    reject: float = 1.5
    growth: float = 2.0
    work: float = 0.0               # target coupling iterations per base step (cost cap; 0: none)
    predictor_degree: int | None = None
    max_iterations: int = 10
    noise: float = 1e-12            # floor of the coupling-iteration tolerance (units' integration noise)
    loop_rtol: float | None = None  # default min(1e-11, tol / 100): a loop residual is a wrench that
                                    # one side applies and the other does not (momentum drifts)
    loop_atol: float = 1e-13
    unit_rtol: float | None = None  # rtol/atol of units that have them, unless set (default min(1e-8, 3e-4 tol))
    workers: int = 0
    observe: object = None          # f(recorded outputs) -> values, or (3, n): values and 2 derivatives
    labels: object = None           # names of the observed values (default: the recorded outputs)
    angles: object = None           # bool mask of observed values that are angles (mod 2 pi)

    def stepper_options(self):
        """The part a worker process needs (no callables)."""
        return dataclasses.replace(self, observe=None)


@dataclass
class Stats:
    macro_steps: int = 0
    rejected: int = 0
    stalled: int = 0
    base_steps: int = 0
    step_iterations: int = 0
    loop_solves: int = 0
    loop_iterations: int = 0
    M_refreshes: int = 0
    P_refreshes: int = 0
    max_ratio: float = 0.0
    tableau: float = 0.0            # largest |T(all runs) - T(all but the coarsest)|: a global error bound
    h_min_used: float = math.inf
    h_max_used: float = 0.0
    wall: float = 0.0
    workers: int = 0
    unit_seconds: dict = field(default_factory=dict)
    unit_calls: dict = field(default_factory=dict)
    unit_steps: dict = field(default_factory=dict)
    worker_busy: list = field(default_factory=list)     # per process: seconds computing runs
    worker_units: list = field(default_factory=list)    # per process: seconds in unit calls

    @property
    def master_seconds(self):
        """Wall time not spent inside a unit call (coordination, linear algebra, waiting for
        workers when they run the units)."""
        busy = sum(self.unit_seconds.values())
        return self.wall - (busy if not self.workers else busy / max(1, self.workers))

    def summary(self) -> str:
        par = f" on {self.workers} processes" if self.workers else ""
        return "\n".join([
            f"macro steps {self.macro_steps}, rejected {self.rejected} ({self.stalled} stalled coupling "
            f"iterations); H in [{self.h_min_used:.3g}, {self.h_max_used:.3g}] s",
            f"base steps {self.base_steps}, coupling iterations {self.step_iterations} "
            f"({self.step_iterations / max(1, self.base_steps):.2f} per base step)",
            f"estimated global error (next-lower-order extrapolation, scaled state-type coupling inputs): "
            f"{self.tableau:.2g}",
            f"loop solves {self.loop_solves}, loop Newton iterations {self.loop_iterations}; Jacobians: "
            f"feedthrough {self.M_refreshes}, step sensitivity {self.P_refreshes}",
            f"unit calls {sum(self.unit_calls.values())} (doStep {sum(self.unit_steps.values())})",
            f"wall {self.wall:.2f} s{par}; time in units: "
            + ", ".join(f"{n} {s:.2f} s" for n, s in self.unit_seconds.items()),
        ] + (["processes busy " + ", ".join(f"{b:.2f} s (units {u:.2f} s)" for b, u in
                                            zip(self.worker_busy, self.worker_units))]
             if self.worker_busy else []))


# -- numbers ------------------------------------------------------------------------------------

def extrapolation_weights(sequence) -> np.ndarray:
    """Aitken-Neville weights of runs with ``n_r`` base steps, extrapolating in ``(1/n)^2`` to 0."""
    x = 1.0 / np.asarray(sequence, dtype=float) ** 2
    w = np.ones(len(x))
    for r in range(len(x)):
        for s in range(len(x)):
            if s != r:
                w[r] *= x[s] / (x[s] - x[r])
    return w


_BERNOULLI = {2: 1 / 6, 4: -1 / 30, 6: 1 / 42, 8: -1 / 30, 10: 5 / 66, 12: -691 / 2730}


def error_factor(sequence) -> float:
    """``kappa``: local error of the extrapolated scheme / the predictor-based estimate.

    Over a base step the midpoint value replaces the input's average over the
    step: a trapezoidal rule, whose error expands as ``sum_j B_2j h^2j / (2j)!
    [u^(2j-1)]`` (Euler-Maclaurin). Extrapolation with ``n_1..n_k`` removes the
    terms up to ``h^(2k-2)`` and multiplies the ``h^q`` term (``q = 2k``) by
    ``sum_r w_r n_r^-q``. The estimate is the effect of the degree ``q - 1``
    predictor's error ``h^q u^(q)``, held over half a step. Both act through the
    same input-to-state sensitivity, so their ratio is
    ``2 |sum_r w_r n_r^-q| |B_q| / q!``.
    """
    q = 2 * len(sequence)
    w = extrapolation_weights(sequence)
    c = abs(float(np.sum(w * np.asarray(sequence, dtype=float) ** -q)))
    return 2.0 * c * abs(_BERNOULLI[q]) / math.factorial(q)


def lagrange_weights(nodes, t) -> np.ndarray:
    nodes = np.asarray(nodes, dtype=float)
    w = np.ones(len(nodes))
    for i in range(len(nodes)):
        for j in range(len(nodes)):
            if j != i:
                w[i] *= (t - nodes[j]) / (nodes[i] - nodes[j])
    return w


def single_threaded_blas():
    """Context: BLAS on one thread. The master's linear algebra is on matrices of the size
    of the coupling inputs (tens to a few hundred), where a multithreaded BLAS costs more
    than it gives (OpenBLAS solves a 120x120 system about 100 times slower on 2 threads
    than on one on a 2-core machine), and the worker processes already use the cores."""
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=1, user_api="blas")


class _NoConvergence(SolverError):
    """The coupling iteration of a base step stalled: the interval is retried shorter."""


# -- one run ------------------------------------------------------------------------------------

class _StepJacobian:
    """``dG/dz``: from measured step sensitivities ``P`` (base step ``h_ref``) and the
    feedthrough ``M``, ``1/2 (I - M)^-1 P``; rescaled with ``h``, corrected by
    Broyden updates along the coupling iterations (inputs scaled by their magnitudes)."""

    def __init__(self):
        self.J = None
        self.h = None

    def reset(self, P, M, h):
        A = np.eye(P.shape[0]) - (M if M is not None else 0.0)
        self.J = 0.5 * np.linalg.solve(A, P)
        self.h = h

    def at(self, h):
        if h != self.h:
            self.J = self.J * (h / self.h)
            self.h = h
        return self.J

    def update(self, dz, dG, w):
        x = dz * w
        n2 = float(x @ x)
        if n2 > 0:
            Js = self.J * w[:, None] / w[None, :]
            Js += np.outer(dG * w - Js @ x, x) / n2
            self.J = Js / w[:, None] * w[None, :]


class Run:
    """One set of unit instances of the whole system, ``n`` base steps per macro interval."""

    def __init__(self, st: Structure, opt: Options, units, n, degree, weight=1.0):
        self.st, self.opt, self.units, self.n, self.degree = st, opt, units, n, degree
        self.weight, self.total_steps = weight, sum(opt.sequence)
        loop_rtol = opt.loop_rtol if opt.loop_rtol is not None else min(1e-11, 1e-2 * opt.tol)
        self.sens = Sensitivities(st)
        self.jac = _StepJacobian()
        self.solver = LoopSolver(st, units, self.sens, rtol=loop_rtol, atol=opt.loop_atol)
        self.t = 0.0
        self.U = np.zeros(st.n_cin)
        self.Y = np.zeros(st.n_out)
        self.hist_t: list = []
        self.hist_U: list = []
        self._set = [(st.cin_local[ks], ks) for ks in st.unit_cin]
        self._rec = np.array([g for _, g in st.recorded], dtype=int)
        self._out_unit = np.searchsorted(st.out_offset, st.cin_src, side="right") - 1
        self.base_steps = self.iterations = self.P_refreshes = 0

    def recorded(self):
        return self.Y[self._rec].copy()

    def set_coupling(self, U):
        for u, (local, ks) in zip(self.units, self._set):
            if ks.size:
                u.set_inputs(local, U[ks])

    def initialize(self, t0):
        self.t = t0
        Y, U = self.solver.solve(t0)
        self.Y, self.U = Y.copy(), U.copy()
        self.solver.Ucur[:] = U
        self.hist_t, self.hist_U = [t0], [U.copy()]

    def predict(self, t):
        """Coupling inputs at ``t`` extrapolated from the last ``degree + 1`` points."""
        k = min(self.degree + 1, len(self.hist_t))
        base = self.hist_U[-1]
        if k == 1:
            return base.copy()
        w = lagrange_weights(self.hist_t[-k:], t)
        ang = self.st.cin_angle
        z = np.zeros_like(base)
        for wi, Ui in zip(w, self.hist_U[-k:]):
            d = Ui - base
            if ang.any():
                d[ang] = wrap(d[ang])
            z += wi * d
        return base + z

    # -- the base step ------------------------------------------------------------------------
    def base_step(self, t, h, tol, scale):
        """Advance from ``t`` to ``t + h``, iterating until the predicted change of the
        result is below ``tol``; returns the first iterate's (the estimate)."""
        st, opt = self.st, self.opt
        units = self.units
        U0 = self.U
        if opt.hold:
            self.set_coupling(U0)
            for u in units:
                u.do_step(t, h)
            Y, G = self.solver.solve(t + h, z0=self.solver.z)
            self.base_steps += 1
            self.iterations += 1
            self.t, self.U, self.Y = t + h, G.copy(), Y.copy()
            return 0.0
        saved = [u.get_state() for u in units]
        z = self.predict(t + h)
        ang = st.cin_angle
        w = 1.0 / scale
        eye = np.eye(st.n_cin)
        rho = 1.0 if self.jac.J is None else max(1e-3, float(np.abs(self.jac.at(h)).sum(axis=1).max()))
        loop_tol = 0.1 * tol / rho          # the loop only as exact as the iteration sees it (through dG/dz)
        est = 0.0
        e_prev = z_prev = G_prev = None
        refreshed = False
        try:
            for k in range(opt.max_iterations + 1):
                if k:
                    for u, s in zip(units, saved):
                        u.set_state(s)
                d = z - U0
                if ang.any():
                    d[ang] = wrap(d[ang])
                ubar = U0 + 0.5 * d
                self.set_coupling(ubar)
                for u in units:
                    u.do_step(t, h)
                # the loop only as exact as the coupling iteration can see (through dG/dz)
                Y, G = self.solver.solve(t + h, z0=z[st.torn], tol=loop_tol, weights=w)
                self.iterations += 1
                r = G - z
                if ang.any():
                    r[ang] = wrap(r[ang])
                if not r.size:
                    break
                if self.jac.J is None:
                    self.measure_P(saved, ubar, t, h, Y)
                if z_prev is not None:
                    dG = G - G_prev
                    if ang.any():
                        dG[ang] = wrap(dG[ang])
                    # a secant pair above the loop-solve and integration noise only
                    if float((np.abs(dG) * w).max()) > 10 * loop_tol + 1e3 * opt.noise:
                        self.jac.update(z - z_prev, dG, w)
                J = self.jac.at(h)
                corr = np.linalg.solve(eye - J, r)
                e = float((np.abs(corr - r) * w).max())
                if k == 0:
                    est = e
                else:       # the last correction's real effect against its prediction
                    trust = max(1.0, float((np.abs(dG) * w).max()) / max(e_prev, 10 * loop_tol + 1e3 * opt.noise))
                    e *= trust
                    if k == 1:
                        est *= trust
                if e <= tol or (k >= 2 and e <= 100 * opt.noise and e > 0.3 * e_prev):
                    break
                slow = e_prev is not None and e > 0.05 * e_prev and e > 1e3 * opt.noise
                if k == opt.max_iterations or (slow and refreshed and e > 0.5 * e_prev):
                    raise _NoConvergence(
                        f"the coupling iteration did not converge at t={t:.9g} s, step {h:.3g} s: predicted "
                        f"change {e:.3g} (> {tol:.3g}) after {k + 1} steps")
                if slow and not refreshed:          # a fresh step Jacobian, once per base step
                    self.measure_P(saved, ubar, t, h, Y)
                    corr = np.linalg.solve(eye - self.jac.at(h), r)
                    refreshed = True
                e_prev, z_prev, G_prev = e, z, G
                z = z + corr
        finally:
            for u, s in zip(units, saved):
                u.free_state(s)
        self.base_steps += 1
        self.t, self.U, self.Y = t + h, G.copy(), Y.copy()
        self.hist_t.append(self.t)
        self.hist_U.append(self.U)
        if len(self.hist_t) > self.degree + 1:
            del self.hist_t[0], self.hist_U[0]
        return est

    def measure_P(self, saved, ubar, t, h, Y):
        """Step sensitivities: per unit and coupling input, one step of that unit with the
        input perturbed from the saved state, outputs read with the current end inputs.
        Every unit is left as it was found: stepped, with the end inputs."""
        st = self.st
        n = st.n_cin
        self.solver.refresh_M(full=True)         # the feedthrough at the end of the step, all columns
        P = np.zeros((n, n))
        Ucur = self.solver.Ucur
        for j, u in enumerate(self.units):
            ks = st.unit_cin[j]
            rows = np.flatnonzero(self._out_unit == j)
            if not ks.size or not rows.size:
                continue
            local_in = st.cin_local[ks]
            uniq, inv = np.unique(st.cin_src[rows] - st.out_offset[j], return_inverse=True)
            y0 = Y[st.out_offset[j] + uniq]
            end = Ucur[ks].copy()
            stepped = u.get_state()
            for c, k in enumerate(ks):
                d = 1e-4 * max(1.0, abs(ubar[k]))
                v = ubar[ks].copy()
                v[c] += d
                u.set_state(saved[j])
                u.set_inputs(local_in, v)
                u.do_step(t, h)
                u.set_inputs(local_in, end)
                P[rows, k] = ((u.get_outputs(uniq) - y0) / d)[inv]
            u.set_state(stepped)
            u.free_state(stepped)
        self.jac.reset(P, self.sens.M, h)
        self.P_refreshes += 1

    # -- save / restore -------------------------------------------------------------------------
    def snapshot(self, full=False):
        snap = dict(states=[u.get_state() for u in self.units], t=self.t, U=self.U.copy(), Y=self.Y.copy(),
                    hist_t=list(self.hist_t), hist_U=[x.copy() for x in self.hist_U],
                    z=self.solver.z.copy(), zscale=self.solver.zscale.copy())
        if full:            # the Jacobians too: a restart then repeats the same iterations
            snap["jac"] = copy.deepcopy((self.sens.M, self.sens._torn_lu, self.jac.J, self.jac.h))
        return snap

    def restore(self, snap):
        for u, s in zip(self.units, snap["states"]):
            u.set_state(s)
        self.t, self.U, self.Y = snap["t"], snap["U"].copy(), snap["Y"].copy()
        self.hist_t, self.hist_U = list(snap["hist_t"]), [x.copy() for x in snap["hist_U"]]
        self.solver.z, self.solver.zscale = snap["z"].copy(), snap["zscale"].copy()
        self.solver.Ucur[:] = self.U          # the units' inputs are part of their states
        if "jac" in snap:
            M, JT, J, h = copy.deepcopy(snap["jac"])
            self.sens.M, self.sens._torn_lu, self.jac.J, self.jac.h = M, JT, J, h

    def free(self, snap):
        for u, s in zip(self.units, snap["states"]):
            u.free_state(s)


class Stepper:
    """Advances some of the runs (``{run index: Run}``) over macro intervals; lives in the
    master's process or in a worker process (:mod:`.parallel`)."""

    in_process = True           # computes in start(): the master starts the workers' first

    def __init__(self, runs: dict, key=0):
        self.runs, self.key = runs, key
        self._snaps = None
        self._result = None
        self.busy = 0.0

    def initialize(self, t0):
        out = {}
        for i, run in self.runs.items():
            run.initialize(t0)
            out[i] = (None, run.recorded(), run.U.copy(), 0)
        return out

    def interval(self, t, H, tol_share, scale, abort):
        """Every run over ``[t, t + H]``; ``{run index: (estimate, recorded, |U|)}`` (estimate
        from the first base step of run 0 only). Stops early when run 0's estimate is above
        ``abort``; raises :class:`_NoConvergence` when a coupling iteration stalls."""
        # full snapshots: a rejected interval leaves no trace, Jacobians included, so the
        # results do not depend on which runs share a process
        self._snaps = {i: run.snapshot(full=True) for i, run in self.runs.items()}
        out = {}
        for i, run in self.runs.items():
            its0 = run.iterations
            # run i's result enters the output with weight w_i: the budget accept * share over
            # all base steps, each run's deviations counted with |w_i| (cheapest split)
            tol = max(run.opt.accept * tol_share / (abs(run.weight) * run.total_steps), run.opt.noise)
            est = 0.0
            for s in range(run.n):
                ts = t + H * s / run.n
                est = max(est, run.base_step(ts, t + H * (s + 1) / run.n - ts, tol, scale))
            out[i] = (est if i == 0 else None, run.recorded(), run.U.copy(), run.iterations - its0)
            if i == 0 and est > abort:
                break
        return out

    def commit(self):
        for i, run in self.runs.items():
            run.free(self._snaps[i])
        self._snaps = None

    def rollback(self):
        for i, run in self.runs.items():
            run.restore(self._snaps[i])
            run.free(self._snaps[i])
        self._snaps = None

    # the two-phase protocol of the master (a worker overlaps the phases)
    def start(self, method, *args):
        t = time.perf_counter()
        try:
            self._result = (True, getattr(self, method)(*args))
        except SolverError as e:
            self._result = (False, e)
        self.busy += time.perf_counter() - t

    def result(self):
        ok, value = self._result
        self._result = None
        if not ok:
            raise value
        return value

    def counters(self):
        c = dict(base_steps=0, step_iterations=0, loop_solves=0, loop_iterations=0, M_refreshes=0,
                 P_refreshes=0, units={})
        for run in self.runs.values():
            c["base_steps"] += run.base_steps
            c["step_iterations"] += run.iterations
            c["loop_solves"] += run.solver.solves
            c["loop_iterations"] += run.solver.iterations
            c["M_refreshes"] += run.sens.refreshes
            c["P_refreshes"] += run.P_refreshes
            for name, u in zip(run.st.unit_names, run.units):
                s, n, k = c["units"].get(name, (0.0, 0, 0))
                c["units"][name] = (s + u.seconds, n + u.calls, k + u.steps)
        return c

    def save(self):
        return {self.key: {i: run.snapshot(full=True) for i, run in self.runs.items()}}

    def restore(self, snaps):
        for i, run in self.runs.items():
            run.restore(snaps[self.key][i])

    def counters_dict(self):
        return {self.key: dict(self.counters(), busy=self.busy)}

    def terminate(self):
        for run in self.runs.values():
            for u in run.units:
                u.terminate()


# -- the master -----------------------------------------------------------------------------------

@dataclass
class Result:
    t: np.ndarray                    # output grid
    values: np.ndarray               # (len(t), n observed)
    labels: list
    stats: Stats
    mesh: np.ndarray                 # accepted interval ends
    mesh_values: np.ndarray          # (len(mesh), n) or (len(mesh), 3, n) with derivatives
    ratio: np.ndarray                # per interval: estimated error / its share of tol


class Master:
    """Step-size control, extrapolation and output over the runs held by ``steppers``
    (objects with :class:`Stepper`'s two-phase interface; run 0 is the coarsest)."""

    def __init__(self, st: Structure, steppers: list, opt: Options):
        # a stepper in this process computes when started: the workers' are started before it
        self.st, self.opt = st, opt
        self.steppers = [s for s in steppers if not s.in_process] + [s for s in steppers if s.in_process]
        self.sequence = tuple(opt.sequence)
        self.order = 2 * len(self.sequence)
        self.degree = int(opt.predictor_degree) if opt.predictor_degree is not None else self.order - 1
        self.weights = extrapolation_weights(self.sequence)
        self.kappa = opt.kappa if opt.kappa is not None else error_factor(self.sequence)
        self.stats = Stats(workers=opt.workers)
        self.scale = np.ones(st.n_cin)
        self.t = 0.0
        self.H = None
        self.span = 1.0
        self.grid = None                # (t0, output interval): intervals end on the output points
        self._aligned = False
        self._last_ratio = 0.0
        self._why = ""
        self._n_hist = 1                # accepted points in the coarse run's history
        self._work = 0.0
        self._rec = None
        f = opt.observe
        self._observe = (lambda rec: rec) if f is None else f
        self.labels = list(opt.labels) if opt.labels is not None else [lab for lab, _ in st.recorded]

    def _all(self, method, *args):
        for s in self.steppers:
            s.start(method, *args)
        out, err = {}, None
        for s in self.steppers:
            try:
                r = s.result()
                if isinstance(r, dict):
                    out.update(r)
            except SolverError as e:
                err = err or e
        if err is not None:
            raise err
        return out

    def _absorb(self, res):
        self._rec = {i: rec for i, (_, rec, _, _) in res.items()}
        self._U = {i: U for i, (_, _, U, _) in res.items()}
        for U in self._U.values():
            np.maximum(self.scale, np.abs(U), out=self.scale)
        # coupling iterations (doSteps of every unit) per base step over the interval
        self._work = sum(w for *_, w in res.values()) / sum(self.sequence)

    # -- start ----------------------------------------------------------------------------------
    def initialize(self, t0=0.0):
        """Consistent outputs at ``t0``: every run's loops solved at the initial states."""
        self.t = t0
        self._absorb(self._all("initialize", t0))
        self._E = self.tableau_error()
        self.H = self.opt.h0 or min(self.opt.h_max, 1e-3)
        self._n_hist = 1
        return self.extrapolated()

    def tableau_error(self, U=None):
        """``T(all runs) - T(all but the coarsest)`` on the coupling inputs (``U``: per run;
        default the current ones), scaled by their magnitudes: an estimate of the global error
        of the next-lower-order extrapolation, an upper bound of the result's."""
        U = self._U if U is None else U
        k = len(self.sequence)
        if k < 2:
            return np.zeros(int(self.st.cin_state.sum()) or self.st.n_cin)
        ang = self.st.cin_angle
        ref = U[k - 1]
        sub = extrapolation_weights(self.sequence[1:])

        def comb(weights, runs):
            out = np.zeros_like(ref)
            for w, i in zip(weights, runs):
                d = U[i] - ref
                d[ang] = wrap(d[ang])
                out += w * d
            return out

        E = (comb(self.weights, range(k)) - comb(sub, range(1, k))) / self.scale
        # on the coupling inputs that are functions of the states alone (poses, twists): the
        # loop variables carry the loop solver's residual, noise that does not shrink with H
        return E[self.st.cin_state] if self.st.cin_state.any() else E

    def extrapolated(self):
        """The observed values now, extrapolated over the runs: ``(n,)``, or ``(3, n)`` with
        first and second time derivatives when the observer gives them."""
        vals = [np.asarray(self._observe(self._rec[i]), dtype=float) for i in range(len(self.sequence))]
        ref = vals[-1]
        ang = self.opt.angles
        out = np.zeros_like(ref)
        for w, v in zip(self.weights, vals):
            d = v - ref
            if ang is not None:
                if d.ndim == 2:
                    d[0, ang] = wrap(d[0, ang])
                else:
                    d[ang] = wrap(d[ang])
            out += w * d
        return ref + out

    # -- macro intervals ------------------------------------------------------------------------
    def _controlled(self):
        return not self.opt.fixed and not self.opt.hold and self._n_hist >= self.degree + 1

    def interval(self, H):
        """Try ``[t, t + H]``; ``(accepted, ratio)``, ratio = estimated error / its share."""
        opt = self.opt
        share = opt.tol * H / self.span
        abort = opt.reject * share / self.kappa if self._controlled() else math.inf
        try:
            res = self._all("interval", self.t, H, share, self.scale, abort)
        except _NoConvergence as e:
            self._all("rollback")
            if opt.fixed or opt.hold:
                raise SolverError(f"{e} (fixed macro step {H:g} s)") from None
            self.stats.stalled += 1
            self._why = str(e)
            return False, 2.0 ** self.order
        except SolverError:
            self._all("rollback")
            raise
        ratio = self.kappa * res[0][0] / share
        accepted = not self._controlled() or ratio <= opt.reject
        if accepted:
            self._all("commit")
            self._absorb(res)
            self._E = self.tableau_error()
            if self._E.size:
                self.stats.tableau = max(self.stats.tableau, float(np.max(np.abs(self._E))))
        else:
            self._all("rollback")
        return accepted, ratio

    def next_H(self, H, ratio):
        opt = self.opt
        if opt.fixed or opt.hold:
            return H
        if not self._controlled():
            return min(opt.h_max, H * opt.growth)
        fac = 0.9 * max(ratio, 1e-10) ** (-1.0 / self.order)       # error per unit step ~ H^order
        return float(min(opt.h_max, max(opt.h_min, H * min(opt.growth, max(0.2, fac)))))

    def _fit(self, H, t_end):
        """``H`` shortened so that the interval ends on the next output point (or on an
        equal division of the way there), leaving no sliver before ``t_end``."""
        self._aligned = False
        t = self.t
        if self.grid is not None:
            t0, dt = self.grid
            tg = t0 + (math.floor((t - t0) / dt + 1e-9) + 1) * dt       # next output point
            gap = tg - t
            if H >= gap * (1 - 1e-9):
                H = gap + max(0, math.floor((H - gap) / dt + 1e-9)) * dt
                self._aligned = True
            else:
                H = gap / math.ceil(gap / H - 1e-9)
        rest = t_end - t
        if H >= rest * (1 - 1e-9) or rest - H < 1e-6 * H:
            H = rest
        return H

    def advance(self, t_end):
        """One accepted macro interval towards ``t_end``; returns its end time."""
        opt = self.opt
        H = self._fit(min(self.H, t_end - self.t), t_end)
        while True:
            if H < opt.h_min:
                raise SolverError(f"the macro step fell below h_min = {opt.h_min:g} s at t={self.t:.9g} s"
                                  + (f": {self._why}" if self._why else ""))
            accepted, ratio = self.interval(H)
            if accepted:
                break
            self.stats.rejected += 1
            H = self._fit(self.next_H(H, ratio), t_end)
        self._n_hist += 1
        st = self.stats
        st.macro_steps += 1
        st.max_ratio = max(st.max_ratio, ratio)
        st.h_min_used, st.h_max_used = min(st.h_min_used, H), max(st.h_max_used, H)
        self.t += H
        if not (opt.fixed or opt.hold):
            # an interval cut short by an output point does not shrink the next one
            H_next = self.next_H(max(H, self.H) if self._aligned else H, ratio)
            # cost cap: each doubling of H costs about one more coupling iteration per base step
            # (the predictor's error grows like H^(2k)), so the cost per simulated second
            # (1 + its) / H is least near 1.5 doSteps per base step
            if self._controlled() and self._work > 0 and opt.work:
                H_next = min(H_next, max(H, self.H) * 2.0 ** float(np.clip(0.5 * (opt.work - self._work), -1, 1)))
            self.H = float(max(opt.h_min, H_next))
        self._last_ratio = ratio
        return self.t

    # -- whole run -------------------------------------------------------------------------------
    def simulate(self, t_stop, output_interval=None, t0=0.0, progress=False):
        """Run from ``t0`` to ``t_stop``; values on the grid ``t0 + k * output_interval``
        (at the interval ends when ``None``)."""
        start = time.perf_counter()
        self.grid = (t0, output_interval) if output_interval else None
        self.span = self.opt.span or (t_stop - t0)
        with single_threaded_blas():
            mesh_t, mesh_v, ratios = [t0], [self.initialize(t0)], [0.0]
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=float(t_stop - t0), delay=0.5, unit="s(sim)", bar_format=(
                "{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]"))
        try:
            with single_threaded_blas():
                while self.t < t_stop - 1e-12 * max(1.0, abs(t_stop)):
                    mesh_t.append(self.advance(t_stop))
                    mesh_v.append(self.extrapolated())
                    ratios.append(self._last_ratio)
                    if bar is not None:
                        bar.update(self.t - t0 - bar.n)
        finally:
            if bar is not None:
                bar.close()
            self.stats.wall += time.perf_counter() - start
            self.collect_stats()
        mesh_t, mesh_v = np.array(mesh_t), np.array(mesh_v)
        if output_interval:
            n = int(math.floor((t_stop - t0) / output_interval + 1e-9))
            grid = t0 + output_interval * np.arange(n + 1)
            values = dense(mesh_t, mesh_v, grid, self.opt.angles)
        else:
            grid, values = mesh_t, (mesh_v[:, 0] if mesh_v.ndim == 3 else mesh_v)
        return Result(grid, values, self.labels, self.stats, mesh_t, mesh_v, np.array(ratios))

    def collect_stats(self):
        c = self._all("counters_dict")
        s = self.stats
        for k in ("base_steps", "step_iterations", "loop_solves", "loop_iterations", "M_refreshes",
                  "P_refreshes"):
            setattr(s, k, sum(v[k] for v in c.values()))
        s.unit_seconds, s.unit_calls, s.unit_steps = {}, {}, {}
        if len(c) > 1:                  # runs shared by processes: how busy each one was
            s.worker_busy = [v["busy"] for k, v in sorted(c.items())]
            s.worker_units = [sum(x[0] for x in v["units"].values()) for k, v in sorted(c.items())]
        for v in c.values():
            for name, (sec, calls, steps) in v["units"].items():
                s.unit_seconds[name] = s.unit_seconds.get(name, 0.0) + sec
                s.unit_calls[name] = s.unit_calls.get(name, 0) + calls
                s.unit_steps[name] = s.unit_steps.get(name, 0) + steps

    # -- restart ---------------------------------------------------------------------------------
    def save(self):
        """Everything that determines the rest of the run, unit states included."""
        return dict(groups=self._all("save"), t=self.t, H=self.H, scale=self.scale.copy(),
                    n_hist=self._n_hist, rec=copy.deepcopy(self._rec), U=copy.deepcopy(self._U),
                    E=self._E.copy(), work=self._work, grid=self.grid, span=self.span)

    def restore(self, snap):
        """Back to a :meth:`save` point (the snapshot stays valid)."""
        self._all("restore", snap["groups"])
        self.t, self.H, self.scale = snap["t"], snap["H"], snap["scale"].copy()
        self._n_hist, self._rec = snap["n_hist"], copy.deepcopy(snap["rec"])
        self._U, self._E, self._work = copy.deepcopy(snap["U"]), snap["E"].copy(), snap["work"]
        self.grid, self.span = snap["grid"], snap["span"]

    def terminate(self):
        """End the units, and the worker processes with them; also after a failure."""
        err = None
        for s in self.steppers:
            try:
                s.terminate()
            except SolverError as e:
                err = err or e
        if err is not None:
            raise err


# -- output -------------------------------------------------------------------------------------

def dense(mesh_t, mesh_v, grid, angles=None, degree=5):
    """Values at ``grid`` from the values at ``mesh_t``.

    ``mesh_v`` is ``(N, n)`` values, or ``(N, 3, n)`` values with first and
    second derivatives. Between two mesh points a column with both derivatives
    known at both ends is a quintic Hermite polynomial, any other column a local
    Lagrange polynomial through the ``degree + 1`` mesh points around. Angles
    are unwrapped first and wrapped back to ``[-pi, pi)``.
    """
    mv = np.array(mesh_v, dtype=float)
    has_d = mv.ndim == 3
    v = mv[:, 0, :].copy() if has_d else mv.copy()
    ang = np.zeros(v.shape[1], dtype=bool) if angles is None else np.asarray(angles, dtype=bool)
    if ang.any():
        v[:, ang] = np.unwrap(v[:, ang], axis=0)
    n = len(mesh_t)
    out = np.empty((len(grid), v.shape[1]))
    idx = np.clip(np.searchsorted(mesh_t, grid, side="right") - 1, 0, n - 1)
    k = min(degree + 1, n)
    for g, (t, i) in enumerate(zip(grid, idx)):
        tol = 1e-12 * max(1.0, abs(t))
        if abs(mesh_t[i] - t) <= tol:
            out[g] = v[i]
            continue
        if i + 1 < n and abs(mesh_t[i + 1] - t) <= tol:
            out[g] = v[i + 1]
            continue
        lo = int(min(max(i - (k // 2 - 1), 0), n - k))
        out[g] = lagrange_weights(mesh_t[lo:lo + k], t) @ v[lo:lo + k]
        if has_d and i + 1 < n:
            d1, d2 = mv[i:i + 2, 1, :], mv[i:i + 2, 2, :]
            ok = np.all(np.isfinite(d1), axis=0) & np.all(np.isfinite(d2), axis=0)
            if ok.any():
                out[g, ok] = hermite5(t, mesh_t[i], mesh_t[i + 1], v[i, ok], d1[0, ok], d2[0, ok],
                                      v[i + 1, ok], d1[1, ok], d2[1, ok])
    if ang.any():
        out[:, ang] = wrap(out[:, ang])
    return out


def hermite5(t, a, b, ya, da, dda, yb, db, ddb):
    """Quintic Hermite interpolation on ``[a, b]`` from values, first and second
    derivatives at both ends."""
    h = b - a
    s = (t - a) / h
    s2, s3 = s * s, s * s * s
    h00 = 1 - 10 * s3 + 15 * s3 * s - 6 * s3 * s2
    h01 = 1 - h00
    h10 = s - 6 * s3 + 8 * s3 * s - 3 * s3 * s2
    h11 = -4 * s3 + 7 * s3 * s - 3 * s3 * s2
    h20 = 0.5 * (s2 - 3 * s3 + 3 * s3 * s - s3 * s2)
    h21 = 0.5 * (s3 - 2 * s3 * s + s3 * s2)
    return h00 * ya + h01 * yb + h * (h10 * da + h11 * db) + h * h * (h20 * dda + h21 * ddb)
