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
from ..errors import ConnectionError_, ParameterError
from ..fmu import catalog
from ..system import System
from .records import Records


def twin(cs: CoSystem, solver: str = "recursive") -> System:
    """The :class:`System` of ``cs`` (TITOP models, links and constant inputs only)."""
    return twin_and_warnings(cs, solver)[0]


def twin_and_warnings(cs: CoSystem, solver: str = "recursive") -> tuple:
    """``(System, [parameter warnings, each naming its unit])``: :func:`twin` and what its
    units' parameters are warned of (e.g. principal moments violating the triangle
    inequality), as a block FMU logs them."""
    s = System(solver)
    messages = []
    for name, spec in cs.units.items():
        if not isinstance(spec.model, str) or spec.model.endswith(".fmu"):
            raise ConnectionError_(f"unit {name!r}: only TITOP model identifiers have a monolithic twin")
        unit, warned = build_titop_unit(name, spec)
        messages += [f"{name}: {w}" for w in warned]
        s.add(name, unit.block)
    linked = set()
    for child_port, parent_port in cs.links:
        s.link(child_port, parent_port)
        linked.add((f"{child_port}.m", f"{parent_port}.m"))
        linked.add((f"{parent_port}.w", f"{child_port}.w"))
    extra = [c for c in cs.connections if tuple(c) not in linked]
    if extra:
        raise ConnectionError_(f"connections other than TITOP links have no monolithic twin: {extra[:3]}")
    for ref, value in cs.inputs.items():
        s.set_input(ref, value)
    return s, messages


def build_titop_unit(name: str, spec) -> tuple:
    """``(BlockUnit, [warnings])`` of the unit ``name`` (a :class:`~titop_fmu.cosim.graph.UnitSpec`
    of a TITOP model); errors name the unit: ``parameter 'arm.mass': ...``."""
    try:
        return catalog.build_unit(spec.model, spec.parameters)
    except KeyError as e:
        raise ConnectionError_(f"unit {name!r}: {e.args[0]}") from None
    except ParameterError as e:
        raise e.renamed(f"{name}.{e.parameter}") from None


def recorded(cs: CoSystem, system: System, y, records: Records | None = None, kernel="auto") -> np.ndarray:
    """The recorded outputs of ``cs`` (:meth:`CoSystem.record`, in order; :class:`Records`:
    unit outputs and inertial quantities) at the states ``y`` (one state or
    ``(n, n_states)``) of its monolithic twin, its outputs on the C kernel or the NumPy blocks
    as ``kernel`` asks (:meth:`System.outputs_at`)."""
    records = Records(cs) if records is None else records
    y = np.atleast_2d(y)
    return records.table(system.outputs_at(y, records.needs(), kernel), len(y), system.values)


def run(cs: CoSystem, stop: float, dt: float, rtol=1e-12, atol=1e-12, progress=False, kernel="auto"):
    """``(trajectory, recorded outputs)`` of the monolithic twin every ``dt`` from 0 to ``stop``
    (``kernel``: as :meth:`System.simulate`'s, for the right-hand side and the outputs)."""
    records = Records(cs)
    s = twin(cs)
    tr = s.simulate(stop, dt, rtol=rtol, atol=atol, progress=progress, kernel=kernel)
    return tr, recorded(cs, s, tr.y, records, tr.kernel)


def simulate(cs: CoSystem, stop: float, dt: float, rtol=1e-12, atol=1e-12):
    """``(t, recorded outputs)`` of the monolithic twin every ``dt`` from 0 to ``stop``."""
    tr, values = run(cs, stop, dt, rtol, atol)
    return tr.t, values
