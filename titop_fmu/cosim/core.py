"""A run's base steps in C (``master.c``, ``titop_run_steps``): the coupling iteration, its loop
solves and its step Jacobian, for a run whose units are all FMUs (their binaries called from C,
as the loop plans do, :mod:`.plan`) and whose coupling inputs are few enough for dense algebra
(:data:`~.loop.DENSE_UP_TO`). What :meth:`~.run.Run.base_step` does in Python, over the same
arrays (the run's, its loop solver's, its Jacobians'), which the Python keeps in place. The
feedthrough ``M``'s columns of the loop unknowns are measured in C too, and the loops' Jacobian
formed from it, where every unit gives them by its vendor function (:func:`_refresh_plan`); the
first ``M``, the others' columns and the step sensitivities ``P``, rarer, stay in Python,
called back from C. Other runs, and every run where there is no C compiler, take their
base steps in Python. The results are those of the Python to rounding: the sums are taken in
another order.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import SolverError
from . import clib
from .loop import DENSE_UP_TO

#: the base steps run in C where they can (False: always in Python)
COMPILED = True

_vp, _int, _dbl = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
LOOP_JACOBIAN = ctypes.CFUNCTYPE(_int, _int)
STEP_JACOBIAN = ctypes.CFUNCTYPE(_int, _dbl, _dbl)
OK, STALLED, LOOP, FMI, CALLBACK, SINGULAR = range(6)
LOOP_FAILURES = {1: "the residual is not finite", 2: "the loop Jacobian is singular",
                 3: "the loop Jacobian is numerically singular (no solution, or not a unique one)",
                 4: "Newton did not converge"}
FMI_FUNCTIONS = ("fmi2SetFMUstate", "fmi2SetReal", "fmi2DoStep", "fmi2GetFMUstate", "fmi2FreeFMUstate",
                 "titopGetDirectionalDerivatives")


class NoConvergence(SolverError):
    """The coupling iteration of a base step stalled: the interval is retried shorter."""


class _Plan(ctypes.Structure):
    _fields_ = [("n_ops", _int), ("op", _vp), ("component", _vp), ("set_real", _vp), ("get_real", _vp), ("vr", _vp),
                ("idx", _vp), ("z", _vp), ("buf", _vp), ("seconds", _vp), ("status", _vp), ("runs", _vp)]


class _Refresh(ctypes.Structure):
    _fields_ = [("unit", _int), ("dd", _vp), ("n_out", _int), ("n_in", _int), ("n_set", _int), ("out_vr", _vp),
                ("in_vr", _vp), ("seeds", _vp), ("result", _vp), ("dst", _vp), ("src", _vp)]


class _Run(ctypes.Structure):
    _fields_ = ([(f, _int) for f in ("n_units", "n_cin", "n_out", "n_u", "degree")]
                + [(f, _vp) for f in ("component", "set_real", "do_step", "get_state", "set_state", "free_state",
                                      "cin_off", "cin_pos", "cin_vr", "states", "unit_seconds", "unit_counts")]
                + [("pre", _Plan), ("full", _Plan), ("loop", _Plan), ("na", _int), ("m", _int), ("ang", _vp),
                   ("tri", _vp)]
                + [(f, _vp) for f in ("unknowns", "src", "u_angle", "Y", "Ucur", "z", "zscale", "H", "M_max",
                                      "H_valid")]
                + [("rtol", _dbl), ("atol", _dbl), ("refresh_cost", _dbl), ("max_iter", _int)]
                + [(f, _vp) for f in ("r", "err", "J", "Jinv", "jac", "cin_src", "U", "hist_t", "hist_U", "hist_n",
                                      "ubar")]
                + [("loop_jacobian", LOOP_JACOBIAN), ("step_jacobian", STEP_JACOBIAN)]
                + [(f, _vp) for f in ("counters", "fail", "work", "cin_unknown")]
                + [("n_refresh", _int), ("refresh", _vp), ("Mc", _vp), ("M_fresh", _vp)])


def made(run):
    """The :class:`Core` of ``run``, or None where its base steps stay in Python."""
    st = run.st
    if not COMPILED or st.n_cin > DENSE_UP_TO or run.opt.hold:
        return None
    if any(u.fmi_rw() is None or u.fmi_steps() is None for u in run.units):
        return None
    fn = clib.function("titop_run_steps")
    if fn is None or not all(_plan_in_c(run.solver, name) for name in ("pre", "full", "loop")):
        return None
    return Core(run, fn)


def _refresh_plan(run, arr) -> list:
    """What the C needs to measure the columns of ``M`` of the loop unknowns (``loop_refresh``),
    per unit with such columns: the same columns as :meth:`.loop.LoopSolver.local_jacobian`,
    from one call of the unit's vendor function for its directional derivatives. Empty (the
    Python measures them) where a unit has no such function or some of its columns are finite
    differences (an attitude's)."""
    st, solver = run.st, run.solver
    n, plans = st.n_cin, []
    for j, (u, lay) in enumerate(zip(run.units, st.layouts)):
        cs = np.flatnonzero(np.isin(lay.cin, st.unknowns))
        if not cs.size or not lay.rows.size:
            continue
        dd = u.fmi_derivatives() if st.types[j].derivatives else None
        if dd is None:
            return []
        zero, i, seeds, at, hit, left = solver.exact_plan(j, cs)
        if left.size:
            return []
        n_out = len(lay.outputs)
        rows, cols = lay.rows[:, None], at[1].ravel()[None, :]
        c = np.arange(len(i))[None, :]
        dst = np.concatenate([(rows * n + cols).ravel(), (rows * n + zero[None, :]).ravel()])
        src = np.concatenate([np.where(hit, c * n_out + lay.of_row[:, None], -1).ravel(),
                              np.full(len(lay.rows) * len(zero), -1)])
        _, _, _, in_vr, out_vr = u.fmi_rw()
        f = _Refresh()
        f.unit, f.dd, f.n_out, f.n_in, f.n_set = j, dd, n_out, len(i), len(dst)
        f.out_vr, f.in_vr = arr(np.append(out_vr[lay.outputs], 0), np.uintc), arr(np.append(in_vr[i], 0), np.uintc)
        f.seeds, f.result = arr(np.append(seeds.ravel(), 0.0)), arr(np.zeros(len(i) * n_out + 1))
        f.dst, f.src = arr(np.append(dst, 0), np.intc), arr(np.append(src, 0), np.intc)
        plans.append(f)
    return plans


def _plan_in_c(solver, name) -> bool:
    """Whether the loop solver's plan ``name`` runs from C: compiled, or without a unit call. A
    plan that cannot be compiled (the loop plans in C turned off, :data:`.plan.COMPILED`) keeps
    the run's base steps in Python: in C it would be taken for an empty one."""
    return bool(solver.plan_in_c(name)) or not solver._plans[name]


class Core:
    """The C struct of a run over its arrays, and the calls."""

    def __init__(self, run, fn):
        self.run, self._fn = run, fn
        st, solver, sens, jac = run.st, run.solver, run.sens, run.jac
        units = run.units
        n, nu = st.n_cin, len(st.unknowns)
        keep = self._keep = []                  # every array and object the struct points to

        def arr(x, dtype=None):
            a = np.ascontiguousarray(x, dtype=dtype)
            keep.append(a)
            return a.ctypes.data

        def ptrs(values):
            p = (_vp * max(1, len(values)))(*values)
            keep.append(p)
            return ctypes.cast(p, _vp)

        R = self.R = _Run()
        R.n_units, R.n_cin, R.n_out, R.n_u, R.degree = len(units), n, st.n_out, nu, run.degree
        rw = [u.fmi_rw() for u in units]
        steps = [u.fmi_steps() for u in units]
        R.component, R.set_real = ptrs([r[0] for r in rw]), ptrs([r[1] for r in rw])
        R.do_step, R.get_state, R.set_state, R.free_state = (ptrs([s[i] for s in steps]) for i in range(4))
        counts = [len(lay.cin) for lay in st.layouts]
        R.cin_off = arr(np.concatenate([[0], np.cumsum(counts)]), np.intc)
        R.cin_pos = arr(np.concatenate([lay.cin for lay in st.layouts] + [[0]]), np.intc)
        R.cin_vr = arr(np.concatenate([r[3][lay.local_in] for r, lay in zip(rw, st.layouts)] + [[0]]), np.uintc)
        self.states = (_vp * len(units))()
        R.states = ctypes.cast(self.states, _vp)
        self.unit_seconds, self.unit_counts = np.zeros(len(units)), np.zeros(2 * len(units))
        R.unit_seconds, R.unit_counts = arr(self.unit_seconds), arr(self.unit_counts)
        self.plans = {}
        for name in ("pre", "full", "loop"):
            p = self.plans[name] = solver.plan_in_c(name)
            setattr(R, name, self._plan(p, arr))
        chart = st.cin_chart
        ang, tri = np.flatnonzero(chart.angles).astype(np.intc), chart.triples.ravel().astype(np.intc)
        R.na, R.m, R.ang, R.tri = len(ang), len(tri) // 3, arr(np.append(ang, 0), np.intc), arr(np.append(tri, 0), np.intc)
        R.unknowns, R.src = arr(np.append(st.unknowns, 0), np.intc), arr(np.append(st.cin_src[st.unknowns], 0), np.intc)
        R.u_angle = arr(np.append(st.cin_angle[st.unknowns], False), np.uint8)
        for f, a in (("Y", solver.Y), ("Ucur", solver.Ucur), ("z", solver.z), ("zscale", solver.zscale),
                     ("H", sens.H), ("M_max", sens.M_max), ("H_valid", sens.H_state), ("U", run.U), ("hist_t", run.hist_t),
                     ("hist_U", run.hist_U), ("hist_n", run.hist_n)):
            setattr(R, f, a.ctypes.data)                # the Python's own arrays, kept in place
            keep.append(a)
        R.rtol, R.atol, R.refresh_cost, R.max_iter = solver.rtol, solver.atol, solver._refresh_cost, solver.max_iter
        self.r, self.err = np.zeros(max(1, nu)), np.zeros(max(1, nu))
        self.ubar = np.zeros(max(1, n))
        self.counters, self.fail = np.zeros(5), np.zeros(8)
        self.work = np.zeros(14 * n + 8 * nu + n * n + 1)
        R.r, R.err, R.ubar, R.counters, R.fail, R.work = (arr(a) for a in (self.r, self.err, self.ubar, self.counters,
                                                                            self.fail, self.work))
        R.cin_src = arr(np.append(st.cin_src, 0), np.intc)
        unknown = np.zeros(n + 1, np.uint8)
        unknown[st.unknowns] = 1
        R.cin_unknown = arr(unknown)
        refresh = _refresh_plan(run, arr)
        if refresh:                             # M and H in C: over a copy of M the Python keeps equal
            sens.Mc = np.zeros((n, n)) if sens.M is None else sens.M.copy()
            R.n_refresh, R.refresh = len(refresh), ctypes.cast((_Refresh * len(refresh))(*refresh), _vp)
            keep.append(R.refresh)
            R.Mc, R.M_fresh = arr(sens.Mc), arr(sens.M_fresh)
        self._raised = None
        R.loop_jacobian = self._loop_cb = LOOP_JACOBIAN(self._loop_jacobian)
        R.step_jacobian = self._step_cb = STEP_JACOBIAN(self._step_jacobian)
        self.use(jac)
        self._ref = ctypes.byref(R)

    def use(self, jac):
        """The step Jacobian ``jac`` (a :class:`~.step_jacobian.StepJacobian`, dense) from now on."""
        assert jac.J.flags.f_contiguous and jac.Jinv.flags.f_contiguous, "the C reads J and Jinv by columns"
        self.R.J, self.R.Jinv, self.R.jac = jac.J.ctypes.data, jac.Jinv.ctypes.data, jac.jac.ctypes.data

    @staticmethod
    def _plan(p, arr):
        out = _Plan()
        if not p:                               # no unit call in it
            out.n_ops = 0
            out.runs = arr(np.zeros(1))
            return out
        out.n_ops, out.op = len(p._ops), p._ops.ctypes.data
        out.component, out.set_real, out.get_real = (ctypes.cast(x, _vp) for x in p._keep[2])
        out.vr, out.idx, out.z, out.buf = p._vr.ctypes.data, p._idx.ctypes.data, p._z.ctypes.data, p._buf.ctypes.data
        out.seconds, out.status, out.runs = p.seconds.ctypes.data, ctypes.addressof(p._status), p.runs.ctypes.data
        return out

    # -- the callbacks: what stays in Python ------------------------------------------------------
    def _loop_jacobian(self, measure):
        try:
            if measure:
                self.run.solver.refresh_M()
            self.run.sens.form_H()
        except np.linalg.LinAlgError:           # I - M singular: H not formed, the C says so
            pass
        except BaseException as e:              # noqa: BLE001 -- raised again after the C returns
            self._raised = e
            return 1
        return 0

    def _step_jacobian(self, t, h):
        try:
            saved = [ctypes.c_void_p(s) for s in self.states]
            self.run.measure_P(saved, self.ubar, t, h, self.run.solver.Y)
        except BaseException as e:              # noqa: BLE001
            self._raised = e
            return 1
        return 0

    # -- the base steps ----------------------------------------------------------------------------
    def steps(self, t, H, n, tol, scale):
        """:meth:`~.run.Run.steps` in C: the first base step from ``run.start_states``."""
        run = self.run
        for j, s in enumerate(run.start_states):
            self.states[j] = s.value
        run.start_states = None
        marks = [u.logged for u in run.units]
        scale = np.ascontiguousarray(scale, dtype=float)
        status = self._fn(self._ref, _dbl(t), _dbl(H), _int(n), _dbl(tol), clib.address(scale))
        if status != OK:
            self._raise(status, marks)
        run.t = t + H
        np.copyto(run.Y, run.solver.Y)

    def flush(self):
        """Count the base steps, iterations and unit calls so far in the run's counters and its
        units' (as the Python base steps count them)."""
        run, c = self.run, self.counters
        run.base_steps += int(c[0])
        run.iterations += int(c[1])
        run.solver.solves += int(c[2])
        run.solver.iterations += int(c[3])
        run.sens.refreshes += int(c[4])
        c[:] = 0.0
        for j, u in enumerate(run.units):
            u.seconds += float(self.unit_seconds[j])
            u.calls += int(self.unit_counts[2 * j])
            u.steps += int(self.unit_counts[2 * j + 1])
        self.unit_seconds[:] = 0.0
        self.unit_counts[:] = 0.0

    def _raise(self, status, marks):
        f = self.fail
        if status == CALLBACK:
            e, self._raised = self._raised, None
            raise e
        if status == STALLED:
            raise NoConvergence(f"the coupling iteration did not converge at t={f[0]:.9g} s, step {f[1]:.3g} s: "
                                f"predicted change {f[2]:.3g} (> {f[3]:.3g}) after {int(f[4])} steps")
        if status == SINGULAR:
            raise NoConvergence(f"the coupling iteration's step Jacobian is singular at t={f[7]:.9g} s")
        if status == LOOP:
            nu = len(self.run.st.unknowns)
            self.run.solver._fail(f[7], self.r[:nu].copy(), self.err[:nu].copy(), int(f[1]), LOOP_FAILURES[int(f[0])])
        if status == FMI:
            if f[1] >= 0:
                j = int(f[0])
                u = self.run.units[j]
                raise u._failure(FMI_FUNCTIONS[int(f[1])], marks[j], f"status {int(f[2])}")
            plan = self.plans[("pre", "full", "loop")[int(f[3])]]
            u = plan.units[int(plan._ops[int(f[0]), 0])]
            raise u._failure("fmi2SetReal" if f[1] == -1 else "fmi2GetReal", marks[self.run.units.index(u)],
                             f"status {int(f[2])}")
        raise SolverError(f"the base steps in C failed ({status})")
