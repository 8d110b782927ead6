"""Assembling a master (:func:`build`, :func:`simulate`): units made by a factory, set
up, grouped into runs and processes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import ConnectionError_
from .control_unit import CONTROL_MODELS, control_spec
from .fmpy_unit import FMUUnit, fmu_unit_type
from .graph import CoSystem, is_spec
from .master import Master, Result
from .options import Options
from .protocol import UnitFactory
from .stepper import Stepper, make_runs
from .structure import analyse
from .workers import RemoteStepper, interrupts_held, picklable


def is_fmu_path(model) -> bool:
    return hasattr(model, "__fspath__") or (isinstance(model, str) and model.endswith(".fmu"))


class FileUnits(UnitFactory):
    """Units of FMU files (through FMPy), of unit specs (:func:`~.graph.is_spec`: a
    :class:`~.function_unit.FunctionSpec`, ...) and of the control blocks (``model = "pid"``,
    ..., :mod:`.control_unit`); the base of factories that know more model names."""

    def unit_types(self, system: CoSystem) -> dict:
        return {name: control_spec(name, spec.model, spec.parameters).unit_type(name)
                if spec.model in CONTROL_MODELS else self.unit_type(name, spec.model)
                for name, spec in system.units.items()}

    def unit_type(self, name, model):
        if is_spec(model):
            return model.unit_type(name)
        if is_fmu_path(model):
            if not Path(model).is_file():
                raise ConnectionError_(f"unit {name!r}: no FMU file {model}")
            return fmu_unit_type(model)
        raise ConnectionError_(f"unit {name!r}: unknown model {model!r} (expected an .fmu file or a unit spec)")

    def make_unit(self, name, model, parameters, instance=0):
        if is_spec(model):
            return model.make_unit(name, parameters)
        if model in CONTROL_MODELS:
            return control_spec(name, model, parameters).make_unit(name)
        return FMUUnit(f"{name}#{instance}", model, parameters)


def split_runs(sequence, workers) -> list:
    """Runs per process, balancing the base steps (``n``) per macro interval; the group of the
    finest run first. That group stays in the master's process, which coordinates as well:
    a coarse run costs more per base step (more coupling iterations) than its ``n`` says."""
    k = max(1, min(int(workers or 1), len(sequence)))
    groups = [[] for _ in range(k)]
    load = [0] * k
    for r in sorted(range(len(sequence)), key=lambda r: -sequence[r]):
        g = min(range(k), key=lambda i: (load[i], i))
        groups[g].append(r)
        load[g] += sequence[r]
    return [sorted(g) for g in groups if g]


def build(system: CoSystem, units: UnitFactory | None = None, options: Options | None = None, t0=0.0) -> Master:
    """Check ``system``, analyse its loops and create a :class:`Master` with set-up units made
    by ``units`` (default :class:`FileUnits`), in this process or shared by ``options.workers``
    processes: this one, which also coordinates, takes the first group of runs, worker
    processes the others."""
    units = units or FileUnits()
    opt = (options or Options()).resolved()
    groups = split_runs(opt.sequence, opt.workers)
    remote = bool(opt.workers and len(groups) > 1 and picklable((system, units)))
    steppers = []
    try:
        # the workers start (their interpreters, their imports) while this process analyses the
        # system; each one kept as it starts, to be ended whenever Ctrl-C comes
        for k in range(1, len(groups)) if remote else ():
            with interrupts_held():
                steppers.append(RemoteStepper(key=k))
        st = analyse(system, units.unit_types(system))
        if remote:
            for s, g in zip(steppers, groups[1:]):
                s.setup(system, units, opt, g, st)
            # this process's runs are set up while the workers set up theirs
            steppers.append(Stepper(make_runs(system, st, units, opt, groups[0], t0), key=0))
            for s in steppers:
                if not s.in_process:
                    s.result()
            return Master(st, steppers, opt)
    except BaseException:
        for s in steppers:
            s.terminate()
        raise
    opt = dataclasses.replace(opt, workers=0)
    return Master(st, [Stepper(make_runs(system, st, units, opt, range(len(opt.sequence)), t0))], opt)


def simulate(system: CoSystem, stop: float, units: UnitFactory | None = None, output_interval=None,
             options: Options | None = None, progress=False) -> Result:
    """Build, run from 0 to ``stop``, terminate; the :class:`Result` has the observed outputs."""
    master = build(system, units, options)
    try:
        return master.simulate(stop, output_interval, progress=progress)
    finally:
        master.terminate()
