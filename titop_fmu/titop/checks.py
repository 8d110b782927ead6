"""Everything that can be checked of a system of TITOP units before an engine starts, the
same way for both engines: the models and their parameters (names, the values a block accepts,
and in a system file the physical data stated), the record list (:mod:`.records`) and the
wiring as the master checks it (:func:`~titop_fmu.cosim.structure.analyse` on the units'
declared ports). A mistake is one error naming the unit and what is wrong, with the nearest
valid names."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..cosim import CoSystem
from ..cosim.signals import with_signal_units
from ..cosim.structure import analyse
from ..errors import ConnectionError_, did_you_mean
from ..fmu import catalog
from .closedloop import ClosedLoop
from .monolithic import is_closed_loop
from .records import Records, recording
from .sensors import master_view
from .units import TitopUnits, declared_unit_type, is_titop, model_interface


def check(cs: CoSystem, stated: bool = False, exported: bool = False) -> Records:
    """Check ``cs`` (see the module docstring); ``stated``: every body's physical data must be
    given, as in a system file (:func:`missing_data`); ``exported``: ``cs`` becomes one FMU
    (:mod:`.assembly`), whose inputs its free ports are. Returns its resolved :class:`Records`."""
    for name, spec in cs.units.items():
        if not is_titop(spec.model):
            continue
        iface = model_interface(name, spec.model)
        params = {p.name: p for p in iface.params}
        for p, shape in spec.shapes.items():
            if p in params and params[p].shape != shape:
                raise ConnectionError_(f"unit {name!r}: {p} takes {_shape(params[p].shape)}, got {_shape(shape)}")
        known = {s[0] for s in iface.param_scalars}
        for p, value in spec.parameters.items():
            if p not in known:
                raise ConnectionError_(f"unit {name!r}: {catalog.unknown_parameter(iface, p)}")
            if isinstance(value, (bool, np.bool_)):
                raise ConnectionError_(f"unit {name!r}: {p} = {str(value).lower()}: a number is expected")
        if stated:
            missing_data(name, iface, spec.parameters)
    # the wiring first (a wrong link shows in the record entries too), then the record entries
    view, types = wired(cs)
    if exported:
        types = {name: dataclasses.replace(t, required=frozenset()) for name, t in types.items()}
    analyse(recording(view, []), types)
    records = Records(cs, types)
    for name, spec in cs.units.items():
        if is_titop(spec.model):
            records.block(name)                    # the values a block accepts, errors naming unit.parameter
    for e in records.entries:
        if e.labels is not None:                   # resolved: a TITOP unit's output or a quantity
            continue
        outputs = types[e.unit].ports("output")
        if not types[e.unit].scalars(e.port, "output"):
            raise ConnectionError_(f"record {e.ref!r}: {e.unit!r} ({types[e.unit].name}) has no output {e.port!r}"
                                   f"{did_you_mean(e.port, outputs)}; outputs: {', '.join(outputs)}")
    if is_closed_loop(cs) and not exported:
        ClosedLoop(cs)                             # the order of its blocks: an algebraic loop among them refused
    return records


def declared_types(cs: CoSystem) -> dict:
    """``{unit: UnitType}`` of every unit of ``cs`` as declared, nothing instantiated or built:
    a TITOP model's from the catalog, the others' from :class:`TitopUnits` (FMUs, control
    units, unit specs)."""
    titop = {n: declared_unit_type(s.model) for n, s in cs.units.items() if is_titop(s.model)}
    rest = CoSystem()
    rest.units = {n: s for n, s in cs.units.items() if n not in titop}
    return {**titop, **TitopUnits("inprocess").unit_types(rest)}


def wired(cs: CoSystem) -> tuple:
    """``(system, types)``: ``cs`` as the master runs it, its sensors wired and its time signals
    units of their own (:func:`~.sensors.master_view`), and its units' declared types."""
    view = master_view(cs)
    view = with_signal_units(view, declared_types(view))
    return view, declared_types(view)


def _shape(shape) -> str:
    if len(shape) < 2:
        return f"a vector of {shape[0]}" if shape else "a number"
    return f"a {'x'.join(map(str, shape))} matrix"


def from_flexible_table(iface: catalog.Interface, parameter: str) -> bool:
    """``parameter`` of a flexible unit comes from its ``[units.NAME.flexible]`` table (the
    modal data, the child ports), not stated one by one."""
    return iface.n_modes is not None and re.fullmatch(r"flex\..*|c\d+\..*", parameter) is not None


def missing_data(name: str, iface: catalog.Interface, parameters: dict):
    """A :class:`ConnectionError_` for the first physical datum of the unit ``name`` that
    ``parameters`` do not give whole: a body's mass, inertia, centre of mass and child points,
    a joint's axis, a loop closure's stiffness and damping have no default in a system file."""
    for p in iface.params:
        absent = [n for n, *_ in p.scalars() if n not in parameters]
        if p.stated and absent:
            stated = ", ".join(q.name for q in iface.params if q.stated and not from_flexible_table(iface, q.name))
            what = p.name if len(absent) == len(p.scalars()) else ", ".join(absent)
            raise ConnectionError_(
                f"unit {name!r} ({iface.model_identifier}): {what} not given; a system file states the physical "
                f"data of every unit, here {stated} (titop-fmu models {iface.model_identifier} says what each is)")
