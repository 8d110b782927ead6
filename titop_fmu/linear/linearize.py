"""Exact linearization of a TITOP system at any state and input (:func:`linearize`): the
system's own derivatives (:class:`~.linearizer.Linearizer`), or a closed loop's
(:mod:`.closedloop`)."""

from __future__ import annotations

import numpy as np

from ..cosim import CoSystem
from ..errors import TitopError
from ..titop.monolithic import is_closed_loop
from .closedloop import linearize_closed_loop
from .linearizer import Linearizer, as_system
from .model import LinearModel

__all__ = ["Linearizer", "as_system", "linearize"]


def linearize(system, state=None, inputs=None, outputs=None) -> LinearModel:
    """The linear model of ``system`` at ``state`` (the system's state vector; default its
    initial state) and its current input values, equilibrium or not.

    ``system``: a :class:`System`, or a :class:`~titop_fmu.cosim.CoSystem` of TITOP units
    (its monolithic twin; outputs default to its record list). ``inputs``: the input
    columns of ``B, D``, names of scalars or ports (``"balloon.ext.w[2]"``,
    ``"slider.joint.tau"``), or a ``{name: value}`` dict that also sets their values;
    default: every free input but constant motion vectors. ``outputs``: names of block
    outputs (``"pendulum1.joint.q[3]"``, ``"balloon.c1.m"``) or of the inertial quantities of
    bodies a record list may hold (``"bus.com.position"``, ``"boom.dcm[4]"``).
    """
    if isinstance(system, CoSystem) and is_closed_loop(system):
        return linearize_closed_loop(system, state, inputs, outputs)
    system, recorded = as_system(system)
    values = inputs if isinstance(inputs, dict) else None
    lin = Linearizer(system, list(values) if values is not None else inputs,
                     recorded if outputs is None else outputs)
    if values is not None:
        u = lin.u
        for j, (name, _) in enumerate(lin.inputs):
            for ref, v in values.items():
                if ref == name:
                    u[j] = v
                elif name.startswith(ref + "["):                     # a whole port given as a vector
                    u[j] = np.ravel(v)[int(name[len(ref) + 1:-1]) - 1]
        lin.set_inputs(u)
    y = lin.system.initial_state() if state is None else np.asarray(state, dtype=float)
    if y.shape != (lin.coords.n_native,):
        raise TitopError(f"the state has {y.size} values; the system has {lin.coords.n_native} states")
    return lin.model(y)
