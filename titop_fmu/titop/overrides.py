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

from ..cosim import CoSystem, FileUnits
from ..cosim.names import expand_parameters
from ..fmu import catalog
from .monolithic import build_titop_unit

_INDEXED = re.compile(r"^(.*)\[([\d,]+)\]$")


def _variables(name, model) -> list:
    """The unit's variables (``.name``, ``.causality``, ``.start``): a TITOP model's from the
    catalog, an FMU's from its model description."""
    if isinstance(model, str) and not model.endswith(".fmu"):
        try:
            return list(catalog.interface_of(model).variables)
        except KeyError:
            pass
    return list(FileUnits().unit_type(name, model).variables.values())


def _grouped(scalars: dict) -> dict:
    """``{"com[1]": a, "com[2]": b, "com[3]": c, "mass": m}`` -> ``{"com": [a, b, c], "mass": m}``
    (FMI structured names, 1-based, row-major)."""
    out, shapes = {}, {}
    for n, v in scalars.items():
        m = _INDEXED.match(n)
        if not m:
            out[n] = v
            continue
        out.setdefault(m.group(1), None)            # in the order of the first element
        index = tuple(int(i) - 1 for i in m.group(2).split(","))
        shapes.setdefault(m.group(1), {})[index] = v
    for base, items in shapes.items():
        shape = tuple(max(ix[k] for ix in items) + 1 for k in range(len(next(iter(items)))))
        a = np.zeros(shape)
        for ix, v in items.items():
            a[ix] = v
        out[base] = a.tolist()
    return out


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
    out = {}
    fed = _fed(cs)
    for name, spec in cs.units.items():
        variables = _variables(name, spec.model)
        params = {v.name: spec.parameters.get(v.name, v.start) for v in variables if v.causality == "parameter"}
        for p, v in _grouped(params).items():
            out[f"{name}.{p}"] = v
        inputs = {v.name: 0.0 if v.start is None else v.start for v in variables if v.causality == "input"}
        for ref, value in cs.inputs.items():
            unit, _, var = ref.partition(".")
            if unit == name:
                inputs.update(expand_parameters({var: value}))
        for port, v in _grouped(inputs).items():
            if (name, port) not in fed:
                out[f"{name}.{port}"] = v
    return out


def apply(cs: CoSystem, overrides: dict, check: bool = True) -> CoSystem:
    """A new system: ``cs`` with the ``overrides`` (names of :func:`settable`) set; ``check``:
    every TITOP unit built once to check its values (a :class:`~titop_fmu.errors.ParameterError`
    names the unit and parameter)."""
    out = CoSystem()
    params = {}
    inputs = dict(cs.inputs)
    units = set(cs.units)
    for ref, value in overrides.items():
        unit, _, var = ref.partition(".")
        if unit not in units:
            raise KeyError(ref)
        if any(v.name == var or v.name.startswith(var + "[") for v in _variables(unit, cs.units[unit].model)
               if v.causality == "parameter"):
            params.setdefault(unit, {}).update(expand_parameters({var: value}))
        else:
            for r in [r for r in inputs if r == ref or r.startswith(ref + "[")]:
                del inputs[r]
            inputs[ref] = value
    for name, spec in cs.units.items():
        out.add(name, spec.model, {**spec.parameters, **params.get(name, {})})
        if check and isinstance(spec.model, str) and not spec.model.endswith(".fmu"):
            build_titop_unit(name, out.units[name])
    out.connections, out.links = list(cs.connections), list(cs.links)
    out.inputs, out.recorded = inputs, list(cs.recorded)
    return out
