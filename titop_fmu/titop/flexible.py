"""Flexible bodies in system files (docs/flexible-bodies.md, "In a system file"): a unit's
``[units.NAME.flexible]`` table (a beam for the generator, or a neutral modal file) turns the
unit into the flexible variant of its model (``welded_c1`` -> ``welded_c1_f10``) with the
modal data as its FMI parameters (:mod:`titop_fmu.fmu.flexible`). :func:`expand` rewrites
a system file's content so (:func:`titop_fmu.simulation.read_file`); everything downstream sees an ordinary TITOP model."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..blocks.beam import LumpedMass, beam_modal_data, numbers, section
from ..blocks.modal import ModalData
from ..errors import ConnectionError_, ParameterError, did_you_mean
from ..fmu import catalog
from ..fmu.flexible import RIGID_BODY, flexible_values

#: the keys of a [units.NAME.flexible] table
KEYS = ("beam", "masses", "axis", "ydir", "elements", "modal", "modes", "ports", "damping", "stiffening",
        "eta0", "etad0")


def modal_data(table: dict, n_ports: int, base: Path) -> ModalData:
    """The :class:`ModalData` a ``flexible`` table describes (a beam or a modal file, its first
    ``modes`` modes, its ports); :class:`ParameterError` naming the key."""
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise ParameterError(unknown[0], f"unknown key{did_you_mean(unknown[0], KEYS)}; keys: {', '.join(KEYS)}")
    if ("beam" in table) == ("modal" in table):
        raise ParameterError("beam", "give exactly one of beam = {...} (the generator) or modal = \"file.npz\"")
    if "modes" not in table:
        raise ParameterError("modes", "missing: the number of clamped modes kept")
    modes = table["modes"]
    if _number(modes) and modes > catalog.MAX_MODES:
        raise ParameterError("modes", f"at most {catalog.MAX_MODES}, got {modes!r}")
    if "beam" in table:
        spec = table["beam"]
        sections = [section(s, f"beam[{i}]") for i, s in enumerate(spec)] if isinstance(spec, list) \
            else [section(spec)]
        masses = table.get("masses", [])
        if not isinstance(masses, list):
            raise ParameterError("masses", "expected a list of {at = s, mass = m, inertia = [[...]]}, "
                                           f"got {masses!r}")
        masses = [_lumped(i, m) for i, m in enumerate(masses)]
        ports = table.get("ports", [])
        if not isinstance(ports, list) or len(ports) != n_ports:
            raise ParameterError("ports", f"the model has {n_ports} child port(s): give as many distances from P "
                                          f"along the beam, got {ports!r}")
        data = beam_modal_data(sections, modes, axis=table.get("axis", (1.0, 0.0, 0.0)), ydir=table.get("ydir"),
                               elements=table.get("elements", 20), ports=ports, masses=masses)
    else:
        for key in ("axis", "ydir", "elements", "masses"):
            if key in table:
                raise ParameterError(key, "is a key of the beam generator, not of a modal file")
        if not isinstance(table["modal"], str):
            raise ParameterError("modal", f"expected the path of a .npz or .mat file, got {table['modal']!r}")
        f = Path(table["modal"])
        data = ModalData.load(f if f.is_absolute() else base / f)
        if isinstance(modes, bool) or not isinstance(modes, int):
            raise ParameterError("modes", f"expected an integer, got {modes!r}")
        data = data.first_modes(modes)
        ports = table.get("ports", list(range(1, data.n_nodes + 1)))
        if not isinstance(ports, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in ports):
            raise ParameterError("ports", f"expected a list of node numbers (1-based), got {ports!r}")
        if len(ports) != n_ports:
            raise ParameterError("ports", f"the model has {n_ports} child port(s), the file gives {len(ports)} "
                                          f"node(s): choose them with ports = [node numbers]")
        data = data.with_nodes([p - 1 for p in ports])
    if "damping" in table:
        zeta = numbers(table["damping"], "damping")
        if zeta.ndim > 1 or (zeta.ndim == 1 and zeta.size != data.n_modes):
            raise ParameterError("damping", f"one ratio for all modes or one per mode ({data.n_modes}), got {zeta.tolist()}")
        data = data.with_damping(zeta)
    return data


#: the keys of a flexible table that --set and sweep --vary change (numbers), and a beam section's
VARIED = ("elements", "modes", "damping", "ports")


def tables(path) -> dict:
    """``{unit: (model, flexible table)}`` of the system file ``path`` as written."""
    from ..cosim.systemfile import _load
    units = _load(Path(path)).get("units") or {}
    return {name: (spec.get("model"), spec["flexible"]) for name, spec in units.items()
            if isinstance(spec, dict) and isinstance(spec.get("flexible"), dict)}


def settable(flexible: dict) -> dict:
    """``{"<unit>.flexible.<key>": value}`` of what ``--set`` and ``sweep --vary`` change in the
    flexible tables ``flexible`` (:func:`tables`): a beam's section values
    (``beam.flexible.beam.EIy``, ``.length``, ...; a beam of one section), ``elements``,
    ``modes``, ``damping`` (one ratio) and the ``ports`` (a vector: ``beam.flexible.ports[1]``)."""
    out = {}
    for name, (_, table) in flexible.items():
        prefix = f"{name}.flexible."
        if isinstance(table.get("beam"), dict):
            out.update({f"{prefix}beam.{k}": v for k, v in table["beam"].items() if _number(v)})
        for key in VARIED:
            value = table.get(key, 0.0 if key == "damping" else None)
            if _number(value) or (key == "ports" and isinstance(value, list) and all(map(_number, value))):
                out[prefix + key] = value
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def apply(cs, flexible: dict, overrides: dict, base: Path, where: str):
    """``(system, other overrides)``: ``cs`` with its flexible units made again from their tables
    (:func:`tables`) changed by the ``overrides`` that name them (:func:`settable`), their modal
    data (and their model, when ``modes`` changes) replacing the old; the unit's other values stay."""
    from ..cosim.names import expand_parameters
    mine = {k: v for k, v in overrides.items() if ".flexible." in k and k.partition(".")[0] in flexible}
    if not mine:
        return cs, overrides
    out = copy.copy(cs)
    out.units = dict(cs.units)
    for name, (model, table) in changed(flexible, mine).items():
        unit = expand_unit(name, {"model": model, "flexible": table}, base, where)
        spec = cs.units[name]
        kept = {k: v for k, v in spec.parameters.items() if not _FLEX.match(k)}
        out.units[name] = replace(spec, model=unit.pop("model"), parameters={**kept, **expand_parameters(unit)})
    return out, {k: v for k, v in overrides.items() if k not in mine}


def changed(flexible: dict, overrides: dict) -> dict:
    """``{unit: (model, table)}``: the flexible tables (:func:`tables`) that the ``overrides``
    naming them (:func:`settable`) change, changed (copies)."""
    changed = {}
    for ref, value in overrides.items():
        if ".flexible." not in ref or ref.partition(".")[0] not in flexible:
            continue
        name, _, key = ref.partition(".flexible.")
        table = changed.setdefault(name, (flexible[name][0], _copy(flexible[name][1])))[1]
        path = key.split(".")
        target = table
        for k in path[:-1]:
            target = target[k]
        last, index = path[-1], None
        if last.endswith("]"):
            last, _, index = last[:-1].partition("[")
        old = target.get(last)
        if index is not None:
            target[last][int(index) - 1] = _like(target[last][int(index) - 1], value)
        else:
            target[last] = [_like(o, v) for o, v in zip(old, value)] if isinstance(old, list) else _like(old, value)
    return changed


#: the FMI parameters of a flexible unit's modal data (:func:`~titop_fmu.fmu.flexible.flexible_values`)
_FLEX = re.compile(r"^(flex\.|c\d+\.(r|phi|psi|K0F|K0M)\b)")


def _copy(table):
    return {k: _copy(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v for k, v in table.items()}


def _like(old, value):
    """``value`` as the table held ``old``: an integer stays one (``modes = 10``)."""
    value = float(np.asarray(value, dtype=float))
    if isinstance(old, int) and not isinstance(old, bool) and value.is_integer():
        return int(value)
    return value


def drawn_beams(path, overrides=None) -> dict:
    """``{unit: ModalData}`` of the beams of the system file ``path`` (the units whose
    ``[units.NAME.flexible]`` table has ``beam = {...}``) with their nodes at every node of the
    mesh, from ``P`` out, so that a 3-D view draws the deformed beam through them all: the same
    mesh and modes as the unit's (its nodes are already stations of the mesh); ``overrides``:
    values of the tables set by name (:func:`settable`)."""
    path = Path(path)
    out = {}
    flexible = tables(path)
    for name, (model, table) in {**flexible, **changed(flexible, overrides or {})}.items():
        if "beam" not in table:
            continue
        n_ports = catalog.parse_model(model)[1]
        data = modal_data(table, n_ports, path.parent)
        stations = [float(np.linalg.norm(x)) for x in data.shape_nodes]
        every = modal_data({**table, "ports": list(table["ports"]) + stations}, n_ports + len(stations), path.parent)
        out[name] = every.with_nodes(range(n_ports, every.n_nodes))
    return out


def _lumped(i, m) -> LumpedMass:
    if not isinstance(m, dict) or set(m) - {"at", "mass", "inertia"} or not {"at", "mass"} <= set(m):
        raise ParameterError(f"masses[{i}]", "expected {at = s, mass = m, inertia = [[...]]} (inertia optional)")
    return LumpedMass(m["at"], m["mass"], m.get("inertia", np.zeros((3, 3))))


def expand_unit(name: str, spec: dict, base: Path, where: str) -> dict:
    """The unit table ``spec`` with its ``flexible`` table turned into the flexible model and
    its parameters (a new table; without ``flexible``, ``spec`` itself)."""
    if "flexible" not in spec:
        return spec
    table = spec["flexible"]
    prefix = f"{where}: units.{name}.flexible"
    if not isinstance(table, dict):
        raise ConnectionError_(f"{prefix} must be a table ([units.{name}.flexible])")
    model = spec.get("model")
    try:
        kind, n_ports, modes = catalog.parse_model(model)
    except KeyError as e:
        raise ConnectionError_(f"{where}: units.{name}: {e.args[0]}") from None
    if not catalog.KINDS[kind].has_children or modes is not None:
        raise ConnectionError_(f"{prefix}: a flexible body replaces the rigid body of a body block "
                               f"(floating_base_c<n>, welded_c<n>, revolute_c<n>, ...), not of {model!r}")
    given = [k for k in spec if k in RIGID_BODY or re.fullmatch(r"c\d+\.r", k)]
    if given:
        raise ConnectionError_(f"{where}: units.{name}.{given[0]}: the flexible body gives its mass properties and "
                               "its ports: leave it out")
    try:
        data = modal_data(table, n_ports, base)
        stiffening = table.get("stiffening", True)
        if not isinstance(stiffening, bool):
            raise ParameterError("stiffening", f"true or false, got {stiffening!r}")
        initial = [None if table.get(key) is None else numbers(table[key], key) for key in ("eta0", "etad0")]
        values = flexible_values(data, stiffening, *initial)
        for key in ("eta0", "etad0"):
            if np.shape(values[f"flex.{key}"]) != (data.n_modes,):
                raise ParameterError(key, f"expected {data.n_modes} values, got {table[key]!r}")
    except ParameterError as e:
        raise ConnectionError_(f"{prefix}.{e.parameter}: {e.detail}") from None
    out = {k: v for k, v in spec.items() if k not in ("flexible", "model")}
    out["model"] = catalog.model_identifier(kind, n_ports, data.n_modes)
    out.update({k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in values.items()})
    return out


def expand(d: dict, base: Path, where: str) -> dict:
    """The content of a system file with every ``[units.NAME.flexible]`` table expanded."""
    units = d.get("units") if isinstance(d, dict) else None
    if not isinstance(units, dict) or not any(isinstance(u, dict) and "flexible" in u for u in units.values()):
        return d
    return {**d, "units": {name: expand_unit(name, spec, base, where) if isinstance(spec, dict) else spec
                           for name, spec in units.items()}}
