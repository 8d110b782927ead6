"""The exact derivatives of a TITOP system at any state and input (:class:`Linearizer`).

The derivatives come from the model itself, by forward-mode differentiation of the C
kernel (:mod:`titop_fmu.dual`): the state derivatives and the outputs evaluated on dual
numbers seeded along the minimal coordinates (:class:`~.coordinates.Coordinates`) and
the inputs give every column of ``A, B, C, D`` exact to rounding, 8 columns per kernel
call. The attitude chart's own rate enters analytically
(:func:`~titop_fmu.spatial.chart_rate_jacobian`).
"""

from __future__ import annotations

import numpy as np

from ..cosim import CoSystem
from ..errors import SolverError, TitopError
from ..kernel import KernelUnavailable, plan_entries
from ..system import System
from ..titop.monolithic import twin
from ..titop.records import inertial, inertial_jacobian
from .coordinates import (CHART, Coordinates, default_inputs, output_layout, resolve_inputs, resolve_outputs,
                          with_inputs)
from .model import LinearModel


def as_system(system) -> tuple:
    """``(System, default output names)``: a :class:`System` as it is (no outputs), a
    :class:`~titop_fmu.cosim.CoSystem` of TITOP units as its monolithic twin (its record list)."""
    if isinstance(system, CoSystem):
        return twin(system), list(system.recorded)
    if isinstance(system, System):
        return system, []
    raise TypeError(f"expected a System or a CoSystem of TITOP units, got {type(system).__name__}")


class Linearizer:
    """The derivatives of one system with named inputs and outputs, evaluated again and again
    (the equilibrium search, a family of models): ``at(y)`` gives the state derivative,
    ``A, B``, the outputs and ``C, D`` at the state ``y`` and the input values :attr:`u`.

    ``inputs``: names of input scalars or ports (None: :func:`~.coordinates.default_inputs`);
    ``outputs``: names of outputs. The system is copied with a value for every named input
    (zero where it had none); :meth:`set_inputs` changes those values."""

    def __init__(self, system: System, inputs=None, outputs=()):
        from ..dual import DualTree
        names = default_inputs(system) if inputs is None else list(inputs)
        self.inputs = resolve_inputs(system, names)
        self.system = with_inputs(system, {(b, p) for _, (b, p, _) in self.inputs})
        self.outputs = resolve_outputs(self.system, outputs)
        self.coords = Coordinates(self.system)
        order = self.system.plan().order
        self._bodies = sorted({w[0].unit for _, w in self.outputs if isinstance(w, tuple) and len(w) == 2},
                              key=order.index)
        self._n_out = n_out = sum(output_layout(self.system)[0].values()) if self.outputs else 0
        try:
            self.tree = DualTree(plan_entries(self.system.plan()), n_out,
                                 bodies=[order.index(b) for b in self._bodies])
        except KernelUnavailable as e:
            raise TitopError(f"linearization runs on the forward-mode C kernel, which cannot run here: {e}") from None
        self._slots = [(self.tree.input_index(self.system.values[(b, p)]), i) for _, (b, p, i) in self.inputs]

    @property
    def input_names(self) -> list:
        return [n for n, _ in self.inputs]

    @property
    def output_names(self) -> list:
        return [n for n, _ in self.outputs]

    @property
    def u(self) -> np.ndarray:
        """The current values of the named inputs."""
        return np.array([self.system.values[(b, p)][i] for _, (b, p, i) in self.inputs])

    def set_inputs(self, u):
        """Set the named inputs to ``u`` (in :attr:`input_names` order)."""
        for (_, (b, p, i)), v in zip(self.inputs, u):
            self.system.values[(b, p)][i] = v

    def at(self, y, outputs: bool = True) -> dict:
        """``{"xdot", "A", "B", "y", "C", "D"}`` at the state ``y`` (``outputs=False``: without
        ``y, C, D``); :class:`SolverError` if the loop cannot be solved there."""
        c = self.coords
        n, m = c.n, len(self.inputs)
        seeds = np.zeros((c.n_native, n + m))
        seeds[:, :n] = c.tangent(y)
        input_seeds = {}
        for j, (slot, i) in enumerate(self._slots):
            s = input_seeds.setdefault(slot, np.zeros((len(self.tree.keep[slot]), n + m)))
            s[i, n + j] = 1.0
        ydot, dydot, out, dout, code = self.tree.evaluate(y, seeds, input_seeds)
        if code:
            raise SolverError({1: "the algebraic loop is singular at this state",
                               2: "the loop's solution or its derivatives are not finite at this state"}[code])
        minimal = np.zeros((n, n + m))
        minimal[:, :n] = np.eye(n)
        xdot, J = c.rates(y, ydot, dydot, minimal)
        res = {"xdot": xdot, "A": J[:, :n], "B": J[:, n:]}
        if outputs:
            y_out, dy = self._outputs(out, dout)
            res.update(y=y_out, C=dy[:, :n], D=dy[:, n:])
        return res

    def _outputs(self, out, dout) -> tuple:
        """The named outputs and their derivatives from the kernel's outputs and the bodies'
        motion vectors that follow them (``out``, ``dout``): a block output as it is, an inertial
        quantity by the chain rule through :func:`~titop_fmu.titop.records.inertial_jacobian`."""
        values, rows, jacobians = [], [], {}
        for _, where in self.outputs:
            if not isinstance(where, tuple):
                values.append(out[where])
                rows.append(dout[where])
                continue
            entry, i = where[0:2]
            if id(entry) not in jacobians:                 # a body's motion at P, or a node's own (ci.m)
                at = where[2] if len(where) > 2 else self._n_out + 18 * self._bodies.index(entry.unit)
                m, dm = out[at:at + 18], dout[at:at + 18]
                jacobians[id(entry)] = (inertial(entry.quantity, m, entry.PX),
                                        inertial_jacobian(entry.quantity, m, entry.PX) @ dm)
            value, derivative = jacobians[id(entry)]
            values.append(value[i])
            rows.append(derivative[i])
        return np.array(values), np.reshape(rows, (len(rows), dout.shape[1]))

    def model(self, y) -> LinearModel:
        """The :class:`LinearModel` at the state ``y`` and the current inputs."""
        r = self.at(y)
        return LinearModel(r["A"], r["B"], r["C"], r["D"], list(self.coords.state_names), self.input_names,
                           self.output_names, np.array(y, dtype=float), self.u, r["y"], r["xdot"],
                           self.system.state_names(), CHART)
