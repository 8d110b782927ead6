"""The units an assembly FMU computes (:mod:`.assembly`): a system of TITOP units as ONE
co-simulation unit, its loop solved exactly inside (:class:`AssemblyUnit`), or closed by
control units and driven by time signals (:class:`ClosedLoopUnit`, a
:class:`~.closedloop.ClosedLoop`; the reference of its standalone twin in C,
``fmu/csrc/tree.c``).

A closed loop's communication step from ``t`` to ``t + h`` is split at every event inside it
(a signal's breakpoint, a discrete block's sample instant): between events all the continuous
states are integrated together by Dormand-Prince 5(4) (:func:`~titop_fmu.integrators.dopri5`,
with time), the signals evaluated inside the piece between the events around it
(:func:`~titop_fmu.control.signals.within`); at an event the discrete blocks are updated
(:meth:`~.closedloop.ClosedLoop.update`), and the outputs read after it are the right limits.
An event within :data:`EVENT_TOLERANCE` of a step's end is met at that end: a host's
communication points, sums of its steps, may miss the sample instants by a few ulps. The
discrete blocks sample the start time with the inputs the host has set when the first step
begins (or when the outputs are read before it).
"""

from __future__ import annotations

import math

import numpy as np

from ..integrators import dopri5
from ..unit import IntegratedUnit
from .closedloop import ClosedLoop
from .records import Entry, Records, inertial

#: an event this close (relative to ``max(1, |t|)``) to a communication point is met there
EVENT_TOLERANCE = 1e-9


class AssemblyUnit(IntegratedUnit):
    """The monolithic twin of a system as a unit: inputs are the :class:`~.assembly.Port` s
    ``inputs`` (constant inputs of the twin, set before every evaluation when they changed),
    outputs the :class:`~.assembly.Port` s ``outputs``, the states all the twin's states."""

    def __init__(self, system, inputs, outputs, rtol, atol, name="assembly", type=None,
                 records: Records | None = None):
        self.system = system
        self._in_ports = [(f"{p.unit}.{p.port}", p.size) for p in inputs]
        entries = {e.ref: e for e in records.entries} if records is not None else {}
        self._out_ports = [(entries[p.record] if p.record else (p.unit, p.port),
                            slice(None) if p.component is None else [p.component]) for p in outputs]
        self._pushed = None
        self._blocks = list(system.blocks.items())
        super().__init__({p.name: p.size for p in inputs}, {p.name: p.size for p in outputs}, rtol, atol,
                         name, type)

    def _sync(self):
        """Give the twin the current inputs (its constant inputs) if they changed."""
        if self._pushed is not None and np.array_equal(self._pushed, self.u):
            return
        k = 0
        for ref, size in self._in_ports:
            self._push(ref, self.u[k:k + size])
            k += size
        self._pushed = self.u.copy()

    def _push(self, ref, values):
        self.system.set_input(ref, values)

    def _initial_state(self):
        self._sync()
        return self.system.initial_state()

    def _project(self, x):
        x = x.copy()
        for name, block in self._blocks:
            s = self.system.state_slice(name)
            x[s] = block.project_state(x[s])
        return x

    def _derivative_function(self):
        self._sync()
        rhs, t = self.system.rhs, self.t
        return lambda x: rhs(t, x)

    def _port_values(self) -> dict:
        """``{unit: {output port: values}}`` now."""
        return self.system.outputs(self.x)

    def _evaluate_outputs(self):
        self._sync()
        outs = self._port_values()
        return np.concatenate([(inertial_output(src, outs, self.system.values) if isinstance(src, Entry)
                                else np.atleast_1d(outs[src[0]][src[1]]))[sel] for src, sel in self._out_ports]
                              or [np.zeros(0)])


def inertial_output(entry: Entry, outs: dict, inputs: dict) -> np.ndarray:
    """An inertial output of an assembly, from its system's outputs ``outs`` and constant inputs
    ``inputs`` at the current states: the body's motion vector at its port point ``P``, in its
    frame (:class:`~.records.BodyMotion`: a base's ``p.m``, or its block's kinematics at its
    parent's motion and its joint state), then the quantity of :func:`~.records.inertial` (a
    point's position or velocity in ``R_i``, the DCM, the Euler angles), every component."""
    return inertial(entry.quantity, entry.motion(outs, inputs), entry.PX)


class ClosedLoopUnit(AssemblyUnit):
    """A :class:`ClosedLoop` as a unit (see the module docstring): its inputs the free ports of
    the plant and of the control units (constants of the loop), its states ``x`` the continuous
    ones (the plant's, then the blocks'), the discrete ones ``d`` beside them."""

    def __init__(self, loop: ClosedLoop, inputs, outputs, rtol, atol, records: Records, name="assembly",
                 type=None):
        self.loop = loop
        loop.use_kernel("auto")
        self._setters = {f"{p.unit}.{p.port}": [f for _, f in loop.input_setters(f"{p.unit}.{p.port}")]
                         for p in inputs if p.unit in loop.types and (p.unit, p.port) not in loop.plant.values}
        super().__init__(loop.plant, inputs, outputs, rtol, atol, name, type, records)

    def _push(self, ref, values):
        if ref not in self._setters:
            return super()._push(ref, values)
        for f, v in zip(self._setters[ref], values):             # a control unit's constants
            f(float(v))

    def reset(self, t0: float = 0.0):
        super().reset(t0)
        self.d = self.loop.initial_discrete()
        self.event = self.t                 # the last event met: the piece the states are in begins there
        self.starting = True                # the samples of the start are taken at the first step

    def _initial_state(self):
        self._sync()
        return self.loop.initial_state()

    def _get_state(self):
        return (*super()._get_state(), np.concatenate([[self.event, float(self.starting)], self.d]))

    def _set_state(self, state):
        super()._set_state(state[:4])
        extra = state[4]
        self.event, self.starting, self.d = float(extra[0]), bool(extra[1]), np.array(extra[2:])

    def _discrete(self) -> np.ndarray:
        """The discrete states now: at the start, those after its samples (of the current inputs)."""
        self._sync()
        return self.loop.update(self.t, self.x, self.d) if self.starting else self.d

    def _begin(self):
        """Take the samples of the start, if not done yet."""
        if self.starting:
            self.d, self.starting = self._discrete(), False

    def _derivative_function(self):
        d, t, piece = self._discrete(), self.t, (self.event, math.inf)
        return lambda x: self.loop.evaluate(t, x, d, piece)[0]

    def _port_values(self):
        return self.loop.port_values(self.t, self.x, self._discrete(), (self.event, math.inf))

    def dependencies(self, seed: int = 0) -> dict:
        """:meth:`IntegratedUnit.dependencies` during the steps (the samples of the start taken:
        a held output depends on no input)."""
        return self._after_start(super().dependencies, seed)

    def state_dependencies(self, seed: int = 0) -> tuple:
        return self._after_start(super().state_dependencies, seed)

    def _after_start(self, measure, seed):
        saved = self._get_state()
        try:
            self._begin()
            return measure(seed)
        finally:
            self._set_state(saved)

    def _do_step(self, t: float, h: float):
        """From ``t`` to ``t + h``, piece by piece between the events (see the module docstring)."""
        self.t = float(t)
        self._begin()
        end = self.t + h
        near = EVENT_TOLERANCE * max(1.0, abs(end))
        while True:             # the next event after the last one met (none before t - near is left)
            later = self.loop.events_in(max(self.event, self.t - near), end + near)
            event = float(later[0]) if later.size else math.inf
            stop = end if event >= end - near else event
            if stop > self.t and self.x.size:
                piece, d = (self.event, event), self.d
                self.x, self.h_guess, _ = dopri5(lambda s, x: self.loop.evaluate(s, x, d, piece)[0], self.x,
                                                 stop - self.t, self.rtol, self.atol, self.h_guess, t0=self.t)
                self.x = self._project(self.x)
            self.t = stop
            if not later.size:
                break
            self.d, self.event = self.loop.update(event, self.x, self.d), event
        self.t = end
        self._y = None
