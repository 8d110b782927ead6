"""``titop-fmu models [NAME]``: the TITOP models (block kinds) with their ports and parameters,
as the catalog (:mod:`titop_fmu.fmu.catalog`, the one source of them) defines them."""

from __future__ import annotations

import re

import numpy as np

from .control.blocks import MODELS as CONTROL_MODELS
from .control.build import PARAMETERS as CONTROL_PARAMETERS
from .errors import TitopError
from .fmu import catalog
from .titop.records import DESCRIPTIONS, POINT_QUANTITIES, QUANTITIES
from .titop.units import titop_required


def listing() -> str:
    """Every model kind, one line each: the TITOP models, then the control units."""
    rows = [(catalog.model_identifier(k, 0).replace("_c0", "_c<n>"), kind.description)
            for k, kind in catalog.KINDS.items()]
    w = max(len(r[0]) for r in rows + list(CONTROL_MODELS.items()))
    return "\n".join(["TITOP models: <kind>_c<n> has the n child ports c1 .. cn (0 to 64; titop-fmu build makes "
                      "n = 0, 1, 2)", ""]
                     + [f"  {name:<{w}}  {text}" for name, text in rows]
                     + ["", "Control units (docs/closed-loops.md):", ""]
                     + [f"  {name:<{w}}  {text}" for name, text in CONTROL_MODELS.items()]
                     + ["", "titop-fmu models NAME (e.g. revolute_c1, pid) lists its ports and parameters."])


def describe_control(model: str) -> str:
    """The ports and parameters of the control unit ``model``."""
    ports = {"sum": "u1 .. un in (each of size `size`), y out", "sensor": "y out (what `of` measures)"}
    params = [f"  {name:<12} {'required' if default is None and name not in OPTIONAL else _shown(default)}"
              for name, default in CONTROL_PARAMETERS[model].items()]
    return "\n".join([f"{model}: {CONTROL_MODELS[model]}", "",
                      f"ports: {ports.get(model, 'u in, y out (their sizes from the parameters)')}", "",
                      "parameters (required: the unit must give it, or its file; the others have the default "
                      "shown; docs/closed-loops.md says what each is):"] + params)


#: control parameters without a default that a unit may leave out
OPTIONAL = {"D", "x0", "sample_time", "falling", "tf", "limits", "tt"}


def _shown(value) -> str:
    if value is None:
        return "(none)"
    if value == "":
        return "(a string)"
    return str(value)


def _ranges(values) -> str:
    """``["m/s2"]*3 + ["rad/s2"]*3`` -> ``"[1-3] m/s2, [4-6] rad/s2"``; one value alone as it is."""
    values = [str(v) for v in values]
    if len(set(values)) == 1:
        return values[0]
    out, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            out.append(f"[{start + 1}{f'-{i}' if i - start > 1 else ''}] {values[start]}")
            start = i
    return ", ".join(out)


def _units(unit) -> str:
    if isinstance(unit, tuple) and isinstance(unit[0], tuple):          # a 6x6 matrix, by 3x3 blocks
        return f"3x3 blocks {unit[0][0]}, {unit[0][3]}; {unit[3][0]}, {unit[3][3]}"
    if isinstance(unit, tuple):
        return _ranges(unit)
    return "" if unit in (None, "1") else unit


def _default(value) -> str:
    a = np.asarray(value, dtype=float)
    if a.ndim == 2 and np.allclose(a, a[0, 0] * np.eye(len(a))):
        return f"{a[0, 0]:g} * identity"
    return np.array2string(a, separator=", ", formatter={"float_kind": lambda x: f"{x:g}"}) if a.ndim else f"{a:g}"


def describe(model_id: str) -> str:
    """The ports, recordable quantities and parameters of the model ``model_id``."""
    if model_id in CONTROL_MODELS:
        return describe_control(model_id)
    try:
        iface = catalog.interface_of(model_id)
    except KeyError as e:
        raise TitopError(e.args[0]) from None
    kind, n = catalog.parse_identifier(model_id)
    lines = [f"{model_id}: {iface.description}", ""]
    for causality, names in (("inputs", iface.input_names), ("outputs", iface.output_names)):
        ports: dict = {}
        for v in iface.variables:
            if v.name in names:
                ports.setdefault(v.name.split("[")[0], []).append(v)
        lines.append(f"{causality} (frames and units: docs/system-files.md):")
        names = {port: f"{port}[1..{len(vs)}]" if len(vs) > 1 else port for port, vs in ports.items()}
        w = max(len(x) for x in names.values())
        for port, vs in ports.items():
            lines.append(f"  {names[port]:<{w}}  {catalog.port_text(kind, port)} ({_ranges([v.unit for v in vs])})")
        lines.append("")
    block = catalog.build_unit(model_id, {})[0].block
    if getattr(block, "body", None) is not None:
        points = ["p", "com"] + [f"c{i}" for i in range(1, n + 1)]
        lines.append("also recordable (a system file's record list), in the inertial frame R_i:")
        for q in QUANTITIES:
            names = ", ".join(f"{p}.{q}" for p in points) if q in POINT_QUANTITIES else q
            text = DESCRIPTIONS[q].format(X="X")
            lines.append(f"  {names} ({len(QUANTITIES[q])}: {_ranges(QUANTITIES[q])}): {text}")
        lines.append("")
    lines.append("parameters (required: a system file must give it; the others have the default shown):")
    w = max(len(p.name) for p in iface.params)
    for p in iface.params:
        unit = _units(p.unit)
        lines.append(f"  {p.name:<{w}}  {'required' if p.stated else _default(p.default)}"
                     f"{f' [{unit}]' if unit else ''}: {p.description}")
    return "\n".join(lines)


# -- the reference of docs/system-files.md -------------------------------------------------------

def _generic(text: str, prose: bool = False) -> str:
    """A name of child port 1 written for any child port, ``c1.r`` -> ``c<i>.r``, or in
    ``prose`` its point ``C1`` -> ``C_i``."""
    if prose:
        return re.sub(r"(\b|P)C1\b", r"\1C_i", text.replace("child 1 ", "child i "))
    return re.sub(r"\bc1\b", "c<i>", text)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _components(labels, units) -> list:
    return [f"| {k} | {label} | {unit} |" for k, (label, unit) in enumerate(zip(labels, units), 1)]


def _kind_markdown(kind: str) -> list:
    k = catalog.KINDS[kind]
    iface = catalog.interface(kind, 1)
    name = f"{kind}_c<n>" if k.has_children else kind
    lines = [f"### `{name}`", "", f"{k.description}."]
    if k.has_children:
        lines[-1] += (f" `<n>` child ports `c1` .. `c<n>` (`{kind}_c0`, `{kind}_c1`, ...); "
                      "the rows of `c<i>` are those of each.")
    required = titop_required(iface.input_names)
    lines += ["", "| port | direction | components [unit] | what |", "|---|---|---|---|"]
    for causality, names in (("input", iface.input_names), ("output", iface.output_names)):
        ports: dict = {}
        for v in iface.variables:
            if v.name in names:
                ports.setdefault(v.name.split("[")[0], []).append(v)
        for port, vs in ports.items():
            units = tuple(v.unit for v in vs)
            what = {catalog.MOTION_UNITS: "motion vector (18)", catalog.WRENCH_UNITS: "wrench (6)"}.get(
                units, f"{len(vs)}: {_ranges(units)}" if len(vs) > 1 else units[0])
            direction = causality
            if causality == "input":
                direction += ", required" if any(v.name in required for v in vs) else ", default 0"
            lines.append(f"| `{_generic(port)}` | {direction} | {what} | "
                         f"{_cell(_generic(catalog.port_text(kind, port), prose=True))} |")
    lines += ["", "| parameter | default | unit | meaning |", "|---|---|---|---|"]
    for p in iface.params:
        default = "**required**" if p.stated else f"`{_default(p.default)}`"
        lines.append(f"| `{_generic(p.name)}` | {default} | {_cell(_units(p.unit))} | "
                     f"{_cell(_generic(p.description, prose=True))} |")
    block = catalog.build_unit(catalog.model_identifier(kind, 1), {})[0].block
    if getattr(block, "body", None) is not None:
        points = ", ".join(f"`{p}`" for p in ("p", "com", "c<i>" if k.has_children else None) if p)
        lines += ["", "Recordable in `R_i` (see [Recording outputs](#recording-outputs)): "
                      + ", ".join(f"`<point>.{q}`" for q in POINT_QUANTITIES) + f" for the points {points}; "
                      "`dcm`, `euler`."]
    return lines + [""]


def markdown() -> str:
    """The reference of every model (ports, parameters, recordable quantities) and of the
    components of motion vectors and wrenches, as Markdown: the generated part of
    docs/system-files.md (``titop-fmu models --markdown``)."""
    lines = ["The components of the ports (`[k]` picks component k):", "",
             "| k | motion vector `*.m` (18) | unit |", "|---|---|---|"]
    lines += _components(catalog.MOTION_LABELS, catalog.MOTION_UNITS)
    lines += ["", "| k | wrench `*.w` (6) | unit |", "|---|---|---|"]
    lines += _components(catalog.WRENCH_LABELS, catalog.WRENCH_UNITS)
    lines += ["", "| k | joint motion `joint.q` (3) | unit (revolute; prismatic) |", "|---|---|---|"]
    joint = catalog.port_labels("joint.q", 3)
    rev, pri = catalog.JOINT_UNITS["revolute"][1], catalog.JOINT_UNITS["prismatic"][1]
    lines += [f"| {k} | {label} | {r}; {p} |" for k, (label, r, p) in enumerate(zip(joint, rev, pri), 1)]
    lines.append("")
    for kind in catalog.KINDS:
        lines += _kind_markdown(kind)
    return "\n".join(lines)
