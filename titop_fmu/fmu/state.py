"""The FMU state of a TITOP slave (``fmi2GetFMUstate``): a snapshot of everything that
determines the future (mode, parameter values, the host's tolerance, the unit's time, states,
inputs and integrator step-size guess), serialized to JSON (floats written with ``repr``, so
the round trip is exact)."""

from __future__ import annotations

import json

import numpy as np

#: the serialized state's ``format``
FORMAT = "titop-fmu-state-1"


class Snapshot:
    """An FMU state (opaque to the host)."""

    __slots__ = ("model", "mode", "params", "t0", "inputs", "unit", "tolerance")

    def __init__(self, model, mode, params, t0, inputs, unit, tolerance=None):
        self.model, self.mode, self.params, self.t0 = model, mode, tuple(params), t0
        self.inputs = None if inputs is None else np.array(inputs, dtype=float)
        self.unit = unit        # the unit's get_state() or None
        self.tolerance = tolerance      # the host's (fmi2SetupExperiment) or None

    def to_json(self) -> dict:
        unit = None
        if self.unit is not None:                    # (t, x, u, h_guess, more arrays of the unit's)
            t, x, u, h, *more = self.unit
            unit = [t, x.tolist(), u.tolist(), h, *(m.tolist() for m in more)]
        return {"format": FORMAT, "model": self.model, "mode": self.mode,
                "params": list(self.params), "t0": self.t0,
                "inputs": None if self.inputs is None else self.inputs.tolist(), "unit": unit,
                "tolerance": self.tolerance}

    @classmethod
    def from_json(cls, d):
        if d.get("format") != FORMAT:
            raise ValueError("not a serialized TITOP FMU state")
        unit = d["unit"]
        if unit is not None:
            t, x, u, h, *more = unit
            unit = (float(t), np.array(x, dtype=float), np.array(u, dtype=float),
                    None if h is None else float(h), *(np.array(m, dtype=float) for m in more))
        tolerance = d.get("tolerance")
        return cls(d["model"], d["mode"], d["params"], d["t0"], d["inputs"], unit,
                   None if tolerance is None else float(tolerance))


class InvalidState:
    """What deserializing bad bytes gives; setting it is an error with this message."""

    def __init__(self, message):
        self.message = message


def to_bytes(state) -> bytes:
    """``fmi2SerializeFMUstate``: a :class:`Snapshot` as JSON (an :class:`InvalidState` as its message)."""
    if isinstance(state, Snapshot):
        return json.dumps(state.to_json()).encode("utf-8")
    return json.dumps({"format": "invalid", "message": getattr(state, "message", "")}).encode("utf-8")


def from_bytes(data: bytes):
    """``fmi2DeSerializeFMUstate``: the :class:`Snapshot` of ``data``, or an :class:`InvalidState`
    saying why there is none (never raises)."""
    try:
        d = json.loads(bytes(data).decode("utf-8"))
        if d.get("format") == "invalid":
            return InvalidState(d.get("message") or "invalid FMU state")
        return Snapshot.from_json(d)
    except Exception as e:
        return InvalidState(f"the bytes are not a serialized TITOP FMU state ({type(e).__name__}: {e})")
