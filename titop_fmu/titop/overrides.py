"""Overrides of a system's values by name: what ``--set`` and ``sweep --vary`` change in a
system file.

A system's settable values are its units' parameters, ``unit.parameter`` (``link1.mass``,
``link1.inertia``, ``bus.c1.r``; the initial states too: ``q0``, ``qd0``, ``r0``,
``Theta0``, ``twist0``), and its free inputs, ``unit.port`` (``bus.ext.w``,
``arm.joint.tau``): the inputs no connection feeds, which take a constant value.
Vectors and matrices are whole values (one element is ``link1.com[2]``, see
:func:`titop_fmu.io.assign`); a value not given in the file is the model's default.
"""

from __future__ import annotations

import re

import numpy as np

from ..control.build import PARAMETERS as CONTROL_PARAMETERS
from ..cosim import CoSystem, FileUnits, Variable
from ..cosim.control_unit import control_spec, is_control_model
from ..cosim.names import expand_parameters, grouped
from ..cosim.values import evaluate
from ..fmu import catalog
from ..quantities import si_unit
from .twin import build_titop_unit
from .units import declared_unit, is_titop

_INDEXED = re.compile(r"^(.*)\[([\d,]+)\]$")


def _variables(name, spec) -> list:
    """The unit's variables (``.name``, ``.causality``, ``.start``): a TITOP model's from the
    catalog, a control unit's from its parameters (those given, and the defaults of the
    others) and its block's inputs (a sensor has none: it measures), an FMU's from its model
    description."""
    model = spec.model
    if is_titop(model):
        try:
            return list(catalog.interface_of(model).variables)
        except KeyError:
            pass
    if is_control_model(model):
        defaults = {k: v for k, v in CONTROL_PARAMETERS[model].items() if v is not None and not isinstance(v, str)}
        given = {k: v for k, v in grouped(spec.parameters).items() if not isinstance(v, str)}
        params = expand_parameters({**defaults, **given})
        out = [Variable(n, "parameter", start=v) for n, v in params.items()]
        if model != "sensor":
            out += [Variable(n, "input", start=0.0) for n in control_spec(name, model, spec.parameters).unit_type().input_names]
        return out
    return list(FileUnits().unit_type(name, model).variables.values())


def _fed(cs: CoSystem) -> set:
    """``(unit, port)`` of every input some connection feeds (whole ports)."""
    fed = set()
    for _, target in cs.connections:
        unit, _, var = target.partition(".")
        m = _INDEXED.match(var)
        fed.add((unit, m.group(1) if m else var))
    return fed


def settable(cs: CoSystem) -> dict:
    """``{"unit.parameter" | "unit.input": current value}`` of every parameter and every free
    input of ``cs`` (numbers, nested lists for vectors and matrices)."""
    out = dict(evaluate(cs.parameters, "parameters")) if cs.parameters else {}
    out = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in out.items()}
    fed = _fed(cs)
    for name, spec in cs.units.items():
        variables = _variables(name, spec)
        params = {v.name: spec.parameters.get(v.name, v.start) for v in variables if v.causality == "parameter"}
        for p, v in grouped(params).items():
            out[f"{name}.{p}"] = v
        inputs = {v.name: 0.0 if v.start is None else v.start for v in variables if v.causality == "input"}
        for ref, value in cs.inputs.items():
            unit, _, var = ref.partition(".")
            if unit == name:
                inputs.update(expand_parameters({var: value}))
        for port, v in grouped(inputs).items():
            if (name, port) not in fed:
                out[f"{name}.{port}"] = v
    return out


def bound(cs: CoSystem, overrides: dict) -> tuple:
    """``(overrides, parameters, bindings)``: ``overrides`` with the named parameters among them
    replaced by the values written with them, read again (the others set by name win), and the
    new system's ``[parameters]`` table and bindings."""
    named = {k: v for k, v in overrides.items() if k in cs.parameters}
    rest = {k: v for k, v in overrides.items() if k not in cs.parameters}
    bindings = {ref: b for ref, b in cs.bindings.items()
                if not any(r == ref or r.startswith(ref + "[") or ref.startswith(r + "[") for r in rest)}
    table = {**cs.parameters, **{k: np.asarray(v, dtype=float).tolist() for k, v in named.items()}}
    if not named:
        return rest, table, bindings
    values = evaluate(table, "parameters")
    return {**{ref: b.value(values) for ref, b in bindings.items()}, **rest}, table, bindings


def unit_of(cs: CoSystem):
    """``unit("link1.q0")``: the unit a settable FMI scalar of ``cs`` (``unit.scalar``) is
    declared in (:func:`~.units.declared_unit`), None if not known; a named parameter of the
    ``[parameters]`` table written as a number with its unit (``wing_mass = "25 kg"``), in that
    unit's SI base unit (a value set for it is checked against its dimension)."""
    def unit(name: str):
        if "." not in name:
            return si_unit(cs.parameters.get(name.partition("[")[0]))
        u, _, scalar = name.partition(".")
        spec = cs.units.get(u)
        return None if spec is None else declared_unit(spec.model, scalar)
    return unit


def apply(cs: CoSystem, overrides: dict, check: bool = True) -> CoSystem:
    """A new system: ``cs`` with the ``overrides`` (names of :func:`settable`) set; ``check``:
    every TITOP unit built once to check its values (a :class:`~titop_fmu.errors.ParameterError`
    names the unit and parameter). A named parameter of the ``[parameters]`` table sets every
    value written with it (read again, :class:`~titop_fmu.cosim.systemfile.Binding`), but those
    set here by name: they win, and are no longer tied to it."""
    out = CoSystem()
    params = {}
    inputs = dict(cs.inputs)
    units = set(cs.units)
    overrides, out.parameters, out.bindings = bound(cs, overrides)
    for ref, value in overrides.items():
        unit, _, var = ref.partition(".")
        if unit not in units:
            raise KeyError(ref)
        if any(v.name == var or v.name.startswith(var + "[") for v in _variables(unit, cs.units[unit])
               if v.causality == "parameter"):
            params.setdefault(unit, {}).update(expand_parameters({var: value}))
        else:
            for r in [r for r in inputs if r == ref or r.startswith(ref + "[")]:
                del inputs[r]
            inputs[ref] = value
    for name, spec in cs.units.items():
        out.add(name, spec.model, {**spec.parameters, **params.get(name, {})})
        out.units[name].appearance = spec.appearance
        if check and is_titop(spec.model):
            build_titop_unit(name, out.units[name])
        elif check and is_control_model(spec.model) and spec.model != "sensor":
            control_spec(name, spec.model, out.units[name].parameters)
    out.connections, out.links = list(cs.connections), list(cs.links)
    out.inputs, out.recorded = inputs, list(cs.recorded)
    return out
