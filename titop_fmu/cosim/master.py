"""The master: macro intervals over the runs, their extrapolation, step-size control and
output; the scheme as a whole is described here.

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
   unit per coupling input, in one call where the unit gives trial steps),
   kept across steps, rescaled with ``h`` and corrected by Broyden updates.
   Swapping the ends and stepping back gives the
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
   tolerance (error per unit step): intervals above ``REJECT`` (1.5) times
   their share are redone, the next ``H`` is ``0.9 (share / error)^(1/2k)`` times
   the last. A coupling iterate is accepted once its predicted change is within
   the share.

4. **Output.** The macro intervals end on the output grid points they reach;
   values between are interpolated, quintic Hermite when the observer gives
   first and second derivatives, local Lagrange of degree 5 otherwise.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from .charts import Chart
from .dense import dense
from .numerics import error_factor, extrapolation_weights, single_threaded_blas
from .options import Options, Stats
from .run import NoConvergence
from .structure import Structure

#: an interval whose estimated error exceeds its share of the tolerance this many times is redone
REJECT = 1.5
#: largest growth of the macro step from one interval to the next
GROWTH = 2.0
#: the run stops with an error below this macro step [s]
H_MIN = 1e-9
#: relative: an event this close after the last is taken without a step
EVENT_GAP = 1e-12
#: a run at the default tolerance warns when its global error bound (that of the next-lower
#: order) exceeds this many times the tolerance: 13 times on the balloon, whose actual error is
#: 0.05 times tol; 6 times on examples/spacecraft.toml (0.2 times); 700 times on the same with
#: light links, whose error is 33 times tol. At tol 5e-8 the balloon's bound is 94 times tol,
#: its error 0.08 times: the limit scales with the tolerance as the bound does (:meth:`Master.warning`)
WARN_TABLEAU = 30.0


def output_grid(t0, t_stop, dt) -> np.ndarray:
    """``t0, t0 + dt, ...`` up to ``t_stop``, and ``t_stop`` itself when it is not on it."""
    n = int(math.floor((t_stop - t0) / dt + 1e-9))
    grid = t0 + dt * np.arange(n + 1)
    return np.append(grid, t_stop) if t_stop - grid[-1] > 1e-9 * dt else grid


@dataclass
class Result:
    t: np.ndarray                    # output grid
    values: np.ndarray               # (len(t), n observed)
    labels: list
    stats: Stats
    mesh: np.ndarray                 # accepted interval ends
    mesh_values: np.ndarray          # (len(mesh), n) or (len(mesh), 3, n) with derivatives
    ratio: np.ndarray                # per interval: estimated error / its share of tol
    warning: str = ""                # when the run's own estimates say its error may exceed tol


class Master:
    """Step-size control, extrapolation and output over the runs held by ``steppers``
    (objects with :class:`Stepper`'s two-phase interface; run 0 is the coarsest)."""

    def __init__(self, st: Structure, steppers: list, opt: Options):
        # a stepper in this process computes when started: the workers' are started before it
        self.st, self.opt = st, opt
        self.steppers = [s for s in steppers if not s.in_process] + [s for s in steppers if s.in_process]
        self.sequence = tuple(opt.sequence)
        self.order = 2 * len(self.sequence)
        self.degree = self.order - 1
        self.weights = extrapolation_weights(self.sequence)
        self.sub_weights = extrapolation_weights(self.sequence[1:])     # all runs but the coarsest
        self.kappa = error_factor(self.sequence)
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
        self._event = math.inf          # the units' next time event (protocol.Unit.next_event)
        self.at_event = False           # the last advance ended on an event: its right limits follow
        self._since = 0.0               # the start of the last interval
        self._event_restart = False     # after an event: the step size held until controlled
        self._rec = None
        self._pending = []              # accepted intervals not settled yet: (rec, U)
        self._mesh = None               # in simulate: the observed values of the intervals settled
        f = opt.observe
        self._observe = (lambda rec: rec) if f is None else f
        self.on_attempt = None          # f(H) when an interval is retried shorter (progress display)
        self.labels = list(opt.labels) if opt.labels is not None else [lab for lab, _ in st.recorded]
        # the observed values' angles and attitudes: the recorded outputs' (the units say which),
        # or the observer's (the options say)
        self.chart = st.rec_chart if f is None else Chart(len(self.labels), opt.angles, opt.attitudes or ())

    def _all(self, method, *args):
        err = None
        for s in self.steppers:
            if s.in_process and self._pending:      # the workers compute: settle meanwhile
                try:
                    self._settle()
                except Exception as e:              # raised once every stepper has answered
                    err = e
            s.start(method, *args)
        out = {}
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

    def _settle(self):
        """What the accepted intervals leave to compute that the step control does not need:
        their global error bound (:attr:`Stats.tableau`) and, in :meth:`simulate`, their
        observed values, appended in order. Called while the workers compute the next interval
        (the master's process holds the finest run, the lighter load), at the end of a run and
        before a :meth:`save`."""
        for rec, U in self._pending:
            self._E = self.tableau_error(U)
            if self._E.size:
                self.stats.tableau = max(self.stats.tableau, float(np.max(np.abs(self._E))))
            if self._mesh is not None:
                self._mesh.append(self.extrapolated(rec))
        self._pending.clear()

    def _absorb(self, res):
        self._rec = {i: rec for i, (_, rec, _, _) in res.items()}
        self._U = {i: U for i, (_, _, U, _) in res.items()}
        for U in self._U.values():
            np.maximum(self.scale, np.abs(U), out=self.scale)

    # -- start ----------------------------------------------------------------------------------
    def initialize(self, t0=0.0):
        """Consistent outputs at ``t0``: every run's loops solved at the initial states."""
        self.t = t0
        self._absorb(self._all("initialize", t0))
        if self.st.event_units:                 # the events at the start: samples at t0
            self._absorb(self._all("event", t0))
        self.H = self.opt.h0 or min(self.opt.h_max, 1e-3)
        self._restart()
        return self.extrapolated()

    def _restart(self):
        """A start, at ``t0`` or after an event: the step control off until the history is
        long enough again (the coupling inputs may have jumped). After an event the step size
        stays what the control last chose, without growing, until then (examples/slew.toml over
        5 s, in-process units, median of 3 alternated in one run: the same error as restarting
        from ``h0``, 0.63 of its wall time)."""
        self._E = self.tableau_error()
        self._n_hist = 1
        self._event = self._all("next_event", self.t)["event"] if self.st.event_units else math.inf

    def tableau_error(self, U=None):
        """``T(all runs) - T(all but the coarsest)`` on the coupling inputs (``U``: per run;
        default the current ones), scaled by their magnitudes: an estimate of the global error
        of the next-lower-order extrapolation, an upper bound of the result's."""
        U = self._U if U is None else U
        k = len(self.sequence)
        if k < 2:
            return np.zeros(int(self.st.cin_state.sum()) or self.st.n_cin)
        chart, ref = self.st.cin_chart, U[k - 1]
        E = (chart.offset(self.weights, [U[i] for i in range(k)], ref)
             - chart.offset(self.sub_weights, [U[i] for i in range(1, k)], ref)) / self.scale
        # on the coupling inputs that are functions of the states alone (poses, twists): the
        # loop variables carry the loop solver's residual, noise that does not shrink with H
        return E[self.st.cin_state] if self.st.cin_state.any() else E

    def extrapolated(self, rec=None):
        """The observed values now (or of the runs' recorded outputs ``rec``), extrapolated over
        the runs: ``(n,)``, or ``(3, n)`` with first and second time derivatives when the
        observer gives them."""
        rec = self._rec if rec is None else rec
        vals = [np.asarray(self._observe(rec[i]), dtype=float) for i in range(len(self.sequence))]
        ref = vals[-1]
        if ref.ndim == 1:
            return self.chart.combine(self.weights, vals, ref)
        values = ref + sum(w * (v - ref) for w, v in zip(self.weights, vals))      # derivatives as they are
        values[0] = self.chart.combine(self.weights, [v[0] for v in vals], ref[0])    # values on the chart
        return values

    # -- macro intervals ------------------------------------------------------------------------
    def _controlled(self):
        return not self.opt.fixed and not self.opt.hold and self._n_hist >= self.degree + 1

    def interval(self, H):
        """Try ``[t, t + H]``; ``(accepted, ratio)``, ratio = estimated error / its share."""
        opt = self.opt
        share = opt.tol * H / self.span
        abort = REJECT * share / self.kappa if self._controlled() else math.inf
        try:
            res = self._all("interval", self.t, H, share, self.scale, abort)
        except NoConvergence as e:
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
        accepted = not self._controlled() or ratio <= REJECT
        if accepted:
            for s in self.steppers:         # a worker's goes with its next command: no round trip
                s.commit_later()
            self._absorb(res)
            self._pending.append((self._rec, self._U))                  # see _settle
        else:
            self._all("rollback")
        return accepted, ratio

    def next_H(self, H, ratio, rejected=False):
        """The next macro step after one of ``H`` with this error ratio; after a rejection it
        is always shorter (before the control starts too: a stalled first interval)."""
        opt = self.opt
        if opt.fixed or opt.hold:
            return H
        if not self._controlled() and not rejected:
            return H if self._event_restart else min(opt.h_max, H * GROWTH)
        fac = 0.9 * max(ratio, 1e-10) ** (-1.0 / self.order)       # error per unit step ~ H^order
        return float(min(opt.h_max, max(H_MIN, H * min(GROWTH, max(0.2, fac)))))

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
        """One accepted macro interval towards ``t_end``; returns its end time. An interval
        ends on the units' next time event, if before ``t_end``: then :attr:`at_event`, the
        recorded values are the left limits there and :meth:`event` gives the right ones."""
        opt = self.opt
        self._since = self.t
        self.at_event = self._event <= t_end
        if self.at_event and self._event - self.t <= EVENT_GAP * max(1.0, abs(self.t)):
            # an event a few ulps after the last (two sample clocks: 0.3 and 3 x 0.1): no step,
            # the values there once more as its left limits, each clock sampled at its instant
            self._pending.append((self._rec, self._U))
            self.t = self._event
            return self.t
        t_end = min(t_end, self._event)
        H = self._fit(min(self.H, t_end - self.t), t_end)
        while True:
            if H < H_MIN:
                raise SolverError(f"the macro step fell below h_min = {H_MIN:g} s at t={self.t:.9g} s"
                                  + (f": {self._why}" if self._why else ""))
            accepted, ratio = self.interval(H)
            if accepted:
                break
            self.stats.rejected += 1
            H = self._fit(self.next_H(H, ratio, rejected=True), t_end)
            if self.on_attempt is not None:
                self.on_attempt(H)
        self._n_hist += 1
        self._event_restart = self._event_restart and not self._controlled()
        st = self.stats
        st.macro_steps += 1
        st.max_ratio = max(st.max_ratio, ratio)
        st.h_min_used, st.h_max_used = min(st.h_min_used, H), max(st.h_max_used, H)
        self.t += H
        if self.at_event and self.t >= t_end - 1e-9 * H:
            self.t = t_end                      # exactly on the event
        else:
            self.at_event = False
        if not (opt.fixed or opt.hold):
            # an interval cut short by an output point or an event does not shrink the next one
            H_next = self.next_H(max(H, self.H) if self._aligned or self.at_event else H, ratio)
            self.H = float(max(H_MIN, H_next))
        self._last_ratio = ratio
        return self.t

    def event(self):
        """The units' time events at the end of the interval just taken (:attr:`at_event`):
        their updates, the loops solved again (:meth:`.run.Run.event`); the right limits
        recorded as a second point of the mesh at the same time, and a restart."""
        self._absorb(self._all("event", self.t, self._since))
        self._pending.append((self._rec, self._U))
        self._restart()
        self._event_restart = True

    # -- whole run -------------------------------------------------------------------------------
    def simulate(self, t_stop, output_interval=None, t0=0.0, progress=False, stop_requested=None):
        """Run from ``t0`` to ``t_stop``; values on the grid ``t0 + k * output_interval``
        (at the interval ends when ``None``). ``stop_requested()``, polled after every macro
        interval, ends the run there with :class:`KeyboardInterrupt` (the units left
        consistent, ready to terminate)."""
        start = time.perf_counter()
        self.grid = (t0, output_interval) if output_interval else None
        self.span = self.opt.span or (t_stop - t0)
        with single_threaded_blas():
            mesh_t, mesh_v, ratios = [t0], [self.initialize(t0)], [0.0]
        self._mesh = mesh_v                     # _settle appends the intervals' values
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=float(t_stop - t0), delay=0.5, unit="s(sim)", bar_format=(
                "{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}{postfix}]"))
            # shown with the bar's next update: a refresh of its own would print the bar before its
            # delay, a line that close() then leaves unfinished (it clears only bars it has shown)
            self.on_attempt = lambda H: bar.set_postfix_str(
                f"retrying t={self.t:.6g} s with H={H:.3g} s ({self.stats.rejected} rejected)", refresh=False)
        try:
            with single_threaded_blas():
                while self.t < t_stop - 1e-12 * max(1.0, abs(t_stop)):
                    if stop_requested is not None and stop_requested():
                        raise KeyboardInterrupt
                    mesh_t.append(self.advance(t_stop))
                    ratios.append(self._last_ratio)
                    if self.at_event:
                        self.event()
                        mesh_t.append(self.t)           # the right limits, at the same time
                        ratios.append(0.0)
                    if bar is not None:
                        bar.set_postfix_str("", refresh=False)
                        bar.update(self.t - t0 - bar.n)
        except BaseException:
            self._mesh = None                   # a stopped run has no values to collect
            raise
        finally:
            if bar is not None:
                self.on_attempt = None
                bar.close()
            self.stats.wall += time.perf_counter() - start
        with single_threaded_blas():
            self._settle()
        self._mesh = None
        self.collect_stats()
        mesh_t, mesh_v = np.array(mesh_t), np.array(mesh_v)
        if output_interval:
            grid = output_grid(t0, t_stop, output_interval)
            values = dense(mesh_t, mesh_v, grid, self.chart)
        else:
            grid, values = mesh_t, (mesh_v[:, 0] if mesh_v.ndim == 3 else mesh_v)
        return Result(grid, values, self.labels, self.stats, mesh_t, mesh_v, np.array(ratios), self.warning())

    def warning(self) -> str:
        """A warning when the global error bound (``Stats.tableau``, the error of the next-lower
        order) is well above what it is when the result meets ``tol``: an error source the step
        control does not see, typically a mode faster than the macro step resolves (a light body
        on a fast chain). With the result's error at ``tol`` (order ``q``), the next-lower order's
        is about ``tol^((q-2)/q)``: the limit is ``WARN_TABLEAU`` times ``tol`` at the default
        tolerance, and scales so."""
        tol = self.opt.tol
        limit = WARN_TABLEAU * tol * (Options.tol / tol) ** (2.0 / self.order)
        if len(self.sequence) < 2 or self.stats.tableau <= limit:
            return ""
        return (f"warning: the co-simulation error may exceed the tolerance {tol:g}: its global error bound "
                f"reached {self.stats.tableau:.2g}, {self.stats.tableau / limit:.0f} times what it is when the "
                f"tolerance is met; check with a smaller largest macro step (--dt-max) or the monolithic engine")

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
        self._settle()
        return dict(groups=self._all("save"), t=self.t, H=self.H, scale=self.scale.copy(),
                    n_hist=self._n_hist, rec=copy.deepcopy(self._rec), U=copy.deepcopy(self._U),
                    E=self._E.copy(), grid=self.grid, span=self.span, event=(self._event, self._event_restart))

    def restore(self, snap):
        """Back to a :meth:`save` point (the snapshot stays valid)."""
        self._settle()
        self._all("restore", snap["groups"])
        self.t, self.H, self.scale = snap["t"], snap["H"], snap["scale"].copy()
        self._n_hist, self._rec = snap["n_hist"], copy.deepcopy(snap["rec"])
        self._U, self._E = copy.deepcopy(snap["U"]), snap["E"].copy()
        self.grid, self.span, (self._event, self._event_restart) = snap["grid"], snap["span"], snap["event"]

    def terminate(self):
        """End the units, and the worker processes with them; also after a failure, and every
        one of them when Ctrl-C comes meanwhile (then raised)."""
        err = interrupt = None
        for s in self.steppers:
            try:
                s.terminate()
            except SolverError as e:
                err = err or e
            except KeyboardInterrupt as e:
                interrupt = interrupt or e
        if interrupt is not None:
            raise interrupt
        if err is not None:
            raise err
