"""The declarative system file: TOML (``.toml``) or JSON (``.json``), same structure.

Example (``examples/balloon.toml`` is the full balloon; docs/system-files.md describes every key)::

    # TITOP links: child port -> parent port, i.e. A.ci.m -> B.p.m and B.p.w -> A.ci.w
    links = [["base.c1", "arm.p"]]
    # connections: output -> input, scalars or whole ports (sizes must match), e.g. a
    # controller unit: connections = [["ctrl.y", "arm.joint.tau"]]
    # outputs written to the CSV, in order (scalars, ports, inertial quantities)
    record = ["arm.joint.q[3]", "base.c1.m[16]", "arm.com.position"]
    # optional: an independent Modelica twin (validation/compare_twin.py runs both)
    modelica = "twin/Arm.mo"

    [simulation]                       # defaults of the command-line options (all optional)
    stop = 10.0
    output_interval = 0.01
    tolerance = 3e-5

    [units.base]
    model = "floating_base_c1"         # a TITOP model (titop-fmu models lists them) ...
    mass = 10.0
    inertia = [[5, 0, 0], [0, 10, -7], [0, -7, 10]]
    com = [0, 0, 0]
    "c1.r" = [0, -2, 0]

    [units.arm]
    model = "revolute_c0"              # ... or fmu = "any.fmu": an FMI 2.0 co-simulation FMU
    mass = 2.0                         # (path relative to this file)
    inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    com = [0, -1.2, 0]
    axis = [0, 0, 1]
    q0 = "170 deg"                     # a number with its unit, converted to the parameter's (rad)

    [inputs]                           # constant values of unconnected inputs
    "base.ext.w" = [0, 117.72, 0, 0, 0, 0]

Top-level keys come before the first ``[table]``: TOML puts every key after a
``[table]`` header in that table (a top-level key found in a table is an error
saying so).

Every other key of a ``[units.NAME]`` table is an FMI parameter; a vector or
matrix value sets ``name[i]`` / ``name[i,j]`` (1-based, FMI structured names).
Keys unknown to the format are errors, so are unknown parameters, variables
and units (checked by :func:`~titop_fmu.cosim.structure.analyse` before
anything runs).

SSP: a unit is an ``ssd:Component`` (its FMU the ``source``), its
parameters an ``ssv:ParameterSet``, a connection an ``ssd:Connection``
(``startElement.startConnector -> endElement.endConnector``), a link two of them
per scalar pair (:mod:`.ssp` writes and reads such packages).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConnectionError_, did_you_mean
from ..control.build import FILE_KEYS, read_matrices
from ..control.expressions import CONSTANTS, FUNCTIONS, ExpressionError
from ..control.signals import Signal, SignalError
from ..quantities import UnitError
from . import values
from .control_unit import is_control_model
from .graph import MOTION, WRENCH, CoSystem
from .names import expand_parameters
from .signals import TableSpec, parse_input

TOP_KEYS = {"connections", "links", "record", "simulation", "units", "inputs", "modelica", "parameters"}
SIMULATION_KEYS = {"stop": float, "output_interval": float, "tolerance": float, "start": float}


@dataclass
class SystemFile:
    """A system read from a file, with the simulation defaults it gives."""

    system: CoSystem
    path: Path
    simulation: dict = field(default_factory=dict)
    twin: Path | None = None            # ``modelica = "<model file>"``: an independent twin of the system


def _load(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ConnectionError_(f"{path}: not valid JSON: {e}") from None
    try:
        import tomllib
    except ImportError:                               # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise ConnectionError_(f"{path}: reading TOML needs Python 3.11 or the tomli package; "
                                   "or write the system as JSON") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConnectionError_(f"{path}: not valid TOML: {e}") from None


def _value(where, v, unit=None, names=None):
    """A unit's parameter: numbers (``true``/``false`` as they are: a unit may have Boolean
    parameters), strings (a number with its unit, an expression of the named ``names``), nested
    lists of them (:func:`.values.read`); ``unit(index)``: the declared unit of an element."""
    try:
        return values.read(v, where, unit, names)
    except (ExpressionError, UnitError) as e:
        raise ConnectionError_(str(e)) from None


def _declared(unit_of, model, key):
    """``unit(index)``: the declared unit of the element ``index`` of the parameter or port ``key``
    of a unit of ``model`` (``unit_of(model, FMI scalar name)``), or None without ``unit_of``."""
    if unit_of is None or not isinstance(model, str):
        return None
    return lambda index: unit_of(model, f"{key}[{','.join(str(i + 1) for i in index)}]" if index else key)


@dataclass(frozen=True)
class Binding:
    """A value that a system file writes with named parameters: the parameter ``key`` of a unit
    of ``model``, or its input ``key`` (``input``), as written (``raw``); :meth:`value` reads it
    again with other values of the parameters (``--set``, ``--vary`` of a parameter). Plain
    data (``unit_of`` a module's function): it pickles."""

    raw: object
    where: str
    key: str
    model: object = None
    unit_of: object = None
    base: Path | None = None
    input: bool = False

    def value(self, names: dict):
        unit = _declared(self.unit_of, self.model, self.key)
        if self.input:
            return parse_input(self.key, self.raw, self.where, self.base, names, unit)
        return _value(self.where, self.raw, unit, names)


def parameters(path, d: dict, unit_names) -> tuple:
    """``(table as written, {name: value})`` of the ``[parameters]`` table of the file content
    ``d`` (:func:`.values.evaluate`); a name must be an identifier that is not a unit's
    (``unit_names``), ``t`` or a name expressions know (``pi``, ``sin``, ...)."""
    table = d.get("parameters", {})
    if not isinstance(table, dict):
        raise ConnectionError_(f"{path}: [parameters] must be a table of NAME = value")
    misplaced(path, "parameters", table)
    for name in table:
        taken = "a unit's name" if name in unit_names else "the time" if name == "t" else \
            "a constant" if name in CONSTANTS else "a function" if name in FUNCTIONS else None
        if not name.isidentifier() or taken:
            raise ConnectionError_(f"{path}: parameters.{name}: a parameter's name is an identifier"
                                   + (f", not {taken}" if taken else " (letters, digits, _)"))
    return dict(table), values.evaluate(table, f"{path}: parameters")


#: the shapes a body may be drawn as: their sizes [m], and the key of their direction
SHAPES = {"box": (3, None), "cylinder": (2, "axis"), "panel": (2, "normal")}
AXES = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}


def read_shape(where, value, names=None) -> dict:
    """A body's ``shape = {...}`` (how a 3-D view draws it), checked: ``{box = [lx, ly, lz]}``,
    ``{cylinder = [radius, length], axis = "z"}``, ``{panel = [a, b], normal = "y"}`` (``a``, ``b``
    along the two other axes, in order), each with ``at = [x, y, z]`` (its centre in the body
    frame; default the centre of mass). Sizes in m (numbers, numbers with their units,
    expressions of the parameters ``names``). Returns ``{"kind", "size", "axis", "at"}``."""
    if not isinstance(value, dict) or len(set(value) & set(SHAPES)) != 1:
        raise ConnectionError_(f"{where}: one of {{box = [lx, ly, lz]}}, {{cylinder = [radius, length], axis = "
                               "\"z\"}}, {{panel = [a, b], normal = \"y\"}} (sizes in m), with at = [x, y, z] if "
                               "not centred on the centre of mass")
    kind = next(k for k in value if k in SHAPES)
    n, direction = SHAPES[kind]
    for key in value:
        if key not in (kind, "at", direction):
            raise ConnectionError_(f"{where}: a {kind} takes {kind}, at" + (f", {direction}" if direction else "")
                                   + f"; not {key!r}")
    size = _value(f"{where}.{kind}", value[kind], lambda index: "m", names)
    if np.shape(size) != (n,) or not all(np.isfinite(size)) or min(size) <= 0:
        raise ConnectionError_(f"{where}.{kind}: {n} sizes > 0 [m], got {value[kind]!r}")
    at = value.get("at")
    if at is not None:
        at = _value(f"{where}.at", at, lambda index: "m", names)
        if np.shape(at) != (3,) or not all(np.isfinite(at)):
            raise ConnectionError_(f"{where}.at: a point [x, y, z] in the body frame [m], got {value['at']!r}")
    axis = None
    if direction:
        axis = value.get(direction, "y" if kind == "panel" else "z")
        axis = AXES.get(axis, axis) if isinstance(axis, str) else _value(f"{where}.{direction}", axis, None, names)
        if np.shape(axis) != (3,) or not np.all(np.isfinite(axis)) or not np.any(axis):
            raise ConnectionError_(f"{where}.{direction}: \"x\", \"y\", \"z\" or a non-zero vector [x, y, z] "
                                   f"in the body frame, got {value.get(direction)!r}")
    return {"kind": kind, "size": [float(x) for x in size], "axis": None if axis is None else
            [float(x) for x in axis], "at": None if at is None else [float(x) for x in at]}


def _pairs(path, d, key):
    items = d.get(key, [])
    if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                              for p in items):
        raise ConnectionError_(f'{path}: "{key}" must be a list of ["from", "to"] pairs of strings')
    return items


def read(path, unit_of=None, expand=None) -> SystemFile:
    """Read a system file; errors name the file and the offending entry. ``unit_of(model,
    scalar)``: the unit a unit's parameter or input is declared in (an FMI unit string, or None),
    to which a value written with its unit is converted, its dimension checked; without it,
    such values are in SI base units. ``expand(content, folder, where)``, when given, rewrites
    the file's content before it is read (tables a higher layer knows, such as flexible bodies)."""
    path = Path(path)
    if not path.is_file():
        raise ConnectionError_(f"no system file {path}")
    d = _load(path)
    system, sim = from_dict(expand(d, path.parent, str(path)) if expand else d, str(path), path.parent, unit_of)
    twin = d.get("modelica")
    if twin is not None and not isinstance(twin, str):
        raise ConnectionError_(f'{path}: modelica = "<path of the twin model, relative to this file>"')
    return SystemFile(system, path, sim, (path.parent / twin).resolve() if twin else None)


def from_dict(d: dict, where: str = "system", base: Path = Path("."), unit_of=None) -> tuple:
    """``(CoSystem, simulation defaults)`` from the content of a system file; ``where`` names
    it in errors, ``fmu`` paths are relative to the folder ``base``, ``unit_of`` as for
    :func:`read`. ``d`` is left as it is, and the system shares nothing mutable with it."""
    path = where
    if not isinstance(d, dict):
        raise ConnectionError_(f"{path}: a system file holds a table, got {type(d).__name__}")
    for key in d:
        if key not in TOP_KEYS:
            where = "; it belongs in [simulation]" if key in SIMULATION_KEYS else did_you_mean(key, TOP_KEYS)
            raise ConnectionError_(f"{path}: unknown key {key!r}{where}; top-level keys: {', '.join(sorted(TOP_KEYS))}")
    units = d.get("units")
    if not isinstance(units, dict) or not units:
        raise ConnectionError_(f"{path}: no [units.NAME] table")
    s = CoSystem()
    s.parameters, named = parameters(path, d, units)
    for name, spec in units.items():
        if not isinstance(spec, dict):
            raise ConnectionError_(f"{path}: units.{name} must be a table")
        misplaced(path, f"units.{name}", spec)
        spec = dict(spec)
        model, fmu = spec.pop("model", None), spec.pop("fmu", None)
        shape = spec.pop("shape", None)
        if (model is None) == (fmu is None):
            raise ConnectionError_(f"{path}: units.{name} needs exactly one of model = \"<TITOP model>\" "
                                   "or fmu = \"<file.fmu>\"")
        if fmu is not None:
            fmu_path = Path(fmu)
            model = str(fmu_path if fmu_path.is_absolute() else (Path(base) / fmu_path).resolve())
        elif not isinstance(model, str):
            raise ConnectionError_(f"{path}: units.{name}.model must be a string")
        params = {}
        for k, v in spec.items():
            if is_control_model(model) and k in CONTROL_TEXT:
                params[k] = _control_text(k, v, Path(base))
                continue
            binding = Binding(v, f"{path}: units.{name}.{k}", k, model, unit_of)
            params[k] = binding.value(named)
            if values.references(v, named):
                s.bindings[f"{name}.{k}"] = binding
        s.add(name, model, params)
        if shape is not None:
            s.units[name].appearance = read_shape(f"{path}: units.{name}.shape", shape, named)
    for a, b in _pairs(path, d, "connections"):
        s.connect(a, b)
    for a, b in _pairs(path, d, "links"):
        s.link(a, b)
    inputs = d.get("inputs", {})
    if not isinstance(inputs, dict):
        raise ConnectionError_(f"{path}: [inputs] must be a table of \"unit.input\" = value")
    misplaced(path, "inputs", inputs)
    for ref, v in inputs.items():
        unit, _, var = ref.partition(".")
        model = s.units[unit].model if unit in s.units else None
        binding = Binding(v, f"{path}: inputs.{ref}", var, model, unit_of, Path(base), input=True)
        s.set_input(ref, binding.value(named))
        if values.references(v, named):
            s.bindings[ref] = binding
    record = d.get("record", [])
    if not isinstance(record, list) or not all(isinstance(r, str) for r in record):
        raise ConnectionError_(f'{path}: "record" must be a list of "unit.output" strings')
    s.record(*record)
    sim = d.get("simulation", {})
    if not isinstance(sim, dict):
        raise ConnectionError_(f"{path}: [simulation] must be a table")
    misplaced(path, "simulation", sim)
    for key in sim:
        if key not in SIMULATION_KEYS:
            raise ConnectionError_(f"{path}: unknown key simulation.{key}{did_you_mean(key, SIMULATION_KEYS)}; "
                                   f"[simulation] keys: {', '.join(SIMULATION_KEYS)}")
    try:
        sim = {k: SIMULATION_KEYS[k](v) for k, v in sim.items()}
    except (TypeError, ValueError):
        raise ConnectionError_(f"{path}: [simulation] values must be numbers") from None
    if sim.get("start", 0.0) != 0.0:
        raise ConnectionError_(f"{path}: simulation.start = {sim['start']:g}: every run starts at t = 0 "
                               "(leave start out, or write 0)")
    return s, sim


#: the parameters of a control unit that are strings: a file (relative to the system file), a
#: recorded quantity
CONTROL_TEXT = ("file", "of")


def _control_text(key, value, base: Path):
    if not isinstance(value, str):
        return value
    if key == "file":
        f = Path(value)
        return str(f if f.is_absolute() else (base / f).resolve())
    return value


def misplaced(path, table: str, content: dict):
    """A top-level key found in a table (written after its ``[table]`` header) is an error
    saying where it belongs."""
    for key in content:
        if key in TOP_KEYS:
            raise ConnectionError_(f"{path}: {table}.{key}: {key} is a top-level key, read here as part of "
                                   f"[{table}]: write it before the first [table]")


def to_dict(system: CoSystem, simulation: dict | None = None) -> dict:
    """The content of a system file (JSON-ready) describing ``system``: what :func:`from_dict`
    reads back as the same system. Units must have a model name or an ``.fmu`` path
    (written absolute); parameters are written as FMI scalars (``com[1]``)."""
    units = {}
    for name, spec in system.units.items():
        if isinstance(spec.model, str) and not spec.model.endswith(".fmu"):
            entry = {"model": spec.model}
        elif isinstance(spec.model, str) or hasattr(spec.model, "__fspath__"):
            entry = {"fmu": str(Path(spec.model).resolve())}
        else:
            raise ConnectionError_(f"unit {name!r}: a {type(spec.model).__name__} cannot be written to a system file")
        entry.update({k: _plain(v) for k, v in spec.parameters.items()})
        if is_control_model(spec.model) and entry.get("file"):          # its matrices, not a path
            entry.update(expand_parameters(read_matrices(entry.pop("file"), FILE_KEYS[spec.model], name)))
        if spec.appearance is not None:
            a = spec.appearance
            entry["shape"] = {a["kind"]: a["size"], **({SHAPES[a["kind"]][1]: a["axis"]} if a["axis"] else {}),
                              **({"at": a["at"]} if a["at"] else {})}
        units[name] = entry
    linked = set()
    for child_port, parent_port in system.links:
        linked.add((f"{child_port}.{MOTION}", f"{parent_port}.{MOTION}"))
        linked.add((f"{parent_port}.{WRENCH}", f"{child_port}.{WRENCH}"))
    out = {"units": units,
           "connections": [list(c) for c in system.connections if tuple(c) not in linked],
           "links": [list(link) for link in system.links],
           "inputs": {ref: _input(v) for ref, v in system.inputs.items()},
           "record": list(system.recorded)}
    if simulation:
        out["simulation"] = {k: float(v) for k, v in simulation.items()}
    return out


def _input(v):
    """An input's value as a system file gives it: a number, a list, a time signal's own form
    (an expression's text, a source's table, a table's data)."""
    if isinstance(v, (Signal, TableSpec)):
        try:
            return v.to_input()
        except SignalError as e:
            raise ConnectionError_(str(e)) from None
    if isinstance(v, list):
        return [_input(x) for x in v]
    return _plain(v)


def _plain(v):
    """Numbers and nested lists of numbers as JSON has them."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
