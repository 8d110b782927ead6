"""The master's view of a co-simulation unit, with and without FMI.

A unit is anything with scalar inputs, scalar outputs, hidden states, a
``do_step`` that advances them with the inputs held constant, and an exact
state save/restore. The master never sees more than :class:`Unit`:

* :class:`FMUUnit` -- an FMI 2.0 co-simulation FMU driven through FMPy
  (value-reference arrays, ``fmi2GetFMUstate``/``fmi2SetFMUstate``, the output
  dependencies of ``<ModelStructure>``);
* :class:`BlockUnitAdapter` -- a :class:`~titop_fmu.unit.BlockUnit` in
  process, i.e. exactly what a TITOP FMU computes, without the FMI layer;
* :class:`FunctionUnit` -- a few lines of Python (hand-made test systems).

Units are described before they exist by a :class:`UnitType` (variable names,
types, sizes, dependencies), so a system can be checked before anything runs.
Every call is counted and timed per unit (:attr:`Unit.calls`, :attr:`Unit.seconds`).
"""

from __future__ import annotations

import ctypes
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ConnectionError_, SolverError

_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")


def port_of(scalar: str) -> tuple[str, int]:
    """``"p.m[3]"`` -> ``("p.m", 3)``; ``"joint.tau"`` -> ``("joint.tau", 0)``."""
    m = _INDEXED.match(scalar)
    return (m.group(1), int(m.group(2))) if m else (scalar, 0)


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
    required: frozenset = frozenset()
    angle_inputs: frozenset = frozenset()       # inputs that are attitude angles (wrap at +-pi)

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


# -- TITOP conventions ---------------------------------------------------------------

_PARENT_PORT = re.compile(r"^(p|l|r)\.m\[\d+\]$")
_CHILD_WRENCH = re.compile(r"^c\d+\.w\[\d+\]$")
_EULER = re.compile(r"^[\w.]+\.m\[(16|17|18)\]$")


def titop_required(input_names) -> frozenset:
    """Inputs a TITOP block cannot do without: the parent ports' motion vectors and the
    child ports' wrenches (a free child end is set to zero explicitly)."""
    return frozenset(n for n in input_names if _PARENT_PORT.match(n) or _CHILD_WRENCH.match(n))


def titop_angles(input_names) -> frozenset:
    """Motion-vector components 16..18: 3-2-1 Euler angles, defined modulo 2 pi."""
    return frozenset(n for n in input_names if _EULER.match(n))


# -- the interface ---------------------------------------------------------------------

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
    def setup(self, parameters: dict, inputs: dict, t0: float):
        """Set parameters (``{scalar name: value}``) and start values of inputs, initialize at ``t0``."""
        self._timed(self._setup, parameters, inputs, t0)

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

    def do_step(self, t: float, h: float):
        self.calls += 1
        self.steps += 1
        t0 = time.perf_counter()
        self._do_step(t, h)
        self.seconds += time.perf_counter() - t0

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


# -- in process: a BlockUnit -------------------------------------------------------------

class BlockUnitAdapter(Unit):
    """A :class:`~titop_fmu.unit.BlockUnit` behind the unit interface (no FMI).

    ``factory(parameters) -> BlockUnit`` builds the block unit at :meth:`setup`
    from the scalar parameters (as an FMU builds it at the end of its
    initialization); ``type`` describes its variables.
    """

    def __init__(self, name: str, type: UnitType, factory):
        super().__init__()
        self.name, self.type, self._factory = name, type, factory
        self.unit = None

    def _setup(self, parameters, inputs, t0):
        self.unit = self._factory(parameters)
        self.unit.reset(t0)
        if inputs:
            self.unit.set_inputs(list(inputs.values()), [self.type.input_index[n] for n in inputs])

    def _set_inputs(self, idx, values):
        self.unit.set_inputs(values, idx)

    def _get_outputs(self, idx):
        return self.unit.outputs()[idx]

    def _do_step(self, t, h):
        self.unit.t = t
        self.unit.do_step(h)

    def _get_state(self):
        return self.unit.get_state()

    def _set_state(self, state):
        self.unit.set_state(state)


def _titop_interface(model_id: str):
    from ..fmu import catalog
    kind, n = catalog.parse_identifier(model_id)
    return catalog.interface(kind, n)


@lru_cache(maxsize=None)
def titop_unit_type(model_id: str) -> UnitType:
    """The :class:`UnitType` of the TITOP FMU ``model_id`` (``"revolute_c1"``), with the
    dependencies the FMU declares (measured on the block as at the FMU build)."""
    from ..fmu.model_description import measure_dependencies
    iface = _titop_interface(model_id)
    variables = {v.name: Variable(v.name, v.causality, v.type, v.unit, v.start) for v in iface.variables}
    on_inputs, _ = measure_dependencies(iface)
    deps = [np.flatnonzero(row) for row in on_inputs]
    ins = list(iface.input_names)
    return UnitType(model_id, variables, ins, list(iface.output_names), deps,
                    titop_required(ins), titop_angles(ins))


def titop_block_unit(name: str, model_id: str) -> BlockUnitAdapter:
    """The TITOP block ``model_id`` in process, built from FMI parameter names
    exactly as the FMU builds it."""
    iface = _titop_interface(model_id)
    utype = titop_unit_type(model_id)
    defaults = dict(zip((s[0] for s in iface.param_scalars), iface.defaults()))

    def factory(parameters):
        values = dict(defaults)
        for k, v in parameters.items():
            if k not in values:
                raise ConnectionError_(f"{name}: {model_id} has no parameter {k!r}")
            values[k] = v
        unit, _warnings = iface.make_unit([values[s[0]] for s in iface.param_scalars])
        return unit

    return BlockUnitAdapter(name, utype, factory)


# -- through FMI: FMPy ------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _read_fmu(path: str, mtime: float):
    from fmpy import extract, read_model_description
    md = read_model_description(path)
    return md, extract(path)


def fmu_unit_type(path) -> UnitType:
    """The :class:`UnitType` of an FMU file (model description only, nothing instantiated)."""
    path = Path(path)
    md, _ = _read_fmu(str(path.resolve()), path.stat().st_mtime)
    return _fmu_type(md)


def _fmu_type(md) -> UnitType:
    if md.coSimulation is None:
        raise ConnectionError_(f"{md.modelName}: not a co-simulation FMU")
    variables = {v.name: Variable(v.name, v.causality, v.type, v.unit or (v.declaredType.unit if v.declaredType
                                                                           else None), v.start)
                 for v in md.modelVariables}
    ins = [v.name for v in md.modelVariables if v.causality == "input"]
    outs = [v.name for v in md.modelVariables if v.causality == "output"]
    in_index = {n: i for i, n in enumerate(ins)}
    deps = {o: np.arange(len(ins)) for o in outs}          # no declaration: depends on every input
    for unknown in md.outputs:
        if unknown.dependencies is not None:
            deps[unknown.variable.name] = np.array(
                sorted(in_index[d.name] for d in unknown.dependencies if d.name in in_index), dtype=int)
    model_id = md.coSimulation.modelIdentifier
    titop = _is_titop(model_id)
    return UnitType(model_id, variables, ins, outs, [deps[o] for o in outs],
                    titop_required(ins) if titop else frozenset(),
                    titop_angles(ins) if titop else frozenset())


def _is_titop(model_id):
    try:
        _titop_interface(model_id)
        return True
    except (KeyError, ImportError):
        return False


class FMUUnit(Unit):
    """An FMI 2.0 co-simulation FMU through FMPy.

    The per-step calls go straight to the FMI functions with preallocated
    value-reference and value arrays; every status above ``fmi2Warning`` is an
    error that quotes what the FMU logged.
    """

    def __init__(self, name: str, path):
        super().__init__()
        from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                               fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
        from fmpy import calloc, free
        from fmpy.logging import addLoggerProxy
        self.name, self.path = name, Path(path)
        md, unzipdir = _read_fmu(str(self.path.resolve()), self.path.stat().st_mtime)
        self.md = md
        self.type = _fmu_type(md)
        vr = {v.name: v.valueReference for v in md.modelVariables}
        self._vr = vr
        self._in_vr = np.array([vr[n] for n in self.type.input_names], dtype=np.uint32)
        self._out_vr = np.array([vr[n] for n in self.type.output_names], dtype=np.uint32)
        self._all_out = np.arange(len(self._out_vr))
        self._out_buf = np.zeros(len(self._out_vr))
        self._vr_cache = {}
        self.log = []                # the last 50 messages: (status, category, text)
        self.logged = 0              # messages so far
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                             modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(self._logger)
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(ctypes.byref(cb))
        self._callbacks = cb
        self._call("fmi2Instantiate", self.fmu.instantiate, callbacks=cb)
        self._instantiated = True
        # the per-step functions called bare (no FMPy wrapper): preallocated value-reference
        # arrays per index set, one value buffer, the status checked here
        self._c = self.fmu.component
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        rw = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, sz, vp)
        self._set_real = rw(("fmi2SetReal", self.fmu.dll))
        self._get_real = rw(("fmi2GetReal", self.fmu.dll))
        self._do = ctypes.CFUNCTYPE(ctypes.c_int, vp, ctypes.c_double, ctypes.c_double, ctypes.c_int)(
            ("fmi2DoStep", self.fmu.dll))
        self._buf = np.zeros(max(len(self._in_vr), len(self._out_vr), 1))
        self._buf_at = self._buf.ctypes.data

    def _logger(self, env, instance, status, category, message):
        self.log.append((status, (category or b"").decode(errors="replace"), message.decode(errors="replace")))
        self.logged += 1
        del self.log[:-50]

    def _since(self, logged):
        """The error messages the FMU logged since the count was ``logged``."""
        new = self.log[len(self.log) - min(len(self.log), self.logged - logged):]
        return "; ".join(m for s, _, m in new if s >= 2)

    def _failure(self, what, logged, fallback):
        """The error of a failed call: what the FMU logged since the count was ``logged``,
        else ``fallback``."""
        return SolverError(f"FMU {self.name!r} ({self.type.name}): {what} failed: "
                           f"{self._since(logged) or fallback}")

    def _call(self, what, f, *args, **kw):
        from fmpy.fmi1 import FMICallException
        logged = self.logged
        try:
            return f(*args, **kw)
        except FMICallException as e:
            raise self._failure(what, logged, str(e)) from None

    def _setup(self, parameters, inputs, t0):
        self._call("fmi2SetupExperiment", self.fmu.setupExperiment, startTime=t0)
        self._set_named(parameters)
        self._call("fmi2EnterInitializationMode", self.fmu.enterInitializationMode)
        self._set_named(inputs)
        self._call("fmi2ExitInitializationMode", self.fmu.exitInitializationMode)

    def _set_named(self, values: dict):
        if not values:
            return
        by_type: dict = {}
        for n, v in values.items():
            var = self.type.variables.get(n)
            if var is None:
                raise ConnectionError_(f"{self.name}: {self.type.name} has no variable {n!r}")
            by_type.setdefault(var.type, ([], []))
            by_type[var.type][0].append(self._vr[n])
            by_type[var.type][1].append(v)
        for typ, (vrs, vals) in by_type.items():
            if typ == "Real":
                self._call("fmi2SetReal", self.fmu.setReal, vrs, [float(v) for v in vals])
            elif typ == "Integer":
                self._call("fmi2SetInteger", self.fmu.setInteger, vrs, [int(v) for v in vals])
            elif typ == "Boolean":
                self._call("fmi2SetBoolean", self.fmu.setBoolean, vrs, [bool(v) for v in vals])
            else:
                self._call("fmi2SetString", self.fmu.setString, vrs, [str(v) for v in vals])

    def _vrs(self, which, idx):
        """``(value-reference array, its address, its length)`` for input or output positions."""
        key = (which, idx.tobytes() if isinstance(idx, np.ndarray) else tuple(idx))
        vrs = self._vr_cache.get(key)
        if vrs is None:
            src = self._in_vr if which == "in" else self._out_vr
            arr = np.ascontiguousarray(src[np.asarray(idx, dtype=int)], dtype=np.uint32)
            vrs = self._vr_cache[key] = (arr, arr.ctypes.data, len(arr))
        return vrs

    def _checked(self, what, status, logged):
        """Above ``fmi2Warning``: an error quoting what the FMU logged during the call."""
        if status > 1:
            raise self._failure(what, logged, f"status {status}")

    def _set_inputs(self, idx, values):
        _, at, n = self._vrs("in", idx)
        self._buf[:n] = values
        logged = self.logged
        self._checked("fmi2SetReal", self._set_real(self._c, at, n, self._buf_at), logged)

    def _get_outputs(self, idx):
        _, at, n = self._vrs("out", idx)
        logged = self.logged
        self._checked("fmi2GetReal", self._get_real(self._c, at, n, self._buf_at), logged)
        return self._buf[:n].copy()

    def _do_step(self, t, h):
        logged = self.logged
        self._checked("fmi2DoStep", self._do(self._c, t, h, 0), logged)

    def _get_state(self):
        return self._call("fmi2GetFMUstate", self.fmu.getFMUstate)

    def _set_state(self, state):
        self._call("fmi2SetFMUstate", self.fmu.setFMUstate, state)

    def _free_state(self, state):
        self._call("fmi2FreeFMUstate", self.fmu.freeFMUstate, state)

    def _terminate(self):
        if self._instantiated:
            self._instantiated = False
            try:
                self.fmu.terminate()
            except Exception:
                pass
            self.fmu.freeInstance()


# -- plain Python (tests, small examples) --------------------------------------------------

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


class FunctionUnit(Unit):
    """A :class:`FunctionSpec` in process; ``do_step`` integrates with classical RK4
    sub-steps (``substeps`` per communication step)."""

    def __init__(self, name, spec: FunctionSpec, substeps=20):
        super().__init__()
        self.name, self.spec, self.type = name, spec, spec.unit_type(name)
        self.substeps = substeps
        self.x = np.array(spec.x0, dtype=float)
        self.u = np.zeros(len(spec.inputs))
        self.params = dict(spec.parameters)

    def _setup(self, parameters, inputs, t0):
        self.params.update(parameters)
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
        k = h / self.substeps
        x, u = self.x, self.u
        for _ in range(self.substeps):
            k1 = f(x, u)
            k2 = f(x + 0.5 * k * k1, u)
            k3 = f(x + 0.5 * k * k2, u)
            k4 = f(x + k * k3, u)
            x = x + k / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        self.x = x

    def _get_state(self):
        return self.x.copy(), self.u.copy()

    def _set_state(self, state):
        self.x, self.u = state[0].copy(), state[1].copy()
