"""An FMI 2.0 co-simulation FMU as a unit, through FMPy."""

from __future__ import annotations

import atexit
import ctypes
import itertools
import os
import shutil
import tempfile
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


#: the folder this process unzips its FMUs and packages into (:func:`unzip_folder`), removed when it exits
_UNZIPPED = None


def unzip_folder():
    """A new folder for one FMU's (or SSP package's) files, in the process's own temporary
    folder, which is removed when the process exits (by the process that made it, not a forked
    child): runs and campaigns leave nothing behind in the temporary folder (where an unzipped
    FMU stayed, about 1 MB, from every process that loaded it)."""
    global _UNZIPPED
    if _UNZIPPED is None:
        _UNZIPPED = tempfile.mkdtemp(prefix="titop_fmus_")
        atexit.register(_remove, _UNZIPPED, os.getpid())
    return tempfile.mkdtemp(dir=_UNZIPPED)


def _remove(folder, pid):
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)       # a Windows DLL still loaded stays


def _loaded(name: str) -> bool:
    """Whether the archive member ``name`` is unzipped to run the FMU: not its sources, nor the
    binaries of other platforms (two thirds of a standalone TITOP FMU)."""
    from fmpy import platform
    top = name.split("/", 1)[0]
    return top != "sources" and (top != "binaries" or name.startswith(f"binaries/{platform}/"))


@lru_cache(maxsize=None)
def _read_fmu(path: str, mtime: float):
    """``(model description, unzipped folder, {declared vendor function: its name})``."""
    from xml.etree import ElementTree

    from fmpy import extract, read_model_description
    unzipdir = extract(path, unzip_folder(), include=_loaded)
    md = read_model_description(unzipdir)
    root = ElementTree.parse(Path(unzipdir) / "modelDescription.xml").getroot()
    tool = root.find(f"VendorAnnotations/Tool[@name='{VENDOR_TOOL}']/Functions")
    vendor = {} if tool is None else {e.tag: e.get("function") for e in tool if e.tag in VENDOR_FUNCTIONS}
    return md, unzipdir, vendor


#: the argument types (after the component) of the FMI functions :meth:`FMUUnit._call` calls
_SIGNATURES = {"fmi2SetupExperiment": (ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_int, ctypes.c_double),
               "fmi2EnterInitializationMode": (), "fmi2ExitInitializationMode": (),
               **{f"fmi2Set{t}": (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
                  for t in ("Real", "Integer", "Boolean", "String")}}

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


def model_description(path):
    """FMPy's model description of an FMU file (read once per file and modification)."""
    path = Path(path)
    return _read_fmu(str(path.resolve()), path.stat().st_mtime)[0]


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


def _address(f):
    """The address of a ctypes function."""
    return ctypes.cast(f, ctypes.c_void_p).value


class FMUUnit(Unit):
    """An FMI 2.0 co-simulation FMU: unzipped and described by FMPy, its binary called
    through ctypes directly (no FMPy wrapper: FMPy builds one per FMI function and
    instance with ``inspect``, 10 ms an instance, and converts the arguments of every
    call), with preallocated value-reference and value arrays; every status above
    ``fmi2Warning`` is an error that quotes what the FMU logged.
    """

    def __init__(self, name: str, path, parameters: dict | None = None):
        super().__init__()
        self.parameters = dict(parameters or {})
        from fmpy import calloc, free, platform, sharedLibraryExtension
        from fmpy.fmi2 import fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions
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
        self._vr_seen = {"in": {}, "out": {}}   # in|out -> {id(positions): (positions, _vrs)}
        self.log = []                # the last 50 messages: (status, category, text)
        self.logged = 0              # messages so far
        self._instantiated = False
        self._dll = None
        self._calls = {}             # the functions of _call
        library = Path(unzipdir, "binaries", platform, md.coSimulation.modelIdentifier + sharedLibraryExtension)
        if not library.is_file():
            raise ConnectionError_(f"{name}: {self.path.name} has no binary for this platform "
                                   f"({library.relative_to(unzipdir).as_posix()})")
        self._dll = ctypes.CDLL(str(library))
        cb = fmi2CallbackFunctions()
        uid = next(_IDS)
        _UNITS[uid] = self
        cb.componentEnvironment = uid
        cb.logger = _logger()
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(ctypes.byref(cb))
        self._callbacks = cb                    # the FMU may keep the pointer: alive as long as the unit
        vp, sz, i, d = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_double
        instantiate = self._function("fmi2Instantiate", ctypes.c_char_p, i, ctypes.c_char_p, ctypes.c_char_p, vp, i, i,
                                     restype=vp)
        logged = self.logged
        self._c = instantiate(name.encode(), 1, md.guid.encode(),                    # 1: fmi2CoSimulation
                              Path(unzipdir, "resources").as_uri().encode(), ctypes.addressof(cb), 0, 0)
        if not self._c:
            raise self._failure("fmi2Instantiate", logged, "no instance")
        self._instantiated = True
        f = self._function
        rw = (vp, sz, vp)                                       # (c, vr[], n, values[])
        self._set_real, self._get_real = f("fmi2SetReal", *rw), f("fmi2GetReal", *rw)
        self._do = f("fmi2DoStep", d, d, i)
        self._get_fmu_state = f("fmi2GetFMUstate", vp)          # (c, fmi2FMUstate *)
        self._set_fmu_state = f("fmi2SetFMUstate", vp)          # (c, fmi2FMUstate)
        self._free_fmu_state = f("fmi2FreeFMUstate", vp)        # (c, fmi2FMUstate *)
        self._buf = np.zeros(max(len(self._in_vr), len(self._out_vr), 1))
        self._buf_at = self._buf.ctypes.data
        if self.type.derivatives:
            self._dd = f("fmi2GetDirectionalDerivative", vp, sz, vp, sz, vp, vp)
        # the vendor functions declared: {tag: (name, the function with its signature)}
        signatures = {"TrialSteps": (d, d, vp, sz, sz, vp, vp, vp, sz, vp),
                      "DirectionalDerivatives": (vp, sz, vp, sz, sz, vp, vp)}
        self._vendor = {tag: (fn, f(fn, *signatures[tag])) for tag, fn in vendor.items()}

    def _function(self, name, *argtypes, restype=ctypes.c_int):
        """The FMI function ``name`` of the binary, called bare: ``f(component, *args)``
        (fmi2Instantiate: ``f(*args)``); a :class:`ConnectionError_` naming it when the
        binary does not export it."""
        try:
            first = () if name == "fmi2Instantiate" else (ctypes.c_void_p,)
            return ctypes.CFUNCTYPE(restype, *first, *argtypes)((name, self._dll))
        except AttributeError:
            self._terminate()
            raise ConnectionError_(f"{self.name}: the binary of {self.path.name} does not export {name}"
                                   if name.startswith("fmi2") else
                                   f"{self.name}: {self.path.name} declares the vendor function {name} but its "
                                   "binary does not export it") from None

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

    def _call(self, what, *args):
        """The FMI function ``what`` (with arguments ``args`` after the component), its status
        checked."""
        f = self._calls.get(what)
        if f is None:
            f = self._calls[what] = self._function(what, *_SIGNATURES[what])
        logged = self.logged
        self._checked(what, f(self._c, *args), logged)

    def _setup(self, inputs, t0):
        self._call("fmi2SetupExperiment", 0, 0.0, t0, 0, 0.0)       # no tolerance, no stop time
        self._set_named(self.parameters)
        self._call("fmi2EnterInitializationMode")
        self._set_named(inputs)
        self._call("fmi2ExitInitializationMode")

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
            vrs = (ctypes.c_uint32 * len(vrs))(*vrs)
            if typ == "Real":
                self._call("fmi2SetReal", vrs, len(vrs), (ctypes.c_double * len(vals))(*(float(v) for v in vals)))
            elif typ in ("Integer", "Boolean"):
                cast = int if typ == "Integer" else bool
                self._call(f"fmi2Set{typ}", vrs, len(vrs), (ctypes.c_int * len(vals))(*(int(cast(v)) for v in vals)))
            else:
                self._call("fmi2SetString", vrs, len(vrs),
                           (ctypes.c_char_p * len(vals))(*(str(v).encode() for v in vals)))

    def _vrs(self, which, idx):
        """``(value-reference array, its address, its length)`` for input or output positions.
        Kept by the positions' value, and by the array object itself (the loop plans pass the
        same arrays at every call: no key to build; the object is held, so its id is not reused)."""
        seen = self._vr_seen[which].get(id(idx))
        if seen is not None and seen[0] is idx:
            return seen[1]
        key = (which, idx.tobytes() if isinstance(idx, np.ndarray) else tuple(idx))
        vrs = self._vr_cache.get(key)
        if vrs is None:
            src = self._in_vr if which == "in" else self._out_vr
            arr = np.ascontiguousarray(src[np.asarray(idx, dtype=int)], dtype=np.uint32)
            vrs = self._vr_cache[key] = (arr, arr.ctypes.data, len(arr))
        if isinstance(idx, np.ndarray):
            seen = self._vr_seen[which]
            if len(seen) >= 1024:
                seen.clear()
            seen[id(idx)] = (idx, vrs)
        return vrs

    def _checked(self, what, status, logged):
        """Above ``fmi2Warning``: an error quoting what the FMU logged during the call."""
        if status > 1:
            raise self._failure(what, logged, f"status {status}")

    def _set_inputs(self, idx, values):
        _, at, n = self._vrs("in", idx)
        self._buf[:n] = values
        logged = self.logged
        status = self._set_real(self._c, at, n, self._buf_at)
        if status > 1:
            raise self._failure("fmi2SetReal", logged, f"status {status}")

    def _get_outputs(self, idx):
        _, at, n = self._vrs("out", idx)
        logged = self.logged
        status = self._get_real(self._c, at, n, self._buf_at)
        if status > 1:
            raise self._failure("fmi2GetReal", logged, f"status {status}")
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
        status = self._do(self._c, t, h, 0)
        if status > 1:
            raise self._failure("fmi2DoStep", logged, f"status {status}")

    def fmi_rw(self):
        return self._c, _address(self._set_real), _address(self._get_real), self._in_vr, self._out_vr

    def fmi_derivatives(self):
        many = self._vendor.get("DirectionalDerivatives")
        return None if many is None else _address(many[1])

    def fmi_steps(self):
        return tuple(_address(f) for f in (self._do, self._get_fmu_state, self._set_fmu_state, self._free_fmu_state))

    def _get_state(self):
        state = ctypes.c_void_p()
        logged = self.logged
        self._checked("fmi2GetFMUstate", self._get_fmu_state(self._c, ctypes.byref(state)), logged)
        return state

    def _set_state(self, state):
        logged = self.logged
        self._checked("fmi2SetFMUstate", self._set_fmu_state(self._c, state), logged)

    def _free_state(self, state):
        logged = self.logged
        self._checked("fmi2FreeFMUstate", self._free_fmu_state(self._c, ctypes.byref(state)), logged)

    def _terminate(self):
        """fmi2Terminate and fmi2FreeInstance (their statuses ignored: the unit ends either
        way), then the binary unloaded, once."""
        from fmpy import freeLibrary
        dll, self._dll = self._dll, None
        if dll is None:
            return
        if self._instantiated:
            self._instantiated = False
            for name, restype in (("fmi2Terminate", ctypes.c_int), ("fmi2FreeInstance", None)):
                f = getattr(dll, name, None)
                if f is not None:
                    f.argtypes, f.restype = [ctypes.c_void_p], restype
                    f(self._c)
        freeLibrary(dll._handle)
