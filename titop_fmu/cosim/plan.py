"""The loop solve's evaluation plans in C where every unit of a plan is an FMU (``master.c``,
:mod:`.clib`): its units' ``fmi2SetReal`` and ``fmi2GetReal`` called from C, one call of the
library per evaluation of the loop instead of a Python call per unit. The same calls with the
same values in the same order as :meth:`~.loop.LoopSolver._run`: the same results, bit for bit.
Without a C compiler the plans run in Python.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import clib

#: the plans run in C where they can (False: always in Python)
COMPILED = True
#: the ints per unit call of master.c (its enum)
OP = 10


def compiled(plan, Y, Ucur, n_z):
    """``plan`` (:meth:`~.loop.LoopSolver._plan`'s unit calls) as a :class:`CompiledPlan` on the
    solver's arrays ``Y`` and ``Ucur`` (never replaced: their addresses are kept), or None
    when a unit of it is not an FMU, or the library cannot be had."""
    if not COMPILED or not plan:
        return None
    rw = [u.fmi_rw() for u, *_ in plan]
    if any(r is None for r in rw):
        return None
    run = clib.function("titop_plan_run")
    return None if run is None else CompiledPlan(plan, rw, Y, Ucur, n_z, run)


def _positions(x):
    """Index positions as an int array (a slice, an array or None)."""
    if x is None:
        return np.zeros(0, dtype=np.intc)
    if isinstance(x, slice):
        return np.arange(x.start, x.stop, dtype=np.intc)
    return np.asarray(x, dtype=np.intc)


class CompiledPlan:
    """A plan's tables for ``titop_plan_run`` and its arguments converted once; the units'
    calls and seconds counted as the Python plan counts them (:meth:`flush`)."""

    def __init__(self, plan, rw, Y, Ucur, n_z, run):
        self.units = list(dict.fromkeys(u for u, *_ in plan))      # each unit once, in order
        fmi = {u: r for (u, *_), r in zip(plan, rw)}               # unit -> its fmi_rw()
        self._calls = dict.fromkeys(self.units, 0)                 # unit -> its FMI calls per run
        ops, vrs, idx = [], [], []

        def offset(values, table):
            """``values`` appended to ``table`` (a list of arrays); where they start in it."""
            table.append(values)
            return sum(len(v) for v in table) - len(values)
        for u, local_in, src, zpos, cin, get_idx, get_pos in plan:
            in_vr, out_vr = fmi[u][3:]
            src, zpos, local_in, cin, get_idx, get_pos = map(_positions, (src, zpos, local_in, cin, get_idx, get_pos))
            self._calls[u] += bool(len(local_in)) + bool(len(get_idx))
            ops.append([self.units.index(u), len(src), len(zpos), len(get_idx),
                        offset(in_vr[local_in].astype(np.uintc), vrs), offset(src, idx), offset(zpos, idx),
                        offset(cin, idx), offset(out_vr[get_idx].astype(np.uintc), vrs), offset(get_pos, idx)])
        self._ops = np.array(ops, dtype=np.intc).reshape(-1, OP)
        self._vr = np.concatenate(vrs).astype(np.uintc)
        self._idx = np.concatenate(idx).astype(np.intc)
        self._z = np.zeros(max(1, n_z))
        self._buf = np.zeros(max([1] + [max(o[1] + o[2], o[3]) for o in ops]))     # one call's values
        self.seconds = np.zeros(len(self.units))
        self._status = ctypes.c_int(0)
        self.runs = np.zeros(1)                                    # runs since the last flush (C counts here too)
        # per unit: its component, fmi2SetReal, fmi2GetReal (addresses)
        pointers = [(ctypes.c_void_p * len(self.units))(*[fmi[u][i] for u in self.units]) for i in range(3)]
        self._keep = (Y, Ucur, pointers)
        self._fn = run
        address = clib.address
        self._args = (ctypes.c_int(len(ops)), address(self._ops), *(ctypes.cast(p, ctypes.c_void_p) for p in pointers),
                      address(self._vr), address(self._idx), address(self._z), address(Y), address(Ucur),
                      address(self._buf), address(self.seconds), ctypes.byref(self._status))

    def run(self, z=None):
        """The plan's unit calls with the loop unknowns ``z``; a unit's failed FMI call raises its
        error, quoting what its FMU logged."""
        if z is not None:
            np.copyto(self._z, z)
        marks = [u.logged for u in self.units]
        self.runs[0] += 1
        failed = self._fn(*self._args)
        if failed:
            k, what = divmod(failed - 1, 2)
            i = int(self._ops[k, 0])
            raise self.units[i]._failure("fmi2GetReal" if what else "fmi2SetReal", marks[i],
                                         f"status {self._status.value}")

    def flush(self):
        """Count the plan's runs and seconds so far in its units' :attr:`~.protocol.Unit.calls`
        and :attr:`~.protocol.Unit.seconds`."""
        for i, u in enumerate(self.units):
            u.calls += int(self.runs[0]) * self._calls[u]
            u.seconds += float(self.seconds[i])
        self.runs[0] = 0
        self.seconds[:] = 0.0
