"""Sensor units (``model = "sensor"``, ``of = "bus.c1.euler"``) and the view of a system the
master runs: its time signals as units (:func:`~titop_fmu.cosim.signals.with_signal_units`),
its sensors wired to what they measure.

A sensor measures any recordable quantity (docs/system-files.md, "Recording outputs"): an
output of a unit (``arm.joint.q[3]``, ``ctrl.y``), fed by a connection, or an inertial
quantity of a body (``bus.c1.euler``, ``tip.com.position``), computed inside the sensor unit
from the outputs the body's motion comes from (:class:`~.records.BodyMotion`: a base's
``p.m``, or its parent's child-port motion and its joint's ``q``), as the records compute it.
Then the sensor's own block (:class:`~titop_fmu.control.blocks.Sensor`): bias, and with a
sample time, held samples with seeded noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..control.build import build
from ..cosim import CoSystem
from ..cosim.control_unit import ControlSpec, ControlUnit
from ..cosim.names import grouped, port_names
from ..cosim.protocol import UnitType, Variable
from ..errors import ConnectionError_, ParameterError
from .records import ACCELERATION_QUANTITIES, Entry, Records, recording
from .totals import TotalEntry


def sensor_entry(cs: CoSystem, name: str) -> Entry:
    """The record entry of what the sensor ``name`` measures (its ``of``), resolved."""
    of = cs.units[name].parameters.get("of")
    if not isinstance(of, str) or not of:
        raise ConnectionError_(f"unit {name!r} (sensor): of = \"<what it measures>\" not given (a unit output "
                               "such as \"arm.joint.q[3]\", or a body's inertial quantity such as \"bus.c1.euler\")")
    try:
        entry = Records(recording(cs, [of])).entries[0]
    except ConnectionError_ as e:
        raise ConnectionError_(f"unit {name!r} (sensor): of = {of!r}: {str(e).partition(': ')[2] or e}") from None
    if isinstance(entry, TotalEntry):
        raise ConnectionError_(f"unit {name!r} (sensor): of = {of!r}: a sensor measures a unit's output or a body's "
                               "inertial quantity; the system's totals are recorded, not measured")
    if entry.unit == name:
        raise ConnectionError_(f"unit {name!r} (sensor): of = {of!r}: a sensor cannot measure itself")
    return entry


def sensor_block(cs: CoSystem, name: str, size: int):
    """The sensor's :class:`~titop_fmu.control.blocks.Sensor` of ``size`` components."""
    params = {k: v for k, v in grouped(cs.units[name].parameters).items() if k != "of"}
    if "size" in params:
        raise ConnectionError_(f"unit {name!r} (sensor): size is that of what it measures ({size}); leave it out")
    try:
        return build("sensor", {**params, "size": size}, name)
    except ParameterError as e:
        raise ConnectionError_(str(e)) from None


@dataclass
class SensorSpec:
    """A sensor of an inertial quantity as a unit of the master: inputs the outputs the body's
    motion comes from (``<port>`` of each ``(unit, port)`` the entry needs, as ``m1``, ``m2``
    ...), outputs ``y``."""

    entry: Entry
    block: object
    sources: list                      # [(unit, port, size)] the entry reads, in input order
    parameters: dict = field(default_factory=dict)

    def inputs(self) -> dict:
        return {f"m{i + 1}": size for i, (_, _, size) in enumerate(self.sources)}

    @property
    def reads_accelerations(self) -> bool:
        """It measures an acceleration (its value depends on the plant's inputs at once); a
        position, velocity or attitude reads the states alone."""
        return self.entry.quantity in ACCELERATION_QUANTITIES

    def measure(self, raw) -> np.ndarray:
        """The quantity from the outputs it is computed from (``raw``: the inputs, in order)."""
        outs, k = {}, 0
        for unit, port, size in self.sources:
            outs.setdefault(unit, {})[port] = raw[k:k + size]
            k += size
        return self.entry.value(outs, {}, {})

    def unit_type(self, name="sensor") -> UnitType:
        ins, outs = port_names(self.inputs()), port_names(self.block.outputs)
        variables = {n: Variable(n, "input") for n in ins}
        variables.update({n: Variable(n, "output") for n in outs})
        variables.update({n: Variable(n, "parameter", start=v) for n, v in self.parameters.items()})
        deps = np.arange(len(ins)) if self.block.feedthrough else np.zeros(0, dtype=int)
        return UnitType("sensor", variables, ins, outs, [deps] * len(outs), required=frozenset(ins),
                        time_events=self.block.discrete)

    def make_unit(self, name, parameters=None):
        return SensorUnit(name, self)


class SensorUnit(ControlUnit):
    """A :class:`SensorSpec` in the master: the quantity computed from its inputs, then the
    sensor block."""

    def __init__(self, name, spec: SensorSpec):
        self.sensor = spec
        self.raw = np.zeros(sum(size for *_, size in spec.sources))
        super().__init__(name, ControlSpec("sensor", spec.block))
        self.type = spec.unit_type(name)
        self.u = np.zeros(spec.block.n_u)

    def _setup(self, inputs, t0):
        self.t, self.x, self.d = float(t0), self.block.x0(), self.block.d0()
        for n, v in (inputs or {}).items():
            self.raw[self.type.input_index[n]] = v
        self._measure()

    def _measure(self):
        self.u[:] = self.sensor.measure(self.raw)

    def _set_inputs(self, idx, values):
        self.raw[idx] = values
        self._measure()

    def _get_state(self):
        return (*super()._get_state(), self.raw.copy())

    def _set_state(self, state):
        super()._set_state(state[:-1])
        self.raw = state[-1].copy()


def output_size(cs: CoSystem, unit: str, port: str) -> int:
    """The number of scalars of the output ``port`` of a unit that is not a TITOP model (a
    control unit, an FMU)."""
    from ..cosim.engine import FileUnits
    one = CoSystem()
    one.units = {unit: cs.units[unit]}
    return len(FileUnits().unit_types(one)[unit].scalars(port, "output"))


def master_view(cs: CoSystem) -> CoSystem:
    """The system as the master runs it: each sensor wired to what it measures (a connection
    from the unit output, or a :class:`SensorSpec` unit fed by the outputs the inertial
    quantity is computed from), each port's time signals a unit of their own."""
    sensors = [n for n, s in cs.units.items() if s.model == "sensor"]
    out = CoSystem()
    out.units, out.links = dict(cs.units), list(cs.links)
    out.connections, out.inputs, out.recorded = list(cs.connections), dict(cs.inputs), list(cs.recorded)
    for name in sensors:
        entry = sensor_entry(cs, name)
        params = cs.units[name].parameters
        out.units.pop(name)
        if entry.quantity is None:                       # a unit's output, connected to the sensor
            size = len(entry.select) if entry.labels is not None else output_size(cs, entry.unit, entry.port)
            out.add(name, ControlSpec("sensor", sensor_block(cs, name, size), params))
            out.connect(entry.ref, f"{name}.u")
            continue
        if not entry.motion.is_base and entry.motion.parent is None:
            raise ConnectionError_(f"unit {name!r} (sensor): of = {entry.ref!r}: the body's parent port is a "
                                   "constant input; measure a linked body")
        sources = [(u, p, 18 if p.endswith(".m") else 3) for u, p in sorted(entry.motion.needs())]
        out.add(name, SensorSpec(entry, sensor_block(cs, name, len(entry.select)), sources, params))
        for i, (u, p, _) in enumerate(sources):
            out.connect(f"{u}.{p}", f"{name}.m{i + 1}")
    return out
