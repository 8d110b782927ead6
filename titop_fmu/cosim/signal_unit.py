"""Units whose outputs are time signals (a port's, :mod:`.signals`), for the master: exact
at every communication point; at a breakpoint the left limits until the master's event
update there (:meth:`~.protocol.Unit.event_update`), the right limits after it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .names import port_names
from .protocol import Unit, UnitType, Variable


@dataclass
class SignalSpec:
    """A unit whose outputs ``y[1..n]`` are time signals (a port's), for the master."""

    signals: list
    parameters: dict = field(default_factory=dict)

    @property
    def output_names(self) -> list:
        return port_names({"y": len(self.signals)})

    def unit_type(self, name="signal") -> UnitType:
        outs = self.output_names
        return UnitType(name, {n: Variable(n, "output") for n in outs}, [], outs,
                        [np.zeros(0, dtype=int)] * len(outs), time_events=True)

    def make_unit(self, name, parameters=None):
        return SignalUnit(name, self)


class Breakpoints:
    """The breakpoints of some signals after a time (:meth:`next_after`), found by windows of
    ``window`` seconds (a little wider, so none is lost on a window's edge) and kept."""

    def __init__(self, signals, window: float = 10.0):
        self.signals, self.window = list(signals), window
        self._known, self._until = np.zeros(0), 0.0

    def next_after(self, t: float, horizon: float = 1000.0) -> float:
        """The first breakpoint ``> t``; ``inf`` if none before ``t + horizon`` (asked again
        later, the search goes on from where it stopped: each stretch of time is searched once,
        in windows that double while they find nothing)."""
        while True:
            later = self._known[self._known > t]
            if later.size:
                return float(later[0])
            if self._until >= t + horizon:
                return math.inf
            start = self._until
            self._until = min(max(start, t) + max(self.window, start - t), t + horizon)
            margin = 1e-9 * (self._until - start)
            found = [s.breakpoints(start - margin, self._until + margin) for s in self.signals]
            self._known = np.union1d(self._known, np.concatenate(found))


class SignalUnit(Unit):
    """A :class:`SignalSpec` as a unit: its clock advanced by ``do_step``; at a breakpoint
    its outputs are the left limits until :meth:`event_update`, the right limits after."""

    def __init__(self, name, spec: SignalSpec):
        super().__init__()
        self.name, self.spec, self.type = name, spec, spec.unit_type(name)
        self.t, self.side = 0.0, 1.0
        self.breaks = Breakpoints(spec.signals)

    def _at(self):
        t = self.t
        if self.side < 0 and self._is_break(t):
            t = float(np.nextafter(t, -np.inf))
        elif self._is_break(t):
            t = float(np.nextafter(t, np.inf))
        return t

    def _is_break(self, t) -> bool:
        return self.breaks.next_after(float(np.nextafter(t, -np.inf))) == t

    def _setup(self, inputs, t0):
        self.t, self.side = float(t0), 1.0

    def _set_inputs(self, idx, values):
        pass

    def _get_outputs(self, idx):
        t = self._at()
        return np.array([self.spec.signals[i].value(t) for i in np.atleast_1d(idx)], dtype=float)

    def _do_step(self, t, h):
        self.t, self.side = t + h, -1.0

    def _next_event(self, t):
        return self.breaks.next_after(t)

    def _event_update(self, t):
        self.t, self.side = t, 1.0

    def _get_state(self):
        return self.t, self.side

    def _set_state(self, state):
        self.t, self.side = state
