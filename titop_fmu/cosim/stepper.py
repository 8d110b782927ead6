"""A group of runs behind the master's two-phase interface (start a command, collect its
result), in this process or in a worker process."""

from __future__ import annotations

import time

from ..errors import SolverError
from .numerics import extrapolation_weights
from .options import Options
from .run import NOISE, Run

#: the coupling iterations stop at this fraction of their share of the tolerance: their errors,
#: which the runs make alike, cancel in the tableau's columns, and must stay below what these see
#: (the balloon over 20 s: 4.8e-7 from the reference at 1, 3.6e-8 at 0.1, for 4 % more iterations)
ITERATION_SHARE = 0.1


class Stepper:
    """Advances some of the runs (``{run index: Run}``) over macro intervals; lives in the
    master's process or in a worker process (:mod:`.workers`)."""

    in_process = True           # computes in start(): the master starts the workers' first

    def __init__(self, runs: dict, key=0):
        self.runs, self.key = runs, key
        self._snaps = None
        self._result = None
        self.busy = 0.0

    def initialize(self, t0):
        for run in self.runs.values():
            run.initialize(t0)
        return self._values()

    def _values(self):
        """``{run index: (recorded, U)}``: every run's values now, as :meth:`interval` gives them."""
        return {i: (run.recorded(), run.U.copy()) for i, run in self.runs.items()}

    def interval(self, t, H, tol_share, scale, test=False):
        """Every run over ``[t, t + H]``; ``{run index: (recorded, U)}``, and with ``test``,
        ``"half": (recorded, U)``: run 0 over the same interval in two half steps, from the same
        states (the local test, :meth:`~.master.Master.local_error`). Raises
        :class:`NoConvergence` when a coupling iteration stalls."""
        # full snapshots: a rejected interval leaves no trace, Jacobians included, so the
        # results do not depend on which runs share a process
        self._snaps = {i: run.snapshot(full=True) for i, run in self.runs.items()}
        out = {}
        for i, run in self.runs.items():
            # run i's result enters the output with weight w_i: the budget share over all base
            # steps, each run's deviations counted with |w_i| (cheapest split)
            tol = max(ITERATION_SHARE * tol_share / (abs(run.weight) * run.total_steps), NOISE)
            if test and i == 0:
                run.start_states = self._snaps[i]["states"]
                run.test_steps(t, H, tol, scale)
                out["half"] = (run.recorded(), run.U.copy())
                run.restore(self._snaps[i])
            run.start_states = self._snaps[i]["states"]           # the first base step starts there
            run.steps(t, H, run.n, tol, scale)
            out[i] = (run.recorded(), run.U.copy())
        return out

    def next_event(self, t):
        """``{"event": the units' first time event after t}`` (all runs hold the same units)."""
        run = next(iter(self.runs.values()))
        return {"event": min((run.units[j].next_event(t) for j in run.st.event_units), default=float("inf"))}

    def event(self, t, since=None):
        """Every run's time events at ``t`` (:meth:`Run.event`); results as :meth:`initialize`."""
        for run in self.runs.values():
            run.event(t, since)
        return self._values()

    def commit(self):
        for i, run in self.runs.items():
            run.free(self._snaps[i])
        self._snaps = None

    def commit_later(self):
        """:meth:`commit` before the next command; in this process, now."""
        self.commit()

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
            if run.core is not None:
                run.core.flush()
            run.solver.flush_counters()
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


def make_runs(system, st, units, opt: Options, indices, t0=0.0) -> dict:
    """``{run index: Run}`` with set-up units for the runs ``indices`` of ``opt.sequence``
    (``opt`` resolved)."""
    weights = extrapolation_weights(opt.sequence)
    runs = {}
    for r in indices:
        made = []
        for j, (name, spec) in enumerate(system.units.items()):
            params = dict(spec.parameters)
            for p in ("rtol", "atol"):              # the units' own integration below the coupling error
                if p in st.types[j].variables and p not in params:
                    params[p] = opt.unit_rtol
            u = units.make_unit(name, spec.model, params, r)
            u.setup(st.constants[j], t0)
            made.append(u)
        runs[r] = Run(st, opt, made, opt.sequence[r], weights[r])
    return runs
