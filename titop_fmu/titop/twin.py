"""The :class:`~titop_fmu.system.System` of a co-simulation system of TITOP units: the same
blocks, built from the same FMI parameters as the FMUs build them, wired by its links (the
monolithic twin, :mod:`.monolithic`; the plant of a closed loop, :mod:`.closedloop`)."""

from __future__ import annotations

from ..cosim import CoSystem
from ..errors import ConnectionError_, ParameterError
from ..fmu import catalog
from ..system import System


def twin(cs: CoSystem, solver: str = "recursive") -> System:
    """The :class:`System` of ``cs`` (TITOP models, links and constant inputs only)."""
    return twin_and_warnings(cs, solver)[0]


def twin_and_warnings(cs: CoSystem, solver: str = "recursive") -> tuple:
    """``(System, [parameter warnings, each naming its unit])``: :func:`twin` and what its
    units' parameters are warned of (e.g. principal moments violating the triangle
    inequality), as a block FMU logs them."""
    s = System(solver)
    messages = []
    for name, spec in cs.units.items():
        if not isinstance(spec.model, str) or spec.model.endswith(".fmu"):
            raise ConnectionError_(f"unit {name!r}: only TITOP model identifiers have a monolithic twin")
        unit, warned = build_titop_unit(name, spec)
        messages += [f"{name}: {w}" for w in warned]
        s.add(name, unit.block)
    linked = set()
    for child_port, parent_port in cs.links:
        s.link(child_port, parent_port)
        linked.add((f"{child_port}.m", f"{parent_port}.m"))
        linked.add((f"{parent_port}.w", f"{child_port}.w"))
    extra = [c for c in cs.connections if tuple(c) not in linked]
    if extra:
        raise ConnectionError_(f"connections other than TITOP links have no monolithic twin: {extra[:3]}")
    for ref, value in cs.inputs.items():
        s.set_input(ref, value)
    return s, messages


def build_titop_unit(name: str, spec) -> tuple:
    """``(BlockUnit, [warnings])`` of the unit ``name`` (a :class:`~titop_fmu.cosim.graph.UnitSpec`
    of a TITOP model); errors name the unit: ``parameter 'arm.mass': ...``."""
    try:
        return catalog.build_unit(spec.model, spec.parameters)
    except KeyError as e:
        raise ConnectionError_(f"unit {name!r}: {e.args[0]}") from None
    except ParameterError as e:
        raise e.renamed(f"{name}.{e.parameter}") from None
