"""Control blocks (:mod:`titop_fmu.control.blocks`) as units of the master: ``model =
"state_space"``, ``"pid"``, ... in a system file.

A discrete block has time events at its sample instants: the master ends a step on each,
and its :meth:`~.protocol.Unit.event_update` there samples the inputs, updates the discrete
states and the held outputs. A continuous block integrates its states over a step with its
inputs held, by the Dormand-Prince 5(4) integrator of the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..control.blocks import ControlBlock
from ..control.build import PARAMETERS, build
from ..errors import ConnectionError_, ParameterError
from ..integrators import dopri5
from .names import grouped, port_names
from .protocol import Unit, UnitType, Variable

#: the control models a unit's ``model`` may name (the sensor's quantity is resolved by the
#: systems that know it: a sensor is a TITOP unit, :mod:`titop_fmu.titop.sensors`)
CONTROL_MODELS = tuple(m for m in PARAMETERS if m != "sensor")


def is_control_model(model) -> bool:
    return isinstance(model, str) and model in PARAMETERS


def control_spec(name: str, model: str, parameters: dict) -> "ControlSpec":
    """The :class:`ControlSpec` of the unit ``name`` from its FMI-scalar parameters (errors
    name ``name.parameter``)."""
    try:
        return ControlSpec(model, build(model, grouped(parameters), name), parameters)
    except ParameterError as e:
        raise ConnectionError_(str(e)) from None


@dataclass
class ControlSpec:
    """A control block as a unit model (what :class:`~.engine.FileUnits` makes units of)."""

    model: str
    block: ControlBlock
    parameters: dict = field(default_factory=dict)

    def unit_type(self, name="control") -> UnitType:
        ins, outs = port_names(self.block.inputs), port_names(self.block.outputs)
        variables = {n: Variable(n, "input") for n in ins}
        variables.update({n: Variable(n, "output") for n in outs})
        variables.update({n: Variable(n, "parameter", start=v) for n, v in self.parameters.items()})
        deps = np.arange(len(ins)) if self.block.feedthrough else np.zeros(0, dtype=int)
        return UnitType(self.model, variables, ins, outs, [deps] * len(outs), required=frozenset(ins),
                        time_events=self.block.discrete)

    def make_unit(self, name, parameters=None):
        return ControlUnit(name, self)


class ControlUnit(Unit):
    """One control block in the master (see the module docstring)."""

    def __init__(self, name, spec: ControlSpec, rtol=1e-12):
        super().__init__()
        self.name, self.spec, self.type = name, spec, spec.unit_type(name)
        self.block, self.rtol = spec.block, rtol
        self.t, self.x, self.d = 0.0, self.block.x0(), self.block.d0()
        self.u = np.zeros(self.block.n_u)
        self.h_guess = None

    def _setup(self, inputs, t0):
        self.t, self.x, self.d = float(t0), self.block.x0(), self.block.d0()
        for n, v in (inputs or {}).items():
            self.u[self.type.input_index[n]] = v

    def _set_inputs(self, idx, values):
        self.u[idx] = values

    def _get_outputs(self, idx):
        return self.block.output(self.t, self.x, self.d, self.u)[idx]

    def _do_step(self, t, h):
        if self.block.n_x:
            u, d, block = self.u.copy(), self.d, self.block
            self.x, self.h_guess, _ = dopri5(lambda x: block.derivative(t, x, d, u), self.x, h,
                                             self.rtol, self.rtol, self.h_guess)
        self.t = t + h

    def _next_event(self, t):
        later = self.block.samples(t, t + 2 * self.block.sample_time)
        later = later[later > t]
        return float(later[0]) if later.size else float("inf")

    def _event_update(self, t):
        k = self.block.sample_index(t)
        if abs(self.block.offset + k * self.block.sample_time - t) <= 1e-9 * self.block.sample_time:
            self.d = self.block.update(t, k, self.x, self.d, self.u.copy())

    def _get_state(self):
        return self.t, self.x.copy(), self.d.copy(), self.u.copy(), self.h_guess

    def _set_state(self, state):
        self.t, x, d, u, self.h_guess = state
        self.x, self.d, self.u = x.copy(), d.copy(), u.copy()
