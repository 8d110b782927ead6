"""A unit written as a few lines of Python (hand-made test systems, small examples)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..integrators import dopri5
from .protocol import Unit, UnitType, Variable


@dataclass
class FunctionSpec:
    """A unit written as two functions of states ``x`` and inputs ``u`` (1-D arrays):
    ``outputs(x, u) -> y`` and ``derivatives(x, u) -> xdot``; ``dependencies[o]``
    the input indices output ``o`` reads (default: all)."""

    inputs: list
    outputs: list
    output_fn: object
    derivative_fn: object = None
    x0: tuple = ()
    dependencies: list | None = None
    required: tuple = ()
    parameters: dict = field(default_factory=dict)

    def unit_type(self, name="function") -> UnitType:
        deps = self.dependencies
        if deps is None:
            deps = [np.arange(len(self.inputs))] * len(self.outputs)
        variables = {n: Variable(n, "input") for n in self.inputs}
        variables.update({n: Variable(n, "output") for n in self.outputs})
        variables.update({n: Variable(n, "parameter", start=v) for n, v in self.parameters.items()})
        return UnitType(name, variables, list(self.inputs), list(self.outputs),
                        [np.asarray(d, dtype=int) for d in deps], frozenset(self.required))

    def make_unit(self, name, parameters=None):
        return FunctionUnit(name, self, parameters)


class FunctionUnit(Unit):
    """A :class:`FunctionSpec` in process; ``do_step`` integrates the derivatives with the
    inputs held, by the Dormand-Prince 5(4) integrator of the blocks at ``rtol = atol``."""

    def __init__(self, name, spec: FunctionSpec, parameters: dict | None = None, rtol=1e-12):
        super().__init__()
        self.name, self.spec, self.type = name, spec, spec.unit_type(name)
        self.rtol = rtol
        self.x = np.array(spec.x0, dtype=float)
        self.u = np.zeros(len(spec.inputs))
        self.h_guess = None
        self.params = {**spec.parameters, **(parameters or {})}

    def _setup(self, inputs, t0):
        self.x = np.array(self.spec.x0, dtype=float)
        for n, v in (inputs or {}).items():
            self.u[self.type.input_index[n]] = v

    def _set_inputs(self, idx, values):
        self.u[idx] = values

    def _get_outputs(self, idx):
        return np.asarray(self.spec.output_fn(self.x, self.u), dtype=float)[idx]

    def _do_step(self, t, h):
        f = self.spec.derivative_fn
        if f is None or self.x.size == 0:
            return
        u = self.u.copy()
        self.x, self.h_guess, _ = dopri5(lambda x: np.asarray(f(x, u), dtype=float), self.x, h,
                                         self.rtol, self.rtol, self.h_guess)

    def _get_state(self):
        return self.x.copy(), self.u.copy(), self.h_guess

    def _set_state(self, state):
        self.x, self.u, self.h_guess = state[0].copy(), state[1].copy(), state[2]
