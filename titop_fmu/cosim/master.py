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
   ``n_1 < .. < n_k`` base steps (default ``1, 2, 3, 4``: order 8); at the interval
   ends their recorded outputs are combined by Aitken-Neville extrapolation in
   ``(H/n)^2`` to ``H -> 0``. The runs never exchange states (the FMUs keep
   them opaque): this is global extrapolation, valid on any mesh the runs
   share. The runs are independent, so they can run in parallel processes.

3. **Error estimate, step-size control.** What ``tol`` holds is the *controlled
   quantities*: every observed value (the recorded outputs, or the observer's),
   relative to its range so far or absolute below one unit (an angle's error
   absolute), and every coupling input that is a function of the states alone,
   relative to its largest magnitude or absolute below one. The extrapolation
   tableau's columns at the interval ends, ``D_j = T(runs 1..j+1) - T(runs
   2..j+1)``, are global error estimates of the orders ``2, 4, .., 2k - 2``; the
   top one, ``D_{k-1}``, estimates the error of the next-lower-order result ``T(runs
   2..k)`` as long as the tableau is in its asymptotic range. The result's error is
   that error plus ``D_{k-1}`` (``T(all) - exact = (T(2..k) - exact) + D_{k-1}``), so
   the run's printed estimate (:attr:`Stats.error_estimate`) is the largest
   ``|D_{k-1}|`` so far plus the accepted intervals' local errors at that level (below)
   summed: the sum bounds the next-lower order's error where the errors made do not
   grow (a lightly damped mode carries its phase errors on; there the tableau is out of
   its asymptotic range: the gimbal of ``examples/spacecraft_gimbal.toml``, 2.4e-6 off
   with the top column 2.0e-6), the top column where they grow and the tableau
   converges. Where the top column is above :data:`ASYMPTOTIC` (a fifth) of the one
   below over the last :data:`RECENT` intervals, the extrapolation gains too little for its order to hold (a chaotic
   system's errors past their linear range: a tumbling chain, 1.6e-2 off with the
   top column 1.8e-3 and the one below 2.7e-2): that interval counts with the column
   below, the error of a result two orders lower. A global estimate carries the errors made earlier, as the system
   propagates them, and cannot steer the step: the step control measures the local
   error instead.
   Run 0 takes its interval twice, as one base step and as two half steps from
   the same states: the difference is the base step's local error (order 2,
   ``H^3``), with everything that makes it (the units' own dynamics under held
   inputs included: a light body's fast mode that the coupling inputs do not
   show). Scaled per controlled quantity by the tableau's ratio ``max|D_{k-1}| /
   max|D_1|`` over the last ``RECENT`` intervals (the local errors of two orders in the
   proportion of their global errors), it is the local error at the level of the printed
   estimate, one order below the result (before the first accepted interval there are no
   columns to scale it by: it is the base step's, and the step follows that order). It is held to its share ``tol * H / span`` of the tolerance
   (error per unit step), never below ``ROUNDING`` (the quantities are scaled to order
   one, and two runs of a step differ by a few ulps however short it is: a share below
   it made a short span's first steps fall to ``h_min``): intervals above ``REJECT`` (1.5) times their share are
   redone, the next ``H`` is ``0.9 (share / error)^(1/(2k-2))`` times the last (``^(1/2)`` before
   the first accepted interval). A
   coupling iterate is accepted once its predicted change is within the share.
   (Measured and not taken: the earlier estimate, the effect of the predictor's
   error through the step Jacobian times an Euler-Maclaurin factor, missed the
   local error of a light body by three to four orders of magnitude; increments of
   the tableau's columns carry the propagation of the errors already made and do
   not shrink with ``H``; a global controller fed by them shrank the step when
   errors made earlier grew. ``docs/master.md`` gives the figures.)

4. **Output.** The macro intervals end on every output grid point, and values
   between are not interpolated, unless the observer gives first and second
   derivatives: then an interval may span several output points, the values
   between being quintic Hermite interpolations.
"""

from __future__ import annotations

import collections
import copy
import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from .charts import Chart
from .dense import dense
from .numerics import extrapolation_weights, single_threaded_blas, tableau_columns
from .options import Options, Stats
from .run import NoConvergence
from .structure import Structure

#: an interval whose estimated error exceeds its share of the tolerance this many times is redone
REJECT = 1.5
#: the least share of the tolerance an interval is held to: 64 ulps of the scaled quantities,
#: whose one step and two half steps differ by rounding (measured: up to 5 ulps) once the step is
#: short enough
ROUNDING = 64 * np.finfo(float).eps
#: the local error is scaled by the tableau's columns at the ends of this many last intervals
#: (their largest): not over the whole run, where a kink's columns, out of their asymptotic
#: proportion, held a PID loop's steps near 2e-5 s for the rest of it at --tol 1e-9
RECENT = 16
#: a tableau whose top column is above this part of the column below (their largest over the last
#: RECENT intervals) is out of its asymptotic range there: the estimate takes the column below (see
#: the module docstring, 3.)
ASYMPTOTIC = 0.2
#: largest growth of the macro step from one interval to the next
GROWTH = 2.0
#: the run stops with an error below this macro step [s]
H_MIN = 1e-9
#: relative: an event this close after the last is taken without a step
EVENT_GAP = 1e-12


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
    ratio: np.ndarray                # per interval: estimated local error / its share of tol
    warning: str = ""                # when the run's own estimate says its error may exceed tol


class Master:
    """Step-size control, extrapolation and output over the runs held by ``steppers``
    (objects with :class:`Stepper`'s two-phase interface; run 0 is the coarsest)."""

    def __init__(self, st: Structure, steppers: list, opt: Options):
        # a stepper in this process computes when started: the workers' are started before it
        self.st, self.opt = st, opt
        self.steppers = [s for s in steppers if not s.in_process] + [s for s in steppers if s.in_process]
        self.sequence = tuple(opt.sequence)
        self.order = 2 * len(self.sequence)
        # the order in H of the last interval's error ratio (next_H, set by interval): the level's,
        # 2k - 2, but 2 (the base step's local error per unit step) before the first accepted interval
        self._ratio_order = max(2, self.order - 2)
        self.weights = extrapolation_weights(self.sequence)
        self._columns = tableau_columns(self.sequence)
        self.stats = Stats(workers=opt.workers)
        self.scale = np.ones(st.n_cin)           # the coupling inputs' largest magnitudes (at least 1)
        self._cs = np.flatnonzero(st.cin_state)        # the coupling inputs controlled: functions of the states
        self._lo = self._hi = self.obs_scale = None     # the observed values' range so far, and their scale
        self._top = 0.0                 # the largest global estimate from the tableau so far (see _estimate)
        self._Drecent = collections.deque(maxlen=RECENT)   # the columns |D_j| at the last intervals' ends
        self._local_sum = 0.0           # the accepted intervals' local errors, summed (see _estimate)
        self.t = 0.0
        self.H = None
        self.span = 1.0
        self.grid = None                # (t0, output interval): intervals end on the output points
        self._aligned = False
        self._hermite = False           # the observed values come with derivatives: outputs between mesh points are Hermite
        self._last_ratio = 0.0
        self._why = ""
        self._event = math.inf          # the units' next time event (protocol.Unit.next_event)
        self.at_event = False           # the last advance ended on an event: its right limits follow
        self._since = 0.0               # the start of the last interval
        self._rec = self._obs = None    # per run: its recorded outputs, what the observer makes of them
        self._pending = []              # accepted intervals not settled yet: their observations per run
        self._mesh = None               # in simulate: the observed values of the intervals settled
        f = opt.observe
        self._observe = (lambda rec: rec) if f is None else f
        self.on_attempt = None          # f(H) when an interval is retried shorter (progress display)
        self.labels = list(opt.labels) if opt.labels is not None else [lab for lab, _ in st.recorded]
        # the observed values' angles and attitudes: the recorded outputs' (the units say which),
        # or the observer's (the options say)
        self.chart = st.rec_chart if f is None else Chart(len(self.labels), opt.angles, opt.attitudes or ())
        # the observed values controlled: the observer's, or the recorded outputs that are functions
        # of the states (those that depend on the loops carry their solver's residual, which the
        # coupling iterations' tolerance sets, not H; they follow the states to the same order)
        self._ys = np.arange(len(self.labels)) if opt.observe is not None else np.flatnonzero(st.rec_state)

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
        """What the accepted intervals leave to compute that the step control does not need: in
        :meth:`simulate`, their observed values, extrapolated and appended in order. Called while
        the workers compute the next interval, at the end of a run and before a :meth:`save`."""
        for obs in self._pending:
            if self._mesh is not None:
                self._mesh.append(self.extrapolated(obs))
        self._pending.clear()

    def _observations(self, res):
        """What the observer makes of each run's recorded outputs in ``res``."""
        return {i: np.asarray(self._observe(res[i][0]), dtype=float) for i in range(len(self.sequence))}

    def _absorb(self, res, obs):
        """An accepted interval's (or the start's) results and their observations: the runs'
        recorded outputs and coupling inputs, the scales, the tableau's columns and the error
        estimate."""
        k = len(self.sequence)
        self._rec = {i: res[i][0] for i in range(k)}
        self._U = {i: res[i][1] for i in range(k)}
        self._obs = obs
        for U in self._U.values():
            np.maximum(self.scale, np.abs(U), out=self.scale)
        y = self._values(self._obs[k - 1])
        if self._lo is None:
            self._lo, self._hi = y.copy(), y.copy()
        np.minimum(self._lo, y, out=self._lo)
        np.maximum(self._hi, y, out=self._hi)
        self.obs_scale = np.maximum(1.0, self._hi - self._lo)
        self.obs_scale[self.chart.angles | self.chart.in_triple] = 1.0     # an angle's error is absolute
        if k > 1:
            A = np.abs(np.array(self.columns()))
            self._Drecent.append(A)
            top = float(A[-1].max(initial=0.0))
            if k > 2:
                # out of the asymptotic range over the last intervals (not this one alone: the
                # columns oscillate, and one whose crossing of zero makes the ratio large is no sign)
                recent = np.max(self._Drecent, axis=0)
                if recent[-1].max(initial=0.0) > ASYMPTOTIC * recent[-2].max(initial=0.0):
                    top = max(top, float(A[-2].max(initial=0.0)))
            self._top = max(self._top, top)
        self._estimate()

    def _estimate(self):
        """The printed global-error estimate (:attr:`Stats.error_estimate`, see the module
        docstring, 3.): the largest top column ``|D_{k-1}|`` so far (``|D_{k-2}|`` where the tableau
        is out of its asymptotic range) plus the accepted intervals' local errors summed."""
        if len(self.sequence) > 1:
            self.stats.error_estimate = max(self.stats.error_estimate, self._top + self._local_sum)

    @staticmethod
    def _values(obs):
        """Observed values without their derivatives."""
        return obs[0] if obs.ndim == 2 else obs

    def _controlled(self, U, obs, other_U=None, other_obs=None):
        """``U (-) other_U`` and ``obs (-) other_obs`` (the differences on the charts; without the
        others, the sums ``sum_i w_i (x_i (-) x_last)`` of ``U``, ``obs`` given as ``(weights,
        values)``), scaled, on the controlled quantities, as one vector."""
        st = self.st
        if other_U is None:
            (w, U), (_, obs) = U, obs
            du = st.cin_chart.offset(w, U, U[-1])
            dy = self.chart.offset(w, obs, obs[-1])
        else:
            du = st.cin_chart.minus(U, other_U)
            dy = self.chart.minus(obs, other_obs)
        return np.concatenate([du[self._cs] / self.scale[self._cs], dy[self._ys] / self.obs_scale[self._ys]])

    def columns(self):
        """The tableau's columns at the last accepted interval's end, ``[D_1 .. D_{k-1}]``,
        ``D_j = T(runs 0..j) - T(runs 1..j)`` on the controlled quantities, scaled: global error
        estimates of the orders 2, 4, .., 2k - 2."""
        k = len(self.sequence)
        U = [self._U[i] for i in range(k)]
        obs = [self._values(self._obs[i]) for i in range(k)]
        return [self._controlled((w, U), (w, obs)) for w in self._columns]

    def local_error(self, res, obs) -> float:
        """The interval's local error at the level of the printed estimate (see the module
        docstring, 3.), scaled, largest over the controlled quantities."""
        rec_half, U_half = res["half"]
        full = self._values(obs[0])
        half = self._values(np.asarray(self._observe(rec_half), dtype=float))
        # one step against two half steps: the error of the one step is 4/3 of their difference
        e = np.abs(self._controlled(res[0][1], full, U_half, half)) * (4.0 / 3.0)
        if self._Drecent and len(self._Drecent[0]) > 1:
            recent = np.max(self._Drecent, axis=0)
            top, first = recent[-1], recent[0]
            e *= np.where(first > top, top / np.where(first > 0, first, 1.0), 1.0)
        return float(e.max(initial=0.0))

    # -- start ----------------------------------------------------------------------------------
    def initialize(self, t0=0.0):
        """Consistent outputs at ``t0``: every run's loops solved at the initial states."""
        self.t = t0
        res = self._all("initialize", t0)
        self._absorb(res, self._observations(res))
        if self.st.event_units:                 # the events at the start: samples at t0
            res = self._all("event", t0)
            self._absorb(res, self._observations(res))
        self.H = self.opt.h0 or min(self.opt.h_max, 1e-3)
        self._next_event()
        values = self.extrapolated()
        self._hermite = values.ndim == 2
        return values

    def _next_event(self):
        """The units' next time event after :attr:`t`."""
        self._event = self._all("next_event", self.t)["event"] if self.st.event_units else math.inf

    def extrapolated(self, obs=None):
        """The observed values now (or of the runs' observations ``obs``), extrapolated over the
        runs: ``(n,)``, or ``(3, n)`` with first and second time derivatives when the observer
        gives them."""
        obs = self._obs if obs is None else obs
        vals = [obs[i] for i in range(len(self.sequence))]
        ref = vals[-1]
        if ref.ndim == 1:
            return self.chart.combine(self.weights, vals, ref)
        values = ref + sum(w * (v - ref) for w, v in zip(self.weights, vals))      # derivatives as they are
        values[0] = self.chart.combine(self.weights, [v[0] for v in vals], ref[0])    # values on the chart
        return values

    # -- macro intervals ------------------------------------------------------------------------
    def _control(self):
        return not self.opt.fixed and not self.opt.hold

    def interval(self, H):
        """Try ``[t, t + H]``; ``(accepted, ratio)``, ratio = estimated error / its share."""
        opt = self.opt
        share = max(opt.tol * H / self.span, ROUNDING)
        level = max(2, self.order - 2)
        try:
            res = self._all("interval", self.t, H, share, self.scale, self._control())
        except NoConvergence as e:
            self._all("rollback")
            if opt.fixed or opt.hold:
                raise SolverError(f"{e} (fixed macro step {H:g} s)") from None
            self.stats.stalled += 1
            self._why = str(e)
            self._ratio_order = level
            return False, 2.0 ** self.order
        except SolverError:
            self._all("rollback")
            raise
        obs = self._observations(res)
        ratio = self.local_error(res, obs) / share if "half" in res else 0.0
        # before the first accepted interval the columns are the start's (the runs agree there, to
        # the loop solves' rounding): the error is the base step's, and so is its order. Not decided
        # per quantity (where one's error is not scaled): the step would then depend on which one
        # is largest, a choice the last bits can swing
        self._ratio_order = level if self.stats.macro_steps else 2
        accepted = not self._control() or ratio <= REJECT
        if accepted:
            for s in self.steppers:         # a worker's goes with its next command: no round trip
                s.commit_later()
            self._absorb(res, obs)
            self._local_sum += ratio * share
            self._estimate()
            self._pending.append(self._obs)                             # see _settle
        else:
            self._all("rollback")
        return accepted, ratio

    def next_H(self, H, ratio, rejected=False):
        """The next macro step after one of ``H`` with this error ratio; after a rejection it
        is always shorter (before the control starts too: a stalled first interval)."""
        opt = self.opt
        if opt.fixed or opt.hold:
            return H
        # the local error at the level of D_{k-1} ~ H^(2k - 1), per unit step ~ H^(2k - 2) (the
        # base step's before the first accepted interval: ~ H^2)
        fac = 0.9 * max(ratio, 1e-10) ** (-1.0 / self._ratio_order)
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
                H = gap + (max(0, math.floor((H - gap) / dt + 1e-9)) * dt if self._hermite else 0.0)
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
            self._pending.append(self._obs)
            self.t = self._event
            return self.t
        t_end = min(t_end, self._event)
        H = self._fit(min(self.H, t_end - self.t), t_end)
        while True:
            if H < H_MIN:
                self._below_h_min()
            accepted, ratio = self.interval(H)
            if accepted:
                break
            self.stats.rejected += 1
            if H <= H_MIN:          # next_H never goes below it: this interval would be retried forever
                self._below_h_min()
            H = self._fit(self.next_H(H, ratio, rejected=True), t_end)
            if self.on_attempt is not None:
                self.on_attempt(H)
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

    def _below_h_min(self):
        raise SolverError(f"the macro step fell below h_min = {H_MIN:g} s at t={self.t:.9g} s"
                          + (f": {self._why}" if self._why else ""))

    def event(self):
        """The units' time events at the end of the interval just taken (:attr:`at_event`):
        their updates, the loops solved again (:meth:`.run.Run.event`); the right limits
        recorded as a second point of the mesh at the same time, and a restart."""
        res = self._all("event", self.t, self._since)
        self._absorb(res, self._observations(res))
        self._pending.append(self._obs)
        self._next_event()

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
        """A warning when the run's own error estimate (:attr:`Stats.error_estimate`) is above
        the tolerance: the step control holds local errors, and a system may make the errors
        already made grow faster than the tolerance allows for."""
        tol, e = self.opt.tol, self.stats.error_estimate
        if len(self.sequence) < 2 or e <= tol:
            return ""
        return (f"warning: the co-simulation error may exceed the tolerance {tol:g}: its own estimate reached "
                f"{e:.2g}; check with a smaller tolerance (--tol) or the monolithic engine")

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
        return dict(groups=self._all("save"), t=self.t, H=self.H, state=copy.deepcopy(self._state()),
                    grid=self.grid, span=self.span, event=self._event)

    def restore(self, snap):
        """Back to a :meth:`save` point (the snapshot stays valid)."""
        self._settle()
        self._all("restore", snap["groups"])
        self.t, self.H = snap["t"], snap["H"]
        (self.scale, self._lo, self._hi, self.obs_scale, self._top, self._Drecent, self._rec,
         self._U, self._obs, self._local_sum) = copy.deepcopy(snap["state"])
        self.grid, self.span, self._event = snap["grid"], snap["span"], snap["event"]

    def _state(self):
        """What the step control carries from one interval to the next."""
        return (self.scale, self._lo, self._hi, self.obs_scale, self._top, self._Drecent, self._rec, self._U,
                self._obs, self._local_sum)

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
