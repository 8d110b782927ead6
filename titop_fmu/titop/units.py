"""TITOP units for the co-simulation master: the TITOP FMUs (built into a cache when
absent) or the same blocks in process, and what the master must know of their ports.

:class:`TitopUnits` resolves the model identifiers of ``titop-fmu build``
(``"revolute_c1"``) for ``engine="fmu"`` (``<fmu_dir>/<id>.fmu``, through FMPy) or
``engine="inprocess"`` (the :class:`~titop_fmu.unit.BlockUnit` each FMU wraps, no FMI:
what separates coupling error from FMI overhead); ``.fmu`` paths and
:class:`~titop_fmu.cosim.FunctionSpec` s as :class:`~titop_fmu.cosim.FileUnits` does.
The FMUs are of either kind (``fmu_kind``): ``"standalone"`` (:mod:`titop_fmu.fmu.standalone`,
C only; the default, :data:`DEFAULT_FMU_KIND`) or ``"pythonfmu"`` (:mod:`titop_fmu.fmu.build`,
the reference). The default ``fmu_dir`` is a cache keyed by the kind and the sources the FMUs
embed, so a changed package never runs stale FMUs; in a folder named, an FMU of the other
kind is an error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..cosim import FileUnits, UnitType, Variable
from ..cosim.control_unit import is_control_model
from ..cosim.engine import is_fmu_path
from ..cosim.fmpy_unit import model_description
from ..errors import ConnectionError_, ParameterError

ENGINES = ("fmu", "inprocess")
#: the kinds of TITOP FMU the engine "fmu" runs
FMU_KINDS = ("standalone", "pythonfmu")
#: the kind the engine "fmu" runs by default, by measurement: the balloon through the master
#: takes about twice the time on the pythonfmu kind, whose every FMI call goes through CPython in
#: the FMU (docs/master.md, "Measured figures"); the two kinds compute the same to rounding
DEFAULT_FMU_KIND = "standalone"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

_PARENT_PORT = re.compile(r"^(p|l|r)\.m\[\d+\]$")
_CHILD_WRENCH = re.compile(r"^c\d+\.w\[\d+\]$")
_EULER = re.compile(r"^[\w.]+\.m\[(16|17|18)\]$")


def is_titop(model) -> bool:
    """``model`` names a TITOP model (``"revolute_c1"``): a string that is neither an FMU file
    nor a control model (``"pid"``, ``"sensor"``, ...)."""
    return isinstance(model, str) and not is_fmu_path(model) and not is_control_model(model)


def titop_required(input_names) -> frozenset:
    """Inputs a TITOP block cannot do without: the parent ports' motion vectors and the
    child ports' wrenches (a free child end is set to zero explicitly)."""
    return frozenset(n for n in input_names if _PARENT_PORT.match(n) or _CHILD_WRENCH.match(n))


def titop_attitudes(names) -> tuple:
    """Motion-vector components 16..18 of each motion port: the 3-2-1 Euler angles of its frame."""
    ports = sorted({n[:-len("[16]")] for n in names if n.endswith(".m[16]") and _EULER.match(n)})
    return tuple((f"{p}[16]", f"{p}[17]", f"{p}[18]") for p in ports if f"{p}[18]" in names)


def has_parent_port(t: UnitType) -> bool:
    """``t`` has a TITOP parent port: ``p.m`` (18 inputs) and ``p.w`` (6 outputs), as a body
    block or a sub-assembly FMU (:mod:`.assembly`) has."""
    return all(f"p.m[{k}]" in t.input_index for k in range(1, 19)) and \
        all(f"p.w[{k}]" in t.output_index for k in range(1, 7))


def with_titop_ports(t: UnitType) -> UnitType:
    """``t`` with what the master must know of a TITOP block's ports when it is one (by its
    model identifier) or has a TITOP parent port (a sub-assembly): the required inputs, the
    attitudes and angles of the motion vectors; else ``t``."""
    from ..fmu import catalog
    try:
        catalog.interface_of(t.name)
    except KeyError:
        if not has_parent_port(t):
            return t
    attitudes = titop_attitudes(set(t.input_names) | set(t.output_names))
    return dataclasses.replace(t, required=titop_required(t.input_names), attitudes=attitudes,
                               angles=frozenset(n for tr in attitudes for n in tr))


@lru_cache(maxsize=None)
def declared_unit_type(model_id: str) -> UnitType:
    """The :class:`UnitType` of the TITOP FMU ``model_id`` (``"revolute_c1"``) from its catalog
    interface alone, without dependencies: what a system is checked against
    (:func:`~titop_fmu.titop.checks.check`), at no cost."""
    from ..fmu import catalog
    iface = catalog.interface_of(model_id)
    variables = {v.name: Variable(v.name, v.causality, v.type, v.unit, v.start) for v in iface.variables}
    return with_titop_ports(UnitType(model_id, variables, list(iface.input_names), list(iface.output_names),
                                     [np.zeros(0, dtype=int)] * len(iface.output_names), states=iface.state_names,
                                     state_derivatives=tuple(f"der({x})" for x in iface.state_names)))


def declared_unit(model, scalar: str) -> str | None:
    """The unit the FMI scalar ``scalar`` (a parameter or an input: ``"q0"``, ``"com[2]"``,
    ``"ext.w[4]"``) of a unit of ``model`` is declared in: a TITOP model's from its catalog, an
    FMU file's from its model description; None when not known (a control unit's, a name the
    model does not have: its own error comes later). What a value written with its unit is
    converted to (:func:`titop_fmu.cosim.systemfile.read`)."""
    if is_titop(model):
        return _catalog_units(model).get(scalar)
    if isinstance(model, str) and is_fmu_path(model) and Path(model).is_file():
        from ..cosim.fmpy_unit import fmu_unit_type
        variable = fmu_unit_type(model).variables.get(scalar)
        return None if variable is None else variable.unit
    return None


@lru_cache(maxsize=None)
def _catalog_units(model_id: str) -> dict:
    from ..fmu import catalog
    try:
        return {v.name: v.unit for v in catalog.interface_of(model_id).variables}
    except KeyError:
        return {}


@lru_cache(maxsize=None)
def titop_unit_type(model_id: str) -> UnitType:
    """The :class:`UnitType` of the TITOP FMU ``model_id`` (``"revolute_c1"``), with the
    dependencies the FMU declares (measured on the block as at the FMU build)."""
    from ..fmu import catalog
    from ..fmu.model_description import measure_dependencies
    on_inputs, _ = measure_dependencies(catalog.interface_of(model_id))
    return dataclasses.replace(declared_unit_type(model_id), dependencies=[np.flatnonzero(row) for row in on_inputs],
                               derivatives=True, trial_steps=True)


def default_fmu_dir(kind: str = DEFAULT_FMU_KIND) -> Path:
    """``$XDG_CACHE_HOME/titop-fmu/fmus-<hash of the titop_fmu sources>`` for the pythonfmu FMUs,
    ``fmus-standalone-<hash>`` for the standalone ones."""
    from ..cbuild import cache_root
    h = hashlib.sha256()
    for p in sorted(PACKAGE_ROOT.rglob("*")):
        if p.suffix in (".py", ".c", ".h", ".cpp") and "__pycache__" not in p.parts:
            h.update(p.relative_to(PACKAGE_ROOT).as_posix().encode())
            h.update(p.read_bytes())
    return cache_root() / f"fmus-{'' if kind == 'pythonfmu' else kind + '-'}{h.hexdigest()[:16]}"


def ensure_fmus(model_ids, fmu_dir, kind: str = DEFAULT_FMU_KIND) -> dict:
    """``{model id: path}``, building the missing TITOP FMUs of ``kind`` into ``fmu_dir``."""
    from ..fmu import catalog
    fmu_dir = Path(fmu_dir)
    paths = {m: fmu_dir / f"{m}.fmu" for m in model_ids}
    missing = [m for m, p in paths.items() if not p.is_file()]
    if missing:
        if kind == "standalone":
            from ..fmu.standalone import build_all
        else:
            from ..fmu.build import build_all
        counts, flexible = set(), []
        for m in missing:
            try:
                kind, n, modes = catalog.parse_model(m)
            except KeyError as e:
                raise ConnectionError_(e.args[0]) from None
            if modes is None:
                counts.add(n)
            else:
                flexible.append((kind, n, modes))
        build_all(fmu_dir, children=sorted(counts), flexible=flexible)
    return paths


class TitopUnits(FileUnits):
    """The unit factory of systems of TITOP blocks (see the module docstring); ``paths``
    are the FMU files resolved by :meth:`unit_types` (they go to the worker processes)."""

    def __init__(self, engine: str = "fmu", fmu_dir=None, fmu_kind: str = DEFAULT_FMU_KIND):
        if engine not in ENGINES:
            raise ConnectionError_(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
        if fmu_kind not in FMU_KINDS:
            raise ConnectionError_(f"unknown kind of FMU {fmu_kind!r}; kinds: {', '.join(FMU_KINDS)}")
        self.engine, self.fmu_dir, self.fmu_kind = engine, fmu_dir, fmu_kind
        self.paths: dict = {}

    def unit_types(self, system) -> dict:
        for name, spec in system.units.items():
            if is_titop(spec.model):
                model_interface(name, spec.model)
        titop = sorted({s.model for s in system.units.values() if is_titop(s.model)})
        if self.engine == "fmu" and titop:
            self.paths = ensure_fmus(titop, self.fmu_dir or default_fmu_dir(self.fmu_kind), self.fmu_kind)
        return super().unit_types(system)

    def unit_type(self, name, model):
        if is_titop(model):
            if self.engine == "fmu":
                path = self.paths[model]
                found = fmu_kind(path)
                if found != self.fmu_kind:
                    build = "titop-fmu build" + (" --standalone" if self.fmu_kind == "standalone" else "")
                    raise ConnectionError_(f"unit {name!r}: {path} is a {found} FMU, not {self.fmu_kind}: build "
                                           f"the {self.fmu_kind} FMUs there ({build} --out DIR) or run the {found} "
                                           f"kind (--fmu-kind {found})")
                return with_titop_ports(super().unit_type(name, path))
            model_interface(name, model)
            return titop_unit_type(model)
        return with_titop_ports(super().unit_type(name, model))

    def make_unit(self, name, model, parameters, instance=0):
        if is_titop(model):
            if self.engine == "fmu":
                return super().make_unit(name, self.paths[model], parameters, instance)
            return block_unit(name, model, parameters)
        return super().make_unit(name, model, parameters, instance)


def titop_model(model) -> str | None:
    """The TITOP model identifier of a unit's ``model``: the identifier itself, or that of a TITOP
    block FMU file (an SSP package's) of either kind: its model identifier and variables those of
    the catalog's; None for any other unit."""
    from ..fmu import catalog
    if is_titop(model):
        return model
    if not is_fmu_path(model) or not Path(model).is_file():
        return None
    from ..cosim.fmpy_unit import fmu_unit_type
    t = fmu_unit_type(model)
    try:
        iface = catalog.interface_of(t.name)
    except KeyError:
        return None
    return t.name if list(t.variables) == [v.name for v in iface.variables] else None


def model_interface(name: str, model_id: str) -> catalog.Interface:
    """The catalog interface of the TITOP model of the unit ``name``; an unknown model is a
    :class:`ConnectionError_` naming the unit, with the nearest identifiers."""
    from ..fmu import catalog
    try:
        return catalog.interface_of(model_id)
    except KeyError as e:
        raise ConnectionError_(f"unit {name!r}: {e.args[0]}") from None


def fmu_kind(path) -> str:
    """The kind of the TITOP FMU ``path``: ``"standalone"`` when its model description says it
    needs no execution tool, else ``"pythonfmu"``."""
    return "pythonfmu" if model_description(path).coSimulation.needsExecutionTool else "standalone"


def block_unit(name: str, model_id: str, parameters: dict):
    """The TITOP block ``model_id`` in process, built from FMI parameters exactly as the
    FMU builds it."""
    from ..fmu import catalog
    try:
        unit, _warnings = catalog.build_unit(model_id, parameters)
    except KeyError as e:
        raise ConnectionError_(f"unit {name!r}: {e.args[0]}") from None
    except ParameterError as e:
        raise e.renamed(f"{name}.{e.parameter}") from None
    unit.name, unit.type = name, titop_unit_type(model_id)
    return unit
