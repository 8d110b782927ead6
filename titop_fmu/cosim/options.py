"""The master's settings, resolved once (:meth:`Options.resolved`), and its statistics."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field


@dataclass
class Options:
    """Settings of the master (times in seconds). ``None`` means "derived from ``tol``":
    :meth:`resolved` fills them in, once, and every module reads the resolved values.

    tol:       what the step control holds (:mod:`.master`, 3.): the local error of every
               observed value (relative to its range so far, or absolute below one unit; an
               angle's absolute) and of every coupling input that is a function of the states
               (relative to its largest magnitude, or absolute below one), at the level of the
               printed error estimate (one order below the result's), per unit step: ``tol``
               over ``span`` (default: the simulated time)
    sequence:  base steps per macro interval of each extrapolated run (order 2 x their number);
               ``(1,)``: no extrapolation
    h0, h_max: first (default ``min(h_max, 1e-3)``) and largest macro interval
    fixed:     keep ``h0`` (order studies)
    hold:      the first-order reference: inputs held at their start value, no iteration
               (implies ``sequence=(1,)`` and ``fixed``)
    loop_rtol, loop_atol: convergence of the algebraic-loop Newton iteration; ``loop_rtol``
               defaults to ``min(1e-11, tol / 100)``: a loop residual is a wrench that one side
               applies and the other does not (momentum drifts with it)
    unit_rtol: ``rtol``/``atol`` given to units that have such parameters and were not set
               them, to keep their own integration below the coupling error: default
               ``3e-4 tol`` within ``[1e-13, 1e-8]`` (1e-13: a few hundred times the rounding of
               the states, below which an embedded integrator only takes more steps)
    workers:   processes computing the runs, this one included (0 or 1: all in this process)
    observe:   ``f(recorded outputs) -> values``, or ``(3, n)`` values and two time derivatives
    labels:    names of the observed values (default: the recorded outputs)
    angles:    bool mask of observed values that are angles (mod 2 pi), and
    attitudes: index triples of observed values that are 3-2-1 Euler angles ``phi, theta, psi``
               (interpolated and extrapolated on the rotation group); both only with ``observe``:
               without it, the recorded outputs' are those the unit types declare
    """

    tol: float = 3e-5
    sequence: tuple = (1, 2, 3, 4)
    h0: float | None = None
    h_max: float = 0.05
    fixed: bool = False
    hold: bool = False
    span: float | None = None
    loop_rtol: float | None = None
    loop_atol: float = 1e-13
    unit_rtol: float | None = None
    workers: int = 0
    observe: object = None
    labels: object = None
    angles: object = None
    attitudes: object = None

    def resolved(self) -> Options:
        """A copy with every derived default filled in (idempotent)."""
        opt = self
        if opt.hold:
            opt = dataclasses.replace(opt, sequence=(1,), fixed=True)
        return dataclasses.replace(
            opt,
            sequence=tuple(opt.sequence),
            loop_rtol=opt.loop_rtol if opt.loop_rtol is not None else min(1e-11, 1e-2 * opt.tol),
            unit_rtol=opt.unit_rtol if opt.unit_rtol is not None else max(1e-13, min(1e-8, opt.tol * 3e-4)),
            workers=int(opt.workers or 0))

    @property
    def order(self) -> int:
        """Order of the extrapolated scheme: ``2k`` for ``k`` runs."""
        return 2 * len(self.sequence)

    def stepper_options(self) -> Options:
        """The part a worker process needs (no callables)."""
        return dataclasses.replace(self, observe=None)


@dataclass
class Stats:
    """What a run of the master did and where the time went."""

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
    #: on the controlled quantities, scaled: the largest |T(all runs) - T(all but the coarsest)| over
    #: the run (the next-lower order's global error) plus the accepted intervals' local errors summed,
    #: an estimate at or above the result's global error (:mod:`.master`, 3.)
    error_estimate: float = 0.0
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
            f"estimated global error (largest top tableau column, or the one below where the tableau is "
            f"out of its asymptotic range, + local errors summed; outputs relative to their range, absolute "
            f"below one): {self.error_estimate:.2g}",
            f"loop solves {self.loop_solves}, loop Newton iterations {self.loop_iterations}; Jacobians: "
            f"feedthrough {self.M_refreshes}, step sensitivity {self.P_refreshes}",
            f"unit calls {sum(self.unit_calls.values())} (doStep {sum(self.unit_steps.values())})",
            f"wall {self.wall:.2f} s{par}; time in units: "
            + ", ".join(f"{n} {s:.2f} s" for n, s in self.unit_seconds.items()),
        ] + (["processes busy " + ", ".join(f"{b:.2f} s (units {u:.2f} s)" for b, u in
                                            zip(self.worker_busy, self.worker_units))]
             if self.worker_busy else []))
