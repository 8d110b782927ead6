"""The FMI adapter: a pythonfmu slave that owns a :class:`~titop_fmu.unit.BlockUnit`.

No equation here. The FMI parameters are kept as scalars until the unit is
built from them (:meth:`Interface.make_unit`, at ``fmi2ExitInitializationMode``
or at the first output read in initialization mode); inputs go straight into
the unit (:meth:`BlockUnit.set_inputs`, which checks them); outputs are read from
:meth:`BlockUnit.outputs` (cached by the unit, recomputed when inputs or
states change: direct feedthrough without a ``doStep``); ``fmi2DoStep`` is
:meth:`BlockUnit.do_step` (the protocol of :class:`titop_fmu.cosim.protocol.Unit`).

Value references: the parameters first, then the inputs, then the outputs, in
the order of :attr:`Interface.variables`.

Errors. In pythonfmu 0.7 a Python exception escaping a callback makes its C++
glue release the Python instance and return ``fmi2Fatal``; any later call on
that instance, ``fmi2FreeInstance`` included, then touches freed objects. So
no callback here lets an exception out: each one catches it, logs the message
with status ``fmi2Error`` through the FMI logger, and returns a harmless value
of the right shape. The FMU's binary entry points (``shim.c``) turn a message
logged with status ``fmi2Error`` during a call into the return status
``fmi2Error`` of that call.

FMU state. ``fmi2GetFMUstate`` returns a snapshot of everything that
determines the future: mode, parameter values, the host's tolerance, the
unit's time, states, inputs and integrator step-size guess (pythonfmu's
default only saves registered variables): :mod:`.state`, serialized to JSON.

Directional derivatives. pythonfmu has no ``fmi2GetDirectionalDerivative``: the
FMU's entry points (``shim.c``) answer it by calling
:meth:`TitopSlave._titop_directional_derivatives` on the slave instance they are
bound to. The binding is made here: while the entry points instantiate the
slave (``fmi2Instantiate``, ``fmi2Reset``), ``__init__`` hands ``self`` to the
entry points' ``titop_fmu_bind``, found in the FMU's own binary
(``<fmu>/binaries/linux64/<model identifier>.so`` next to the resources
folder; the library the host loaded, so the same copy).

Exposed states. The block's continuous states and their derivatives are local variables
after the outputs (``x.<state>``, ``der(x.<state>)``; value references ``[_end, _der0)``
and ``[_der0, _last)``), read from the unit, never set; a directional derivative with any
of them among its references is :meth:`BlockUnit.state_space_derivatives` (exact, on the
forward-mode kernel the FMU carries, ``resources/titop_fmu/libtitop_kernel_dual.so``).

Vendor functions. The entry points also export two functions of this project's
(declared in the model description's ``VendorAnnotations``, tool ``titop-fmu``):
``titopGetTrialSteps``, several steps tried from the current state with given
inputs, the FMU left as it was (:meth:`TitopSlave.trial_steps`), and
``titopGetDirectionalDerivatives``, ``fmi2GetDirectionalDerivative`` for several
seeds (:meth:`TitopSlave.directional_derivatives`), each in one call. A master
measures a unit's step sensitivities and feedthrough with them at the cost of the
computation alone, instead of several FMI calls per step tried or per column
(:meth:`titop_fmu.cosim.run.Run.measure_P`).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys

import numpy as np
from pythonfmu import Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real
from pythonfmu.enums import Fmi2Status

from .. import dual, kernel
from ..errors import ParameterError
from ..unit import check_finite
from .catalog import interface
from .state import InvalidState, Snapshot, from_bytes, to_bytes

INSTANTIATED, INITIALIZATION, STEP, TERMINATED = "instantiated", "initialization", "step", "terminated"

_PINNED = []


def pin_module_globals(namespace: dict):
    """Keep one more reference to the FMU's slave-module namespace.

    pythonfmu 0.7's ``fmi2Instantiate`` looks the slave class up by importing
    the slave module and executing its code again in the module's namespace,
    and then releases that namespace once too often (it ``Py_DECREF``s the
    borrowed result of ``PyModule_GetDict``): after a few instantiations the
    module's ``__dict__`` is freed under it and the process crashes (PythonFMU
    issue #228 shows the same symptoms). The slave module calls this at every
    execution of its code, so each of those executions adds the reference the
    following release takes away.
    """
    _PINNED.append(namespace)


_SHIMS = {}


def _bind_to_entry_points(slave) -> bool:
    """Hand ``slave`` to the entry points of its FMU (``titop_fmu_bind`` of ``shim.c``), which
    keep a reference to it while they instantiate it; False outside an FMU (no resources, no
    binary, an older binary)."""
    resources = getattr(slave, "resources", None)
    if not resources:
        return False
    path = os.path.join(os.path.dirname(os.path.abspath(resources)), "binaries", "linux64",
                        f"{type(slave).__name__}.so")
    bind = _SHIMS.get(path, False)
    if bind is False:
        bind = None
        if os.path.isfile(path):
            try:
                # PyDLL: the call keeps the GIL (the bind function takes a reference); a library
                # already loaded by the host is not loaded again (the same handle)
                bind = getattr(ctypes.PyDLL(path), "titop_fmu_bind", None)
            except OSError:
                bind = None
            if bind is not None:
                bind.argtypes, bind.restype = [ctypes.py_object], ctypes.c_int
        _SHIMS[path] = bind
    return bool(bind is not None and bind(slave))


def forget_resources(resources: str):
    """Take the FMU's ``resources`` folder off ``sys.path``, where pythonfmu appended it to import
    the slave module (done by then: its packages are imported). Left there, a process this one
    starts later (multiprocessing and Dask copy ``sys.path``) would import ``titop_fmu`` from the
    FMU's folder, which goes with the FMU, ahead of an editable install."""
    folder = os.path.realpath(resources)
    sys.path[:] = [p for p in sys.path if not (p and os.path.realpath(p) == folder)]


class TitopSlave(Fmi2Slave):
    """Generic TITOP FMU; a generated subclass per FMU sets :attr:`KIND` and :attr:`CHILDREN`
    (and :attr:`MODES`, the modes of a flexible body, None for a rigid one)."""

    KIND = "welded"
    CHILDREN = 0
    MODES = None
    #: the unit gives directional derivatives (``providesDirectionalDerivative``)
    DERIVATIVES = True
    #: pythonfmu's categories and the FMU's own, of its messages of status fmi2OK on the parameters
    log_categories = {**Fmi2Slave.log_categories, "logParameters": "Log unusual parameter values accepted as "
                      "given (principal moments violating the triangle inequality), with fmi2OK status."}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if getattr(self, "resources", None):            # the FMU's own C kernels, before any unit
            kernel.bundle(os.path.join(self.resources, "titop_fmu", kernel.KERNEL_LIBRARY))
            dual.bundle(os.path.join(self.resources, "titop_fmu", dual.DUAL_LIBRARY))
            forget_resources(self.resources)
        self.iface = iface = self.interface()
        self.modelName = iface.model_identifier
        self.description = iface.description
        n_par, n_in = iface.n_params, len(iface.input_names)
        self._in0, self._out0 = n_par, n_par + n_in
        self._end = self._out0 + len(iface.output_names)
        self._der0 = self._end + len(iface.state_names)        # the states, then their derivatives
        self._last = self._der0 + len(iface.state_names)
        self._is_int = np.array([v.type == "Integer" for v in iface.variables])
        self._known = {}                    # value-reference sets -> positions (_positions)
        self._params = list(iface.defaults())
        self._pending = np.array([v.start for v in iface.variables if v.causality == "input"],
                                 dtype=float).reshape(n_in)      # inputs while there is no unit
        self._unit = None
        self._unit_settings = None          # the _settings() the unit was built from
        self._t0 = 0.0
        self._tolerance = None              # the host's, from fmi2SetupExperiment
        self._mode = INSTANTIATED
        for vr, v in enumerate(iface.variables):
            cls = Integer if v.type == "Integer" else Real
            kw = dict(causality=getattr(Fmi2Causality, v.causality), description=v.description,
                      getter=self._getter(vr), setter=None)
            if v.causality == "parameter":
                kw["variability"] = Fmi2Variability.fixed
            else:
                kw["variability"] = Fmi2Variability.continuous
            self.register_variable(cls(v.name, **kw), nested=False)
        _bind_to_entry_points(self)

    def interface(self):
        """The :class:`~.catalog.Interface` of this FMU (parameters, ports, how to build the unit)."""
        return interface(self.KIND, self.CHILDREN, self.MODES)

    def _getter(self, vr):
        return lambda: self._read([vr], integer=bool(self._is_int[vr]))[0]

    # -- logging and errors -------------------------------------------------------------------
    def _error(self, call, exc):
        if isinstance(exc, ParameterError):
            msg = f"{call}: invalid {exc}"
        elif isinstance(exc, _FmiUsageError):
            msg = f"{call}: {exc}"
        else:
            msg = f"{call}: {type(exc).__name__}: {exc}"
        self.log(msg, Fmi2Status.error)

    def _name(self, vr):
        return self.iface.variables[vr].name if 0 <= vr < self._last else f"<value reference {vr}>"

    # -- the unit ---------------------------------------------------------------------------
    def _settings(self):
        """What the unit is built from: the parameter values and the host's tolerance."""
        return tuple(self._params), self._tolerance

    def _ensure_unit(self):
        """The unit for the current parameters and tolerance (built or rebuilt if they changed).

        A known and accepted property of the parameters (principal moments violating the
        triangle inequality) is logged with status fmi2OK, category ``logParameters`` (the
        FMU's own: ``logStatusWarning`` is for messages of status fmi2Warning), since a warning
        status would stop the hosts that treat any status but fmi2OK as fatal.
        The host's tolerance, when it gave one, is the integrator's ``rtol`` and ``atol``
        in place of the parameters'."""
        settings = self._settings()
        if self._unit is None or self._unit_settings != settings:
            inputs = self._inputs()
            params, tolerance = settings
            unit, warns = self.iface.make_unit(params)
            for w in warns:
                self.log(f"parameter warning: {w}", Fmi2Status.ok, "logParameters")
            if tolerance is not None:
                unit.rtol = unit.atol = tolerance
            unit.reset(self._t0)
            unit.set_inputs(unit.ALL, inputs)
            self._unit, self._unit_settings = unit, settings
        return self._unit

    def _inputs(self):
        return self._unit.u if self._unit is not None else self._pending

    def _outputs(self):
        if self._mode == INITIALIZATION:
            return self._ensure_unit().outputs()
        if self._unit is None:
            raise _FmiUsageError("outputs are available from fmi2EnterInitializationMode on")
        return self._unit.outputs()

    # -- reading and writing ----------------------------------------------------------------
    def _check(self, vr, integer):
        if not 0 <= vr < self._last:
            raise _FmiUsageError(f"no variable has the value reference {vr}")
        if self._is_int[vr] != integer:
            raise _FmiUsageError(f"{self._name(vr)} is {'not ' if integer else ''}an Integer variable")

    def _positions(self, vrs, lo, hi):
        """Positions ``vr - lo`` of value references that all lie in ``[lo, hi)``, or None.
        The hosts repeat a few sets of value references: the answer is kept per set."""
        key = (lo, tuple(vrs))
        idx = self._known.get(key, False)
        if idx is False:
            idx = np.array(key[1], dtype=np.int64) - lo if key[1] and lo <= min(key[1]) and \
                max(key[1]) < hi else None
            if len(self._known) < 1024:
                self._known[key] = idx
        return idx

    def _read(self, vrs, integer=False):
        if not integer:
            idx = self._positions(vrs, self._out0, self._end)
            if idx is not None:
                return self._outputs()[idx].tolist()                   # the usual call
        out = []
        for vr in np.asarray(vrs, dtype=np.int64).tolist():
            self._check(vr, integer)
            if vr < self._in0:
                out.append(self._params[vr])
            elif vr < self._out0:
                out.append(float(self._inputs()[vr - self._in0]))
            elif vr < self._end:
                out.append(float(self._outputs()[vr - self._out0]))
            elif vr < self._der0:
                self._outputs()                 # the unit, or the error of a mode without it
                out.append(float(self._unit.x[vr - self._end]))
            else:
                self._outputs()
                out.append(float(self._unit.state_derivatives()[vr - self._der0]))
        return out

    def _write(self, vrs, values, integer=False):
        if not integer:
            idx = self._positions(vrs, self._in0, self._out0)
            if idx is not None:
                self._set_inputs(idx, values)                              # the usual call
                return
        values = [float(v) for v in values]
        inputs_i, inputs_v = [], []
        for vr, value in zip(np.asarray(vrs, dtype=np.int64).tolist(), values):
            self._check(vr, integer)
            if vr >= self._end:
                raise _FmiUsageError(f"{self._name(vr)} is a state or its derivative (local) and cannot be set")
            if vr >= self._out0:
                raise _FmiUsageError(f"{self._name(vr)} is an output and cannot be set")
            if vr >= self._in0:
                inputs_i.append(vr - self._in0)
                inputs_v.append(value)
                continue
            if self._mode not in (INSTANTIATED, INITIALIZATION):
                raise _FmiUsageError(f"parameter {self._name(vr)} is fixed: set it before "
                                     "fmi2ExitInitializationMode")
            self._params[vr] = int(value) if integer else value
        if inputs_i:
            self._set_inputs(np.array(inputs_i), inputs_v)

    def _set_inputs(self, idx, values):
        if self._unit is not None:
            self._unit.set_inputs(idx, values)    # checks every value is finite, else unchanged
            return
        u = self._pending.copy()
        u[idx] = check_finite(self.iface.input_names, idx, values)
        self._pending = u

    # -- FMI callbacks (none lets an exception out) ------------------------------------------
    def get_real(self, vrs):
        try:
            return self._read(vrs)
        except Exception as e:
            self._error("fmi2GetReal", e)
            return [math.nan] * len(vrs)

    def set_real(self, vrs, values):
        try:
            self._write(vrs, values)
        except Exception as e:
            self._error("fmi2SetReal", e)

    def get_integer(self, vrs):
        try:
            return [int(v) for v in self._read(vrs, integer=True)]
        except Exception as e:
            self._error("fmi2GetInteger", e)
            return [0] * len(vrs)

    def set_integer(self, vrs, values):
        try:
            self._write(vrs, values, integer=True)
        except Exception as e:
            self._error("fmi2SetInteger", e)

    def get_boolean(self, vrs):
        if len(vrs):
            self._error("fmi2GetBoolean", _FmiUsageError("this FMU has no Boolean variable"))
        return [False] * len(vrs)

    def set_boolean(self, vrs, values):
        if len(vrs):
            self._error("fmi2SetBoolean", _FmiUsageError("this FMU has no Boolean variable"))

    def get_string(self, vrs):
        if len(vrs):
            self._error("fmi2GetString", _FmiUsageError("this FMU has no String variable"))
        return [""] * len(vrs)

    def set_string(self, vrs, values):
        if len(vrs):
            self._error("fmi2SetString", _FmiUsageError("this FMU has no String variable"))

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        """``tolerance`` (None: not defined) sets the integrator's ``rtol`` and ``atol``."""
        try:
            if self._mode != INSTANTIATED:
                raise _FmiUsageError(f"not allowed in mode {self._mode}")
            if tolerance is not None:
                tolerance = float(tolerance)
                if not (math.isfinite(tolerance) and tolerance > 0):
                    raise _FmiUsageError(f"tolerance must be a finite positive number, got {tolerance!r}")
            self._t0, self._tolerance = float(start_time), tolerance
        except Exception as e:
            self._error("fmi2SetupExperiment", e)

    def enter_initialization_mode(self):
        try:
            if self._mode != INSTANTIATED:
                raise _FmiUsageError(f"not allowed in mode {self._mode}")
            self._mode = INITIALIZATION
        except Exception as e:
            self._error("fmi2EnterInitializationMode", e)

    def exit_initialization_mode(self):
        try:
            if self._mode != INITIALIZATION:
                raise _FmiUsageError(f"not allowed in mode {self._mode}")
            self._ensure_unit()
            self._mode = STEP
        except Exception as e:
            self._error("fmi2ExitInitializationMode", e)

    def do_step(self, current_time, step_size):
        try:
            if self._mode != STEP:
                raise _FmiUsageError(f"fmi2DoStep is only allowed after fmi2ExitInitializationMode "
                                     f"(mode: {self._mode})")
            if not (math.isfinite(step_size) and step_size >= 0):
                raise _FmiUsageError(f"invalid communication step size {step_size!r}")
            self._unit.do_step(float(current_time), step_size)
            return True
        except Exception as e:
            self._error("fmi2DoStep", e)
            return False

    def terminate(self):
        self._mode = TERMINATED

    # -- directional derivatives and trial steps (called by the entry points, shim.c) ---------
    def _in_out(self, known_vrs, unknown_vrs, why):
        """``(input positions, output positions)`` of the value references ``known_vrs`` and
        ``unknown_vrs``; :class:`_FmiUsageError` naming one that is not an input, resp.
        an output (``why`` says what the call takes)."""
        known, unknown = [int(vr) for vr in known_vrs], [int(vr) for vr in unknown_vrs]
        in_idx, out_idx = (self._positions(vrs, lo, hi) if vrs else np.zeros(0, dtype=np.int64)
                           for vrs, lo, hi in ((known, self._in0, self._out0), (unknown, self._out0, self._end)))
        for vrs, idx, lo, hi, what in ((unknown, out_idx, self._out0, self._end, "an output"),
                                       (known, in_idx, self._in0, self._out0, "an input")):
            if idx is None:
                bad = next(vr for vr in vrs if not lo <= vr < hi)
                raise _FmiUsageError(f"{self._name(bad)} is not {what}: {why}")
        return in_idx, out_idx

    def _in_out_states(self, known_vrs, unknown_vrs):
        """:meth:`_in_out` with states among the knowns and state derivatives among the
        unknowns: positions in ``[inputs, states]`` and ``[outputs, state derivatives]``."""
        n_in, n_out = self._out0 - self._in0, self._end - self._out0
        found = []
        for vrs, spans, what in ((known_vrs, ((self._in0, self._out0, 0), (self._end, self._der0, n_in)),
                                  "an input or a state"),
                                 (unknown_vrs, ((self._out0, self._end, 0), (self._der0, self._last, n_out)),
                                  "an output or a state derivative")):
            idx = np.empty(len(vrs), dtype=np.int64)
            for k, vr in enumerate(int(v) for v in vrs):
                span = next((sp for sp in spans if sp[0] <= vr < sp[1]), None)
                if span is None:
                    raise _FmiUsageError(f"{self._name(vr)} is not {what}: directional derivatives are given of "
                                         "outputs and state derivatives with respect to inputs and states")
                idx[k] = vr - span[0] + span[2]
            found.append(idx)
        return found[0], found[1]

    def directional_derivatives(self, unknown_vrs, known_vrs, seeds) -> np.ndarray:
        """``(d unknowns / d knowns) @ seeds`` (``(len(known_vrs), k)``) at the current states and
        inputs, ``(len(unknown_vrs), k)``: outputs w.r.t. inputs (FMI 2.0 co-simulation) or,
        as the FMU exposes its continuous states (``ModelStructure/Derivatives``), outputs and
        state derivatives w.r.t. inputs and states. Raises :class:`_FmiUsageError` for other
        value references or before the outputs are available."""
        if not self.DERIVATIVES:
            raise _FmiUsageError("this FMU gives no directional derivatives (providesDirectionalDerivative "
                                 "is false)")
        seeds = np.asarray(seeds, dtype=float)
        if seeds.shape[0] != len(known_vrs):
            raise _FmiUsageError(f"{len(known_vrs)} known value references but {seeds.shape[0]} seed values")
        states = any(int(vr) >= self._end for vr in (*known_vrs, *unknown_vrs))
        in_idx, out_idx = self._in_out_states(known_vrs, unknown_vrs) if states else \
            self._in_out(known_vrs, unknown_vrs, "directional derivatives are given of outputs with respect to inputs")
        if not np.isfinite(seeds).all():
            raise _FmiUsageError("non-finite seed value(s)")
        if not len(out_idx):
            return np.zeros((0, seeds.shape[1]))
        self._outputs()                     # the unit, or the error of a mode without outputs
        if not len(in_idx):
            return np.zeros((len(out_idx), seeds.shape[1]))
        if states:
            return self._unit.state_space_derivatives(out_idx, in_idx, seeds)
        return self._unit.directional_derivatives(out_idx, in_idx, seeds)

    def _titop_directional_derivatives(self, unknown_addr, n_unknown, known_addr, n_known, n_seeds, seed_addr,
                                       out_addr, what):
        """``fmi2GetDirectionalDerivative`` (one seed) and the vendor function
        ``titopGetDirectionalDerivatives`` (``what``) for the entry points: the C arrays at the
        given addresses are read (value references, ``n_seeds`` seeds of ``n_known`` values one
        after the other) and written (their derivatives, ``n_unknown`` each, likewise); returns
        the messages logged during the call (:meth:`_entry_point`)."""
        def call():
            seeds = np.array(_c_array(ctypes.c_double, seed_addr, n_known * n_seeds)).reshape(n_seeds, n_known).T
            dv = self.directional_derivatives(_c_array(ctypes.c_uint, unknown_addr, n_unknown),
                                              _c_array(ctypes.c_uint, known_addr, n_known), seeds)
            if n_unknown * n_seeds:
                (ctypes.c_double * (n_unknown * n_seeds)).from_address(out_addr)[:] = dv.T.ravel().tolist()
        return self._entry_point(what, call)

    def trial_steps(self, t, h, known_vrs, held, end, unknown_vrs) -> np.ndarray:
        """:meth:`titop_fmu.cosim.protocol.Unit.trial_steps` by value references: per column
        of ``held`` (``(len(known_vrs), k)``), from the current state, the inputs ``known_vrs``
        set to it, a step of ``h`` from ``t``, the inputs set to ``end``, the outputs
        ``unknown_vrs`` read; the FMU left as it was. Raises :class:`_FmiUsageError` for
        other value references, outside step mode or for an invalid step."""
        if self._mode != STEP:
            raise _FmiUsageError(f"trial steps are only allowed after fmi2ExitInitializationMode (mode: {self._mode})")
        if not (math.isfinite(h) and h >= 0):
            raise _FmiUsageError(f"invalid communication step size {h!r}")
        in_idx, out_idx = self._in_out(known_vrs, unknown_vrs, "trial steps set inputs and read outputs")
        return self._unit.trial_steps(float(t), h, in_idx, held, end, out_idx)

    def _titop_trial_steps(self, t, h, known_addr, n_known, n_trials, held_addr, end_addr, unknown_addr, n_unknown,
                           out_addr):
        """The vendor function ``titopGetTrialSteps``: ``held`` (``n_known`` values per trial,
        trial after trial), ``end`` and the value references are read at the given addresses,
        the outputs (``n_unknown`` per trial) written; returns the messages logged."""
        def call():
            held = np.array(_c_array(ctypes.c_double, held_addr, n_known * n_trials)).reshape(n_trials, n_known).T
            Y = self.trial_steps(t, h, _c_array(ctypes.c_uint, known_addr, n_known), held,
                                 _c_array(ctypes.c_double, end_addr, n_known),
                                 _c_array(ctypes.c_uint, unknown_addr, n_unknown))
            if n_unknown * n_trials:
                (ctypes.c_double * (n_unknown * n_trials)).from_address(out_addr)[:] = Y.T.ravel().tolist()
        return self._entry_point("titopGetTrialSteps", call)

    def _entry_point(self, what, call):
        """``call()`` for one of the entry points' own functions: an exception is logged as
        an error of ``what``; returns the messages logged during the call, taken from the log
        queue (``[(status, category, message)]``), for the entry points to relay. Never raises."""
        queue = self._get_log_queue()
        start = len(queue)
        try:
            call()
        except Exception as e:
            try:
                self._error(what, e)
            except Exception:
                pass
        try:
            msgs = [(int(m.status), str(m.category or ""), str(m.msg)) for m in queue[start:]]
            del queue[start:]
            return msgs
        except Exception:
            return [(int(Fmi2Status.error), "logStatusError", f"{what}: the messages could not be read")]

    # -- FMU state --------------------------------------------------------------------------
    def _get_fmu_state(self):
        try:
            unit = None
            if self._unit is not None and self._unit_settings == self._settings():
                unit = self._unit.get_state()
            return Snapshot(self.iface.model_identifier, self._mode, self._params, self._t0,
                             None if unit is not None else self._inputs().copy(), unit, self._tolerance)
        except Exception as e:
            self._error("fmi2GetFMUstate", e)
            return InvalidState(f"the state could not be saved ({type(e).__name__}: {e})")

    def _set_fmu_state(self, state):
        before = self._params, self._t0, self._tolerance, self._unit, self._unit_settings, self._pending, self._mode
        try:
            if isinstance(state, InvalidState):
                raise _FmiUsageError(state.message)
            if not isinstance(state, Snapshot) or state.model != self.iface.model_identifier:
                raise _FmiUsageError("the FMU state belongs to another FMU")
            self._params, self._t0, self._tolerance = list(state.params), state.t0, state.tolerance
            if state.unit is not None:
                if self._unit is None or self._unit_settings != self._settings():
                    self._unit = None
                    self._pending = np.array(state.unit[2])
                    self._ensure_unit()
                self._unit.set_state(state.unit)
            else:
                self._unit, self._unit_settings = None, None
                self._pending = state.inputs.copy()
            self._mode = state.mode
        except Exception as e:                          # the instance as it was (its parameters too)
            self._params, self._t0, self._tolerance, self._unit, self._unit_settings, self._pending, self._mode = before
            self._error("fmi2SetFMUstate", e)

    _fmu_state_to_bytes = staticmethod(to_bytes)
    _fmu_state_from_bytes = staticmethod(from_bytes)


def _c_array(ctype, addr, n) -> list:
    """The ``n`` values of type ``ctype`` at the address ``addr`` of a C array."""
    return (ctype * n).from_address(addr)[:] if n else []


class _FmiUsageError(Exception):
    """The host called a function in a way FMI 2.0 does not allow."""
