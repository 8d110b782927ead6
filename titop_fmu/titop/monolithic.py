"""The in-process monolithic twin of a co-simulation system of TITOP units.

Any :class:`~titop_fmu.cosim.CoSystem` whose units are TITOP models wired by links
becomes a :class:`titop_fmu.system.System` (the same blocks, built from the
same FMI parameters as the FMUs build them, the loop solved exactly, all
states integrated together by DOP853): the ground truth the co-simulation is
checked against, for the balloon and for any other topology.
"""

from __future__ import annotations


import numpy as np

from ..cosim import CoSystem
from ..errors import ConnectionError_
from ..system import System
from .records import Records
from .twin import build_titop_unit, twin, twin_and_warnings

__all__ = ["build_titop_unit", "is_closed_loop", "recorded", "run", "simulate", "twin", "twin_and_warnings"]


def check_start(cs: CoSystem):
    """Refuse, before an engine starts, a system of TITOP units whose initial state gives state
    derivatives that are not finite (``qd0 = 1e300``): a :class:`~titop_fmu.errors.SolverError`
    naming the time and the largest state, as the in-process run stops (:meth:`System.diverged`);
    a closed loop (its own engine) or a system with other units (FMUs) is not checked here."""
    if is_closed_loop(cs):
        return
    try:
        s = twin(cs)
    except ConnectionError_:
        return
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s.finite_rhs(s.right_hand_side()[0])(0.0, s.initial_state())


def recorded(cs: CoSystem, system: System, y, records: Records | None = None, kernel="auto") -> np.ndarray:
    """The recorded outputs of ``cs`` (:meth:`CoSystem.record`, in order; :class:`Records`:
    unit outputs and inertial quantities) at the states ``y`` (one state or
    ``(n, n_states)``) of its monolithic twin, its outputs on the C kernel or the NumPy blocks
    as ``kernel`` asks (:meth:`System.outputs_at`)."""
    records = Records(cs) if records is None else records
    y = np.atleast_2d(y)
    return records.table(system.outputs_at(y, records.needs(), kernel), len(y), system.values)


def is_closed_loop(cs: CoSystem) -> bool:
    """``cs`` has time signals on its inputs or control units: its in-process engine is
    :class:`~.closedloop.ClosedLoop`."""
    from ..cosim.control_unit import is_control_model
    from ..cosim.signals import has_signals
    return has_signals(cs) or any(is_control_model(s.model) for s in cs.units.values())


def run(cs: CoSystem, stop: float, dt: float, rtol=1e-12, atol=1e-12, progress=False, kernel="auto"):
    """``(trajectory, recorded outputs)`` of the monolithic twin every ``dt`` from 0 to ``stop``
    (``kernel``: as :meth:`System.simulate`'s, for the right-hand side and the outputs); a
    system with time signals or control units runs as a :class:`~.closedloop.ClosedLoop`."""
    if is_closed_loop(cs):
        from .closedloop import ClosedLoop
        loop = ClosedLoop(cs)
        tr = loop.simulate(stop, dt, rtol=rtol, atol=atol, progress=progress, kernel=kernel)
        return tr, loop.recorded(tr, Records(cs, loop.types))
    records = Records(cs)
    s = twin(cs)
    tr = s.simulate(stop, dt, rtol=rtol, atol=atol, progress=progress, kernel=kernel)
    return tr, recorded(cs, s, tr.y, records, tr.kernel)


def simulate(cs: CoSystem, stop: float, dt: float, rtol=1e-12, atol=1e-12):
    """``(t, recorded outputs)`` of the monolithic twin every ``dt`` from 0 to ``stop``."""
    tr, values = run(cs, stop, dt, rtol, atol)
    return tr.t, values
