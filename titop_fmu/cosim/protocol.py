"""The master's view of a co-simulation unit: what it is before it exists
(:class:`UnitType`) and the calls it answers (:class:`Unit`).

A unit is anything with scalar inputs, scalar outputs, hidden states, a
``do_step`` that advances them with the inputs held constant, and an exact
state save/restore. The master never sees more than :class:`Unit`; the units
are made by a :class:`UnitFactory` (FMUs through FMPy: :mod:`.fmpy_unit`;
Python functions: :mod:`.function_unit`; TITOP blocks in process: the TITOP
bridge). Every call is counted and timed per unit (:attr:`Unit.calls`,
:attr:`Unit.seconds`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .names import port_of


@dataclass(frozen=True)
class Variable:
    name: str
    causality: str              # "input", "output", "parameter", ...
    type: str = "Real"          # "Real", "Integer", "Boolean", "String"
    unit: str | None = None
    start: object = None


@dataclass
class UnitType:
    """What the master knows about a unit before instantiating it.

    ``dependencies[o]`` lists the input indices output ``o`` depends on directly
    (direct feedthrough); ``required`` the input names that must be connected
    or given a value.
    """

    name: str                                   # e.g. "revolute_c1"
    variables: dict                             # name -> Variable
    input_names: list
    output_names: list
    dependencies: list                          # per output: array of input indices
    required: frozenset = frozenset()           # inputs that must be connected or given a value
    angles: frozenset = frozenset()             # inputs and outputs that are angles (modulo 2 pi)
    attitudes: tuple = ()                       # (phi, theta, psi) name triples: 3-2-1 Euler angles of a frame
    derivatives: bool = False                   # the units answer directional_derivatives
    trial_steps: bool = False                   # the units answer trial_steps
    #: the continuous states the units expose, and their derivatives (same order): the units
    #: then answer get_states and state_space_derivatives
    states: tuple = ()
    state_derivatives: tuple = ()
    #: the units have time events (signals' breakpoints, sample instants of discrete blocks):
    #: they answer next_event and event_update (see :meth:`Unit.next_event`)
    time_events: bool = False

    def __post_init__(self):
        self.input_index = {n: i for i, n in enumerate(self.input_names)}
        self.output_index = {n: i for i, n in enumerate(self.output_names)}
        self.parameter_names = [n for n, v in self.variables.items() if v.causality == "parameter"]

    def ports(self, causality: str) -> dict:
        """``{port: [scalar names]}`` for ``"input"`` or ``"output"``: scalars named
        ``port[1..n]`` are grouped (``p.m`` -> ``p.m[1]`` .. ``p.m[18]``)."""
        names = self.input_names if causality == "input" else self.output_names
        out: dict = {}
        for n in names:
            out.setdefault(port_of(n)[0], []).append(n)
        return out

    def scalars(self, ref: str, causality: str) -> list:
        """The scalar names of ``ref`` (a scalar or a port) with ``causality``; [] if none."""
        names = self.input_index if causality == "input" else self.output_index
        if ref in names:
            return [ref]
        return self.ports(causality).get(ref, [])


class Unit:
    """One co-simulation unit. Inputs and outputs are addressed by index arrays
    (positions in :attr:`UnitType.input_names` / ``output_names``)."""

    type: UnitType
    name: str

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self.steps = 0

    # subclasses implement the underscored methods; the public ones count and time
    def setup(self, inputs: dict, t0: float):
        """Initialize at ``t0`` with the start values of inputs (``{scalar name: value}``); the
        parameters were given when the unit was made (:meth:`UnitFactory.make_unit`)."""
        self._timed(self._setup, inputs, t0)

    def set_inputs(self, idx, values):
        self.calls += 1
        t = time.perf_counter()
        self._set_inputs(idx, values)
        self.seconds += time.perf_counter() - t

    def get_outputs(self, idx) -> np.ndarray:
        self.calls += 1
        t = time.perf_counter()
        y = self._get_outputs(idx)
        self.seconds += time.perf_counter() - t
        return y

    def evaluate(self, in_idx, values, out_idx) -> np.ndarray:
        """:meth:`set_inputs` then :meth:`get_outputs`, in one call: the unit evaluated at new
        inputs (at every iteration of the loop solve)."""
        self.calls += 2
        t = time.perf_counter()
        y = self._evaluate(in_idx, values, out_idx)
        self.seconds += time.perf_counter() - t
        return y

    def _evaluate(self, in_idx, values, out_idx):
        self._set_inputs(in_idx, values)
        return self._get_outputs(out_idx)

    def directional_derivatives(self, out_idx, in_idx, seeds) -> np.ndarray:
        """``(dy/du)[out_idx, in_idx] seeds`` at the current states and inputs, ``seeds``
        of shape ``(len(in_idx), k)``; only for units whose type says ``derivatives``
        (FMI: ``fmi2GetDirectionalDerivative``)."""
        return self._timed(self._directional_derivatives, out_idx, in_idx, seeds)

    def _directional_derivatives(self, out_idx, in_idx, seeds):
        raise NotImplementedError(f"{self.type.name} gives no directional derivatives")

    def get_states(self) -> np.ndarray:
        """The exposed continuous states (:attr:`UnitType.states`) and then their derivatives
        (:attr:`UnitType.state_derivatives`), for units that expose them."""
        return self._timed(self._get_states)

    def _get_states(self):
        raise NotImplementedError(f"{self.type.name} exposes no states")

    def state_space_derivatives(self, out_idx, in_idx, seeds) -> np.ndarray:
        """``(d [y; xdot] / d [u; x])[out_idx, in_idx] seeds`` at the current states and inputs:
        ``out_idx`` over the outputs then the exposed state derivatives, ``in_idx`` over the
        inputs then the exposed states (a linearization; FMI: ``fmi2GetDirectionalDerivative``
        with states among the knowns, as an FMU listing ``ModelStructure/Derivatives`` allows)."""
        return self._timed(self._state_space_derivatives, out_idx, in_idx, seeds)

    def _state_space_derivatives(self, out_idx, in_idx, seeds):
        raise NotImplementedError(f"{self.type.name} exposes no states")

    def trial_steps(self, t: float, h: float, in_idx, held, end, out_idx) -> np.ndarray:
        """Steps tried from the current state, one per column of ``held``
        (``(len(in_idx), k)``): the inputs ``in_idx`` set to the column, a step of ``h``
        from ``t``, the same inputs set to ``end``, the outputs ``out_idx`` read:
        ``(len(out_idx), k)``, what :meth:`set_inputs`, :meth:`do_step`, :meth:`set_inputs`
        and :meth:`get_outputs` from a restored state give, in one call. The unit is left as
        it was found, states and inputs. Only for units whose type says ``trial_steps``
        (a TITOP FMU: its vendor function ``titopGetTrialSteps``)."""
        self.steps += np.shape(held)[1]
        return self._timed(self._trial_steps, t, h, in_idx, held, end, out_idx)

    def _trial_steps(self, t, h, in_idx, held, end, out_idx):
        raise NotImplementedError(f"{self.type.name} gives no trial steps")

    def do_step(self, t: float, h: float):
        self.calls += 1
        self.steps += 1
        t0 = time.perf_counter()
        self._do_step(t, h)
        self.seconds += time.perf_counter() - t0

    def step(self, t: float, h: float, in_idx=None, values=None, state=None):
        """From ``state`` when given (:meth:`set_state`), with the inputs ``in_idx`` set to
        ``values`` when given (:meth:`set_inputs`), one :meth:`do_step`, in one call: a unit's
        part of a coupling iteration."""
        self.calls += 1 + (state is not None) + (in_idx is not None)
        self.steps += 1
        t0 = time.perf_counter()
        self._step(t, h, in_idx, values, state)
        self.seconds += time.perf_counter() - t0

    def _step(self, t, h, in_idx, values, state):
        if state is not None:
            self._set_state(state)
        if in_idx is not None:
            self._set_inputs(in_idx, values)
        self._do_step(t, h)

    def next_event(self, t: float) -> float:
        """The first time after ``t`` (``> t``) at which the unit's outputs or behaviour change
        discontinuously: a breakpoint of a time signal, a sample instant of a discrete block;
        ``inf`` if none. Only for units whose type says ``time_events``.

        The master's contract with such units: no macro step crosses an event, a step ends
        exactly on it; after a step that ends on an event the unit's outputs are their *left*
        limits there (a held output keeps its value, a signal its value just before the
        jump), the loop is solved with them, then the master calls :meth:`event_update` at
        that time and the outputs are the *right* limits from then on (the sampled inputs
        latched, discrete states and held outputs updated, the signal's next piece)."""
        return self._timed(self._next_event, t)

    def _next_event(self, t):
        return float("inf")

    def event_update(self, t: float):
        """The event at ``t`` (:meth:`next_event`): the unit's clock is at ``t``; it takes its
        current inputs as the values sampled at ``t``, updates its discrete states, and its
        outputs become their right limits at ``t``. Units with an event at the same time are
        updated in the order of their connections (a unit after those that feed it), the
        loop solved again after each. Called once per event, also at the start time when
        ``next_event(t0 - 0)`` would be ``t0`` (a discrete block samples at ``t0``): the master
        calls it for every unit whose type says ``time_events`` right after setting up and
        solving the loop at ``t0``."""
        self._timed(self._event_update, t)

    def _event_update(self, t):
        pass

    def fmi_rw(self):
        """Where the unit is an FMU whose binary the loop solve may call from C
        (:mod:`.plan`): ``(component, fmi2SetReal, fmi2GetReal, input value references,
        output value references)``, the first three as addresses; else None."""
        return None

    def fmi_derivatives(self):
        """Where the unit is an FMU whose binary the base steps may ask from C for its directional
        derivatives for several seeds in one call (its vendor function ``titopGetDirectionalDerivatives``,
        :mod:`.fmpy_unit`): the function's address; else None."""
        return None

    def fmi_steps(self):
        """Where the unit is an FMU whose binary the base steps may call from C (:mod:`.core`):
        the addresses of its ``fmi2DoStep``, ``fmi2GetFMUstate``, ``fmi2SetFMUstate`` and
        ``fmi2FreeFMUstate``; else None."""
        return None

    def get_state(self):
        return self._timed(self._get_state)

    def set_state(self, state):
        self._timed(self._set_state, state)

    def free_state(self, state):
        self._timed(self._free_state, state)

    def terminate(self):
        self._terminate()

    def _timed(self, f, *args):
        self.calls += 1
        t = time.perf_counter()
        try:
            return f(*args)
        finally:
            self.seconds += time.perf_counter() - t

    def _free_state(self, state):
        pass

    def _terminate(self):
        pass


class UnitFactory:
    """Where the units of a system come from, by the ``model`` of each unit: a name the
    factory knows, an ``.fmu`` path or a :class:`~.function_unit.FunctionSpec`.

    A factory goes to the worker processes with the system: it must be picklable."""

    def unit_types(self, system) -> dict:
        """``{unit name: UnitType}`` of every unit of ``system`` (nothing instantiated);
        a :class:`ConnectionError_` for a model it cannot resolve."""
        raise NotImplementedError

    def make_unit(self, name: str, model, parameters: dict, instance: int = 0) -> Unit:
        """A new unit ``name`` with its parameters (``{scalar name: value}``), not set up yet,
        for the run ``instance``."""
        raise NotImplementedError
