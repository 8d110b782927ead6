"""Third-party pieces for the tests of the assembly FMU: a PD controller FMU made with pythonfmu
(packaged with the project's FMI entry points, which make it safe to instantiate many times),
and libcosim (through ``libcosimpy``, the optional extra ``hosts``) as an FMI host with no
algebraic-loop solver."""

from __future__ import annotations

import ctypes
import tempfile
from pathlib import Path
from xml.dom.minidom import parseString
from xml.etree.ElementTree import tostring

import numpy as np
import pytest

CONTROLLER = '''"""A PD controller with direct feedthrough: tau = kp (q_ref - q) - kd qd."""

from pythonfmu import Fmi2Causality, Fmi2Slave, Fmi2Variability, Real

from titop_fmu.fmu.slave import forget_resources, pin_module_globals

pin_module_globals(globals())   # works around a reference-count bug of pythonfmu 0.7


class pd_controller(Fmi2Slave):
    description = "PD controller: tau = kp (q_ref - q) - kd qd"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.resources:
            forget_resources(self.resources)    # as the TITOP FMUs do: a later process imports no copy of ours
        self.kp, self.kd, self.q_ref, self.q, self.qd = 600.0, 80.0, 2.5, 0.0, 0.0
        for name in ("kp", "kd", "q_ref"):
            self.register_variable(Real(name, causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.tunable))
        for name in ("q", "qd"):
            self.register_variable(Real(name, causality=Fmi2Causality.input))
        self.register_variable(Real("tau", causality=Fmi2Causality.output,
                                    getter=lambda: self.kp * (self.q_ref - self.q) - self.kd * self.qd))

    def do_step(self, current_time, step_size):
        return True
'''


def controller_fmu(out: Path) -> Path:
    """Build ``pd_controller.fmu`` in the folder ``out``."""
    from titop_fmu.fmu.build import MODEL_OPTIONS, common_files, compile_shim, package_fmu
    namespace: dict = {}
    exec(compile(CONTROLLER, "pd_controller.py", "exec"), namespace)
    slave = namespace["pd_controller"](instance_name="build", resources=None)

    def description(_guid_parts):
        return parseString(tostring(slave.to_xml(MODEL_OPTIONS), "UTF-8")).toprettyxml(indent="  ", encoding="UTF-8")

    with tempfile.TemporaryDirectory() as tmp:
        shim = compile_shim(Path(tmp) / "shim.so")
        return package_fmu(Path(out) / "pd_controller.fmu", "pd_controller", CONTROLLER, description, shim,
                           common_files())


def recorded_names(cs):
    """The outputs of the assembly FMU of ``cs`` that are its recorded ports, in order."""
    from titop_fmu.cosim import systemfile
    from titop_fmu.titop.assembly import assembly_interface
    iface = assembly_interface(systemfile.to_dict(cs), "x")
    return [n for n in iface.output_names if any(n == r or n.startswith(r + "[") for r in cs.recorded)]


class NotOK(AssertionError):
    """A strict host met a status other than fmi2OK."""


def strict_fmpy_run(path, **kw):
    """FMPy's ``simulate_fmu`` (``kw`` its options; by default the default experiment's stop time,
    output interval and tolerance) as a strict host: debug logging on, every FMI call must
    return fmi2OK and every message the FMU logs must have status fmi2OK, else :class:`NotOK`
    at the call; the result as ``simulate_fmu``'s."""
    from fmpy import extract, read_model_description, simulate_fmu
    from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    from fmpy.logging import addLoggerProxy

    class FMU2StrictSlave(FMU2Slave):     # FMPy binds the functions of classes named FMU2...
        def __init__(self, **kw):
            self.messages = []                      # (status, category, message) since the last call
            super().__init__(**kw)

        def _call(self, fname, *args):
            res = super()._call(fname, *args)          # FMICallException above fmi2Warning
            bad = [m for m in self.messages if m[0] != 0]
            if (self._functions[fname].restype == ctypes.c_int and res != 0) or bad:
                raise NotOK(f"{fname} returned status {res}, logged {bad}")
            self.messages.clear()
            return res

    md = read_model_description(str(path))
    unzipdir = extract(str(path))
    fmu = FMU2StrictSlave(guid=md.guid, unzipDirectory=unzipdir, modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName="strict")
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, category, message:
                                              fmu.messages.append((status, category, message)))
    addLoggerProxy(ctypes.byref(callbacks))
    _CALLBACKS.append(callbacks)    # FMPy's logger proxy keeps a pointer to the last one (never freed)
    fmu.instantiate(callbacks=callbacks, loggingOn=True)
    try:
        return simulate_fmu(unzipdir, fmi_type="CoSimulation", fmu_instance=fmu, model_description=md, **kw)
    finally:
        fmu.freeInstance()


_CALLBACKS = []


def libcosim_complaints(capfd) -> list:
    """The lines of libcosim's log (captured by pytest's ``capfd`` since the last read) at level
    warning or error: libcosim logs an FMU's messages at their status."""
    log = capfd.readouterr()
    return [line for line in (log.out + log.err).splitlines() if "[warning]" in line or "[error]" in line]


def libcosim_run(units: dict, connections, start: dict, outputs, stop: float, step: float):
    """Run FMUs in libcosim's fixed-step algorithm: ``units`` ``{name: path}``, ``connections``
    ``[("a.out", "b.in")]``, ``start`` ``{"a.var": value}`` (before initialization),
    ``outputs`` ``["a.out"]`` read after every step; ``(t, values)`` at ``step, 2 step, ..., stop``."""
    pytest.importorskip("libcosimpy", reason="libcosim runs need libcosimpy (pip install -e '.[hosts]')")
    from fmpy import read_model_description
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    log_output_level(CosimLogLevel.WARNING)
    ns = int(round(step * 1e9))
    ex = CosimExecution.from_step_size(step_size=ns)
    index, vr = {}, {}
    for name, path in units.items():
        index[name] = ex.add_local_slave(local_slave=CosimLocalSlave(fmu_path=str(path), instance_name=name))
        vr[name] = {v.name: v.valueReference for v in read_model_description(str(path)).modelVariables}

    def ref(s):
        unit, _, var = s.partition(".")
        return index[unit], vr[unit][var]

    for a, b in connections:
        assert ex.connect_real_variables(*ref(a), *ref(b)) == 0, f"libcosim: cannot connect {a} -> {b}"
    for s, value in start.items():
        assert ex.real_initial_value(*ref(s), float(value)), f"libcosim: cannot set {s}"
    observer = CosimObserver.create_last_value()
    ex.add_observer(observer=observer)
    refs = [ref(s) for s in outputs]
    n = int(round(stop / step))
    rows = []
    for k in range(n):
        assert ex.step(), f"libcosim: step {k} failed"
        rows.append([observer.last_real_values(slave_index=i, variable_references=[r])[0] for i, r in refs])
    return np.arange(1, n + 1) * step, np.array(rows)


def fmpy_run(units: dict, connections, start: dict, outputs, stop: float, step: float):
    """A fixed-step host written on FMPy's ``FMU2Slave`` that does what libcosim's fixed-step
    algorithm does: after initialization the connections are transferred in order (an output
    read after the inputs it feeds through from are set: consistent initial values); then at
    every communication point all outputs are read, all inputs set (Jacobi: a direct
    feedthrough acts one step late) and every unit steps with its inputs held;
    ``(t, values)`` at ``step, 2 step, ..., stop``."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    fmus, vr = {}, {}
    for name, path in units.items():
        md = read_model_description(str(path))
        vr[name] = {v.name: v.valueReference for v in md.modelVariables}
        fmus[name] = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                               modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)

    def ref(s):
        unit, _, var = s.partition(".")
        return fmus[unit], vr[unit][var]

    try:
        for f in fmus.values():
            f.instantiate()
            f.setupExperiment(startTime=0.0)
        for s, value in start.items():
            f, r = ref(s)
            f.setReal([r], [float(value)])
        for f in fmus.values():
            f.enterInitializationMode()
            f.exitInitializationMode()
        links = [(ref(a), ref(b)) for a, b in connections]
        for (src, r_out), (dst, r_in) in links:          # initial values, consistent
            dst.setReal([r_in], src.getReal([r_out]))
        n = int(round(stop / step))
        rows = []
        for k in range(n):
            values = [src.getReal([r])[0] for (src, r), _ in links]
            for (_, (dst, r)), v in zip(links, values):
                dst.setReal([r], [v])
            for f in fmus.values():
                f.doStep(k * step, step)
            rows.append([f.getReal([r])[0] for f, r in map(ref, outputs)])
        return np.arange(1, n + 1) * step, np.array(rows)
    finally:
        for f in fmus.values():
            f.terminate()
            f.freeInstance()
