"""One run of the whole system: the symmetric base step, its coupling iteration and the
measurement of its step Jacobian (:mod:`.step_jacobian`; scheme in :mod:`.master`)."""

from __future__ import annotations

import numpy as np

from . import core
from .core import NoConvergence
from .loop import LoopSolver, Sensitivities
from .numerics import lagrange_weights
from .options import Options
from .step_jacobian import StepJacobian
from .structure import Structure

#: floor of the coupling-iteration tolerance: the units' integration noise
NOISE = 1e-12
#: coupling iterations of a base step before it is declared stalled
MAX_ITERATIONS = 10
#: an iteration that leaves more than this part of the last one's predicted change is slow: the
#: step Jacobian is measured again (once per base step)
SLOW = 0.3


class Run:
    """One set of unit instances of the whole system, ``n`` base steps per macro interval."""

    def __init__(self, st: Structure, opt: Options, units, n, weight=1.0):
        """``opt`` resolved; the predictor's degree is ``opt.order - 1``."""
        self.st, self.opt, self.units, self.n, self.degree = st, opt, units, n, opt.order - 1
        self.weight, self.total_steps = weight, sum(opt.sequence)
        self.sens = Sensitivities(st)
        self.jac = StepJacobian(st.n_cin)
        self._test_jac = StepJacobian(st.n_cin)     # the local test's, at half the base step (test_steps)
        self.solver = LoopSolver(st, units, self.sens, rtol=opt.loop_rtol, atol=opt.loop_atol)
        self.t = 0.0
        # kept in place (the base steps in C, :mod:`.core`, use these arrays): the coupling inputs
        # and the outputs now; the predictor's history, its last hist_n[0] points, oldest first
        self.U = np.zeros(st.n_cin)
        self.Y = np.zeros(st.n_out)
        self.hist_t = np.zeros(self.degree + 1)
        self.hist_U = np.zeros((self.degree + 1, st.n_cin))
        self.hist_n = np.zeros(1)
        self._rec = np.array([g for _, g in st.recorded], dtype=int)
        self.base_steps = self.iterations = self.P_refreshes = 0
        self.start_states = None        # the units' states now, taken by a snapshot: the next base step's start
        self.core = core.made(self)     # the base steps in C, or None

    def recorded(self):
        return self.Y[self._rec].copy()

    def set_coupling(self, U):
        for u, lay in zip(self.units, self.st.layouts):
            if lay.cin.size:
                u.set_inputs(lay.local_in, U[lay.cin])

    def initialize(self, t0):
        self.t = t0
        Y, U = self.solver.solve(t0)
        np.copyto(self.Y, Y)
        np.copyto(self.U, U)
        self.solver.Ucur[:] = U
        self.hist_n[0] = 0
        self._remember(t0, U)

    def _remember(self, t, U):
        """The predictor's history with ``U`` at ``t`` appended (the oldest point dropped)."""
        n = int(self.hist_n[0])
        if n == len(self.hist_t):
            self.hist_t[:-1], self.hist_U[:-1] = self.hist_t[1:].copy(), self.hist_U[1:].copy()
            n -= 1
        self.hist_t[n], self.hist_U[n] = t, U
        self.hist_n[0] = n + 1

    def event(self, t, since=None):
        """The units' time events at ``t`` (:meth:`~.protocol.Unit.next_event`): those whose
        first event after ``since`` is ``t``, to the bit (every unit with time events when ``since`` is
        None: the start), in :attr:`Structure.event_units` order, each one's
        ``event_update`` followed by the loops solved again; the predictor's history restarts
        at ``t`` (the coupling inputs may jump there). Each unit samples its coupling inputs'
        values at ``t``, set on it first: a step leaves them at the step's mean (``ubar``), half
        a step behind, and a unit whose outputs do not read them is not given them by the loop solve."""
        for j in self.st.event_units:
            u, lay = self.units[j], self.st.layouts[j]
            if since is None or u.next_event(since) == t:
                if lay.cin.size:
                    u.set_inputs(lay.local_in, self.U[lay.cin])
                u.event_update(t)
                self.initialize(t)

    def predict(self, t):
        """Coupling inputs at ``t`` extrapolated from the last ``degree + 1`` points."""
        n = int(self.hist_n[0])
        base = self.hist_U[n - 1]
        if n == 1:
            return base.copy()
        return self.st.cin_chart.combine(lagrange_weights(self.hist_t[:n], t), self.hist_U[:n], base)

    # -- the base step ------------------------------------------------------------------------
    def steps(self, t, H, n, tol, scale):
        """``[t, t + H]`` in ``n`` equal base steps (in C where the run has its :attr:`core`)."""
        if self.core is not None:
            self.core.steps(t, H, n, tol, scale)
            return
        for s in range(n):
            ts = t + H * s / n
            self.base_step(ts, t + H * (s + 1) / n - ts, tol, scale)

    def test_steps(self, t, H, tol, scale):
        """``[t, t + H]`` in twice the run's base steps: the local test (:meth:`.master.Master.local_error`),
        with a step Jacobian of its own (kept at its base step from one interval to the next: the
        run's own, at the run's base step, would be rescaled and inverted twice per interval)."""
        self.jac, self._test_jac = self._test_jac, self.jac
        if self.core is not None:
            self.core.use(self.jac)
        try:
            self.steps(t, H, 2 * self.n, tol, scale)
        finally:
            self.jac, self._test_jac = self._test_jac, self.jac
            if self.core is not None:
                self.core.use(self.jac)

    def base_step(self, t, h, tol, scale):
        """Advance from ``t`` to ``t + h``, iterating until the predicted change of the
        result is below ``tol``."""
        st, opt = self.st, self.opt
        units = self.units
        U0 = self.U
        saved, self.start_states = self.start_states, None
        if opt.hold:
            self.set_coupling(U0)
            for u in units:
                u.do_step(t, h)
            Y, G = self.solver.solve(t + h, z0=self.solver.z)
            self.base_steps += 1
            self.iterations += 1
            self.t = t + h
            np.copyto(self.U, G)
            np.copyto(self.Y, Y)
            return
        own = saved is None                 # else the snapshot's, freed with it
        if own:
            saved = [u.get_state() for u in units]
        z = self.predict(t + h)
        chart = st.cin_chart
        w = 1.0 / scale
        rho = max(1e-3, self.jac.norm(h)) if self.jac.ready else 1.0
        loop_tol = 0.1 * tol / rho          # the loop only as exact as the iteration sees it (through dG/dz)
        e_prev = z_prev = G_prev = None
        refreshed = False
        try:
            for k in range(MAX_ITERATIONS + 1):
                ubar = chart.plus(U0, 0.5 * chart.minus(z, U0))
                for u, lay, s in zip(units, st.layouts, saved):         # from the saved states again
                    u.step(t, h, lay.local_in if lay.cin.size else None, ubar[lay.cin], s if k else None)
                # the loop only as exact as the coupling iteration can see (through dG/dz)
                Y, G = self.solver.solve(t + h, z0=z[self.solver.unknowns], tol=loop_tol, weights=w)
                self.iterations += 1
                r = chart.minus(G, z)
                if not r.size:
                    break
                if not self.jac.ready:
                    self.measure_P(saved, ubar, t, h, Y)
                if z_prev is not None:
                    dG = chart.minus(G, G_prev)
                    # a secant pair above the loop-solve and integration noise only
                    if float((np.abs(dG) * w).max()) > 10 * loop_tol + 1e3 * NOISE \
                            and not self.jac.update(chart.minus(z, z_prev), dG, w):
                        self.measure_P(saved, ubar, t, h, Y)            # its low-rank term full
                        refreshed = True
                corr = self.jac.correction(h, r)
                # the predicted change of the coupling outputs, and at least the held inputs' own
                # change: a unit whose outputs no coupling input reads (a leaf; a body driven by a
                # signal) shows its error only in the recorded outputs, which dG/dz does not see;
                # not on the loop unknowns, whose residual is the loop solver's noise
                held = np.abs(r) * w
                held[self.solver.unknowns] = 0.0
                e = max(float((np.abs(corr - r) * w).max()), 0.5 * float(held.max(initial=0.0)))
                if k:       # the last correction's real effect against its prediction
                    e *= max(1.0, float((np.abs(dG) * w).max()) / max(e_prev, 10 * loop_tol + 1e3 * NOISE))
                if e <= tol or (k >= 2 and e <= 100 * NOISE and e > 0.3 * e_prev):
                    break
                slow = e_prev is not None and e > SLOW * e_prev and e > 1e3 * NOISE
                if k == MAX_ITERATIONS or (slow and refreshed and e > 0.5 * e_prev):
                    raise NoConvergence(
                        f"the coupling iteration did not converge at t={t:.9g} s, step {h:.3g} s: predicted "
                        f"change {e:.3g} (> {tol:.3g}) after {k + 1} steps")
                if slow and not refreshed:          # a fresh step Jacobian, once per base step
                    self.measure_P(saved, ubar, t, h, Y)
                    corr = self.jac.correction(h, r)
                    refreshed = True
                e_prev, z_prev, G_prev = e, z, G
                z = chart.plus(z, corr)
        finally:
            if own:
                for u, s in zip(units, saved):
                    u.free_state(s)
        self.base_steps += 1
        self.t = t + h
        np.copyto(self.U, G)
        np.copyto(self.Y, Y)
        self._remember(self.t, G)

    def measure_P(self, saved, ubar, t, h, Y):
        """Step sensitivities: per unit and coupling input, one step of that unit with the
        input perturbed from the saved state, outputs read with the current end inputs (in
        one call where the unit gives trial steps). Every unit is left as it was found:
        stepped, with the end inputs."""
        st = self.st
        n = st.n_cin
        self.solver.refresh_M(full=True)         # the feedthrough at the end of the step, all columns
        P = np.zeros((n, n))
        Ucur = self.solver.Ucur
        for j, (u, lay) in enumerate(zip(self.units, st.layouts)):
            ks, rows, inv = lay.cin, lay.rows, lay.of_row
            if not ks.size or not rows.size:
                continue
            y0 = Y[st.out_offset[j] + lay.outputs][inv]
            end = Ucur[ks].copy()
            ub, tri = ubar[ks], lay.chart_in.in_triple
            d = np.where(tri, 1e-4, 1e-4 * np.maximum(1.0, np.abs(ub)))
            held = np.repeat(ub[:, None], len(ks), axis=1)
            held[np.diag_indices(len(ks))] += d
            for c in np.flatnonzero(tri):                 # along a rotation-vector axis
                e = np.zeros(len(ks))
                e[c] = d[c]
                held[:, c] = lay.chart_in.plus(ub, e)
            stepped = u.get_state()
            u.set_state(saved[j])
            if st.types[j].trial_steps:
                Yp = u.trial_steps(t, h, lay.local_in, held, end, lay.outputs)
            else:
                Yp = np.empty((len(lay.outputs), len(ks)))
                for c in range(len(ks)):
                    if c:
                        u.set_state(saved[j])
                    u.set_inputs(lay.local_in, held[:, c])
                    u.do_step(t, h)
                    u.set_inputs(lay.local_in, end)
                    Yp[:, c] = u.get_outputs(lay.outputs)
            Yp = Yp[inv]
            if lay.chart_out.plain:
                dY = Yp - y0[:, None]
            else:
                dY = np.column_stack([lay.chart_out.minus(Yp[:, c], y0) for c in range(len(ks))])
            P[np.ix_(rows, ks)] = dY / d
            u.set_state(stepped)
            u.free_state(stepped)
        self.jac.reset(P, self.sens, h)
        self.P_refreshes += 1

    # -- save / restore -------------------------------------------------------------------------
    def snapshot(self, full=False):
        snap = dict(states=[u.get_state() for u in self.units], t=self.t, U=self.U.copy(), Y=self.Y.copy(),
                    hist=(self.hist_t.copy(), self.hist_U.copy(), self.hist_n.copy()),
                    z=self.solver.z.copy(), zscale=self.solver.zscale.copy())
        if full:            # the Jacobians too: a restart then repeats the same iterations
            snap["jac"] = self.sens.snapshot(), self.jac.snapshot()
        return snap

    def restore(self, snap):
        self.start_states = None
        for u, s in zip(self.units, snap["states"]):
            u.set_state(s)
        self.t = snap["t"]
        for mine, saved in zip((self.U, self.Y, self.hist_t, self.hist_U, self.hist_n, self.solver.z,
                                self.solver.zscale), (snap["U"], snap["Y"], *snap["hist"], snap["z"], snap["zscale"])):
            np.copyto(mine, saved)
        self.solver.Ucur[:] = self.U          # the units' inputs are part of their states
        if "jac" in snap:
            sens, jac = snap["jac"]
            self.sens.restore(sens)
            self.jac.restore(jac)

    def free(self, snap):
        if self.start_states is snap["states"]:
            self.start_states = None
        for u, s in zip(self.units, snap["states"]):
            u.free_state(s)
