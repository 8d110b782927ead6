"""Where the units come from: the same system runs on FMUs (``"fmu"``: FMPy) or on
in-process blocks (``"inprocess"``: the :class:`~titop_fmu.unit.BlockUnit` each
TITOP FMU wraps), so a benchmark can tell coupling error from FMI overhead.

TITOP model identifiers (``"revolute_c1"``) resolve to ``<fmu_dir>/<id>.fmu``;
when absent, the FMUs are built there (``titop_fmu.fmu.build``). The default
``fmu_dir`` is a cache keyed by the sources the FMUs embed, so a changed
package never runs stale FMUs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from ..errors import ConnectionError_

from .cosim import Master, Options, Result, Run, Stepper, extrapolation_weights
from .graph import CoSystem, FunctionSpec, analyse
from .units import FMUUnit, FunctionUnit, fmu_unit_type, titop_block_unit, titop_unit_type

ENGINES = ("fmu", "inprocess")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def default_fmu_dir() -> Path:
    """``$XDG_CACHE_HOME/titop-fmu/fmus-<hash of the titop_fmu sources>``."""
    h = hashlib.sha256()
    for p in sorted(PACKAGE_ROOT.rglob("*")):
        if p.suffix in (".py", ".c") and "__pycache__" not in p.parts:
            h.update(p.relative_to(PACKAGE_ROOT).as_posix().encode())
            h.update(p.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "titop-fmu" / f"fmus-{h.hexdigest()[:16]}"


def _is_path(model) -> bool:
    return hasattr(model, "__fspath__") or (isinstance(model, str) and model.endswith(".fmu"))


def ensure_fmus(model_ids, fmu_dir) -> dict:
    """``{model id: path}``, building the missing TITOP FMUs into ``fmu_dir``."""
    fmu_dir = Path(fmu_dir)
    paths = {m: fmu_dir / f"{m}.fmu" for m in model_ids}
    missing = [m for m, p in paths.items() if not p.is_file()]
    if missing:
        from ..fmu import catalog
        from ..fmu.build import build_all
        counts = set()
        for m in missing:
            try:
                counts.add(catalog.parse_identifier(m)[1])
            except KeyError:
                raise ConnectionError_(f"unknown TITOP FMU {m!r}: not a model identifier of titop-fmu build "
                                       f"and no file {paths[m]}") from None
        build_all(fmu_dir, children=sorted(counts))
    return paths


def unit_types(system: CoSystem, engine: str, fmu_dir=None) -> dict:
    if engine not in ENGINES:
        raise ConnectionError_(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    types = {}
    titop = [s.model for s in system.units.values() if isinstance(s.model, str) and not _is_path(s.model)]
    paths = ensure_fmus(sorted(set(titop)), fmu_dir or default_fmu_dir()) if engine == "fmu" and titop else {}
    for name, spec in system.units.items():
        m = spec.model
        if isinstance(m, FunctionSpec):
            types[name] = m.unit_type(name)
        elif _is_path(m):
            if not Path(m).is_file():
                raise ConnectionError_(f"unit {name!r}: no FMU file {m}")
            types[name] = fmu_unit_type(m)
        elif engine == "fmu":
            types[name] = fmu_unit_type(paths[m])
        else:
            try:
                types[name] = titop_unit_type(m)
            except KeyError:
                raise ConnectionError_(f"unit {name!r}: unknown TITOP model {m!r} (e.g. floating_base_c1, "
                                       "revolute_c0, prismatic_c1, welded_c2, loop_closure)") from None
    return types, paths


def make_unit(name, spec, engine, paths, instance=0):
    """The unit ``name`` of a system, created (not set up) for ``engine``."""
    m = spec.model
    if isinstance(m, FunctionSpec):
        return FunctionUnit(name, m)
    if _is_path(m):
        return FMUUnit(f"{name}#{instance}", m)
    if engine == "fmu":
        return FMUUnit(f"{name}#{instance}", paths[m])
    return titop_block_unit(name, m)


def make_runs(system: CoSystem, st, engine, paths, opt: Options, indices, t0=0.0) -> dict:
    """``{run index: Run}`` with set-up units for the runs ``indices`` of ``opt.sequence``."""
    degree = int(opt.predictor_degree) if opt.predictor_degree is not None else 2 * len(opt.sequence) - 1
    weights = extrapolation_weights(opt.sequence)
    unit_rtol = opt.unit_rtol if opt.unit_rtol is not None else max(1e-13, min(1e-8, opt.tol * 3e-4))
    runs = {}
    for r in indices:
        units = []
        for j, (name, spec) in enumerate(system.units.items()):
            u = make_unit(name, spec, engine, paths, r)
            params = dict(spec.parameters)
            for p in ("rtol", "atol"):              # the units' own integration below the coupling error
                if p in st.types[j].variables and p not in params:
                    params[p] = unit_rtol
            u.setup(params, st.constants[j], t0)
            units.append(u)
        runs[r] = Run(st, opt, units, opt.sequence[r], degree, weights[r])
    return runs


def _normalized(options):
    opt = options or Options()
    if opt.hold:
        opt = dataclasses.replace(opt, sequence=(1,), fixed=True)
    return opt


def build(system: CoSystem, engine: str = "fmu", options: Options | None = None, fmu_dir=None, t0=0.0):
    """Check ``system``, analyse its loops and create a :class:`Master` with set-up units
    (in this process, or shared by ``options.workers`` processes: this one, which also
    coordinates, takes the first group of runs, worker processes the others)."""
    opt = _normalized(options)
    types, paths = unit_types(system, engine, fmu_dir)
    st = analyse(system, types)
    groups = split_runs(opt.sequence, opt.workers)
    if opt.workers and len(groups) > 1:
        from .parallel import RemoteStepper, picklable
        if picklable(system):
            steppers = []
            try:
                for k, g in enumerate(groups[1:], start=1):
                    steppers.append(RemoteStepper(system, engine, fmu_dir, opt, g, key=k, st=st, paths=paths))
                # this process's runs are set up while the workers start
                steppers.append(Stepper(make_runs(system, st, engine, paths, opt, groups[0], t0), key=0))
                for s in steppers:
                    if not s.in_process:
                        s.result()
            except BaseException:
                for s in steppers:
                    s.terminate()
                raise
            return Master(st, steppers, opt)
    opt = dataclasses.replace(opt, workers=0)
    return Master(st, [Stepper(make_runs(system, st, engine, paths, opt, range(len(opt.sequence)), t0))], opt)


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


def simulate(system: CoSystem, stop: float, engine: str = "fmu", output_interval=None, options=None,
             fmu_dir=None, progress=False) -> Result:
    """Build, run from 0 to ``stop``, terminate; the :class:`Result` has the observed outputs."""
    master = build(system, engine, options, fmu_dir)
    try:
        return master.simulate(stop, output_interval, progress=progress)
    finally:
        master.terminate()
