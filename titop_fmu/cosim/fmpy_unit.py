"""An FMI 2.0 co-simulation FMU as a unit, through FMPy."""

from __future__ import annotations

import ctypes
import itertools
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ConnectionError_, SolverError
from .protocol import Unit, UnitType, Variable


#: the vendor functions of a TITOP FMU's binary, which its model description declares as
#: ``<VendorAnnotations><Tool name="titop-fmu"><Functions><TrialSteps function="titopGetTrialSteps"/> ..``:
#: :meth:`~.protocol.Unit.trial_steps` in one call (:meth:`FMUUnit._trial_steps`), and
#: directional derivatives for several seeds in one call (:meth:`FMUUnit._directional_derivatives`)
VENDOR_TOOL = "titop-fmu"
VENDOR_FUNCTIONS = {"TrialSteps": "titopGetTrialSteps", "DirectionalDerivatives": "titopGetDirectionalDerivatives"}


@lru_cache(maxsize=None)
def _read_fmu(path: str, mtime: float):
    """``(model description, unzipped folder, {declared vendor function: its name})``."""
    from xml.etree import ElementTree

    from fmpy import extract, read_model_description
    md = read_model_description(path)
    unzipdir = extract(path)
    root = ElementTree.parse(Path(unzipdir) / "modelDescription.xml").getroot()
    tool = root.find(f"VendorAnnotations/Tool[@name='{VENDOR_TOOL}']/Functions")
    vendor = {} if tool is None else {e.tag: e.get("function") for e in tool if e.tag in VENDOR_FUNCTIONS}
    return md, unzipdir, vendor


#: the units by the componentEnvironment their FMUs hand back to the logger
_UNITS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_IDS = itertools.count(1)
_LOGGER = None


def _logger():
    """The one Python logger of this module's units, for the whole process.

    FMPy's native logger proxy (``fmpy.logging.addLoggerProxy``, which formats the
    variadic messages) keeps a single global pointer to the last Python logger it was
    given, and FMPy's default callbacks use the proxy too. A logger per unit, freed with
    the unit, left every later FMPy instance in the process logging through a dangling
    pointer: a segmentation fault at the first message. This one is never freed; it
    hands a unit's messages to the unit (by ``componentEnvironment``), the others to
    FMPy's ``printLogMessage``, as FMPy's default callbacks do."""
    global _LOGGER
    if _LOGGER is None:
        from fmpy.fmi1 import printLogMessage
        from fmpy.fmi2 import fmi2CallbackLoggerTYPE

        def dispatch(env, instance, status, category, message):
            unit = _UNITS.get(env) if env else None
            (printLogMessage if unit is None else unit._logger)(env, instance, status, category, message)
        _LOGGER = fmi2CallbackLoggerTYPE(dispatch)
    return _LOGGER


def fmu_unit_type(path) -> UnitType:
    """The :class:`UnitType` of an FMU file (model description only, nothing instantiated)."""
    path = Path(path)
    md, _, vendor = _read_fmu(str(path.resolve()), path.stat().st_mtime)
    return _fmu_type(md, vendor)


def _fmu_type(md, vendor=None) -> UnitType:
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
    exposed = [(d.variable.derivative.name, d.variable.name) for d in md.derivatives
               if getattr(d.variable, "derivative", None) is not None]
    return UnitType(md.coSimulation.modelIdentifier, variables, ins, outs, [deps[o] for o in outs],
                    derivatives=bool(md.coSimulation.providesDirectionalDerivative),
                    trial_steps="TrialSteps" in (vendor or {}),
                    states=tuple(x for x, _ in exposed), state_derivatives=tuple(d for _, d in exposed))


class FMUUnit(Unit):
    """An FMI 2.0 co-simulation FMU through FMPy.

    The per-step calls go straight to the FMI functions with preallocated
    value-reference and value arrays; every status above ``fmi2Warning`` is an
    error that quotes what the FMU logged.
    """

    def __init__(self, name: str, path, parameters: dict | None = None):
        super().__init__()
        self.parameters = dict(parameters or {})
        from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                               fmi2CallbackFunctions)
        from fmpy import calloc, free
        from fmpy.logging import addLoggerProxy
        self.name, self.path = name, Path(path)
        md, unzipdir, vendor = _read_fmu(str(self.path.resolve()), self.path.stat().st_mtime)
        self.type = _fmu_type(md, vendor)
        vr = {v.name: v.valueReference for v in md.modelVariables}
        self._vr = vr
        self._in_vr = np.array([vr[n] for n in self.type.input_names], dtype=np.uint32)
        self._out_vr = np.array([vr[n] for n in self.type.output_names], dtype=np.uint32)
        # the exposed states after the inputs, their derivatives after the outputs
        self._known_vr = np.concatenate([self._in_vr, np.array([vr[n] for n in self.type.states], dtype=np.uint32)])
        self._unknown_vr = np.concatenate([self._out_vr, np.array([vr[n] for n in self.type.state_derivatives],
                                                                  dtype=np.uint32)])
        self._vr_cache = {}
        self._vr_seen = {}                  # (in|out, id(positions)) -> (positions, _vrs)
        self.log = []                # the last 50 messages: (status, category, text)
        self.logged = 0              # messages so far
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                             modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        cb = fmi2CallbackFunctions()
        uid = next(_IDS)
        _UNITS[uid] = self
        cb.componentEnvironment = uid
        cb.logger = _logger()
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
        if self.type.derivatives:
            self._dd = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, sz, vp, sz, vp, vp)(
                ("fmi2GetDirectionalDerivative", self.fmu.dll))
        # the vendor functions declared: {tag: (name, the function with its signature)}
        signatures = {"TrialSteps": (ctypes.c_double, ctypes.c_double, vp, sz, sz, vp, vp, vp, sz, vp),
                      "DirectionalDerivatives": (vp, sz, vp, sz, sz, vp, vp)}
        self._vendor = {}
        for tag, fn in vendor.items():
            try:
                self._vendor[tag] = fn, ctypes.CFUNCTYPE(ctypes.c_int, vp, *signatures[tag])((fn, self.fmu.dll))
            except AttributeError:
                self._terminate()
                raise ConnectionError_(f"{name}: {self.path.name} declares the vendor function {fn} but its binary "
                                       "does not export it") from None

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

    def _setup(self, inputs, t0):
        self._call("fmi2SetupExperiment", self.fmu.setupExperiment, startTime=t0)
        self._set_named(self.parameters)
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
        """``(value-reference array, its address, its length)`` for input or output positions.
        Kept by the positions' value, and by the array object itself (the loop plans pass the
        same arrays at every call: no key to build; the object is held, so its id is not reused)."""
        seen = self._vr_seen.get((which, id(idx)))
        if seen is not None and seen[0] is idx:
            return seen[1]
        key = (which, idx.tobytes() if isinstance(idx, np.ndarray) else tuple(idx))
        vrs = self._vr_cache.get(key)
        if vrs is None:
            src = self._in_vr if which == "in" else self._out_vr
            arr = np.ascontiguousarray(src[np.asarray(idx, dtype=int)], dtype=np.uint32)
            vrs = self._vr_cache[key] = (arr, arr.ctypes.data, len(arr))
        if isinstance(idx, np.ndarray):
            if len(self._vr_seen) >= 1024:
                self._vr_seen.clear()
            self._vr_seen[(which, id(idx))] = (idx, vrs)
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

    def _directional_derivatives(self, out_idx, in_idx, seeds):
        """One call of the vendor function for all the columns of ``seeds`` where the FMU
        declares it (:data:`VENDOR_FUNCTIONS`), else one ``fmi2GetDirectionalDerivative`` per column."""
        _, out_at, n_out = self._vrs("out", out_idx)
        _, in_at, n_in = self._vrs("in", in_idx)
        return self._derivatives(out_at, n_out, in_at, n_in, seeds)

    def _get_states(self):
        vrs = np.concatenate([self._known_vr[len(self._in_vr):], self._unknown_vr[len(self._out_vr):]])
        values = np.empty(len(vrs))
        logged = self.logged
        self._checked("fmi2GetReal", self._get_real(self._c, vrs.ctypes.data, len(vrs), values.ctypes.data), logged)
        return values

    def _state_space_derivatives(self, out_idx, in_idx, seeds):
        """:meth:`_directional_derivatives` with the exposed states among the knowns and their
        derivatives among the unknowns (their value references)."""
        unknown = np.ascontiguousarray(self._unknown_vr[np.asarray(out_idx, dtype=int)])
        known = np.ascontiguousarray(self._known_vr[np.asarray(in_idx, dtype=int)])
        return self._derivatives(unknown.ctypes.data, len(unknown), known.ctypes.data, len(known), seeds)

    def _derivatives(self, out_at, n_out, in_at, n_in, seeds):
        """The directional derivatives of the unknowns (value references at ``out_at``) w.r.t.
        the knowns (at ``in_at``) along the columns of ``seeds``."""
        seeds = np.asarray(seeds, dtype=float)
        k = seeds.shape[1]
        many = self._vendor.get("DirectionalDerivatives")
        if many is not None:
            what, f = many
            seeds_t, result_t = np.ascontiguousarray(seeds.T), np.empty((k, n_out))
            logged = self.logged
            self._checked(what, f(self._c, out_at, n_out, in_at, n_in, k, seeds_t.ctypes.data, result_t.ctypes.data),
                          logged)
            return result_t.T.copy()
        dv_in = np.empty(n_in)
        dv_out = np.empty(n_out)
        result = np.empty((n_out, k))
        for j in range(k):
            dv_in[:] = seeds[:, j]
            logged = self.logged
            self._checked("fmi2GetDirectionalDerivative",
                          self._dd(self._c, out_at, n_out, in_at, n_in, dv_in.ctypes.data, dv_out.ctypes.data),
                          logged)
            result[:, j] = dv_out
        return result

    def _trial_steps(self, t, h, in_idx, held, end, out_idx):
        """One call of the FMU's vendor function (:data:`VENDOR_FUNCTIONS`): the trials' held
        inputs one after the other, their outputs likewise."""
        _, in_at, n_in = self._vrs("in", in_idx)
        _, out_at, n_out = self._vrs("out", out_idx)
        held = np.asarray(held, dtype=float)
        k = held.shape[1]
        held_t = np.ascontiguousarray(held.T)
        end = np.ascontiguousarray(end, dtype=float)
        values = np.empty((k, n_out))
        what, f = self._vendor["TrialSteps"]
        logged = self.logged
        self._checked(what, f(self._c, t, h, in_at, n_in, k, held_t.ctypes.data, end.ctypes.data, out_at, n_out,
                              values.ctypes.data), logged)
        return values.T.copy()

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
