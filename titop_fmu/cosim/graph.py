"""A co-simulation system as the user describes it: units, parameters, connections,
links, constant inputs, recorded outputs (:mod:`.systemfile` reads the same from a file)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConnectionError_
from .names import expand_parameters

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: the variables of a linked port pair: motion down the tree, wrench back up
MOTION, WRENCH = "m", "w"


def is_spec(model) -> bool:
    """``model`` is a unit spec: an object that gives its unit's type and makes its units
    (:class:`~.function_unit.FunctionSpec`, :class:`~.signal_unit.SignalSpec`,
    :class:`~.control_unit.ControlSpec`, ...)."""
    return hasattr(model, "unit_type") and hasattr(model, "make_unit")


@dataclass
class UnitSpec:
    """One unit of a system: ``model`` is a model name that the unit factory resolves
    (a TITOP model identifier such as ``"revolute_c1"``), the path of an ``.fmu`` file, or
    a unit spec (:func:`is_spec`)."""

    name: str
    model: object
    parameters: dict = field(default_factory=dict)      # FMI scalar name -> value
    shapes: dict = field(default_factory=dict)          # name -> shape of each vector or matrix given whole
    appearance: dict | None = None                      # how a view draws it (a system file's shape = {...})


class CoSystem:
    """Units, their parameters, the connections between them, constant inputs and
    the outputs to record.

    >>> s = CoSystem()
    >>> s.add("base", "floating_base_c1", mass=10, inertia=np.eye(3), **{"c1.r": [0, -1, 0]})
    >>> s.add("arm", "revolute_c0", mass=1, com=[0, -1, 0])
    >>> s.link("base.c1", "arm.p")          # base.c1.m -> arm.p.m and arm.p.w -> base.c1.w
    >>> s.set_input("base.ext.w", [0, 107.91, 0, 0, 0, 0])
    >>> s.record("arm.joint.q[3]")

    Nothing is checked against the units' variables until :func:`analyse`.
    """

    def __init__(self):
        self.units: dict[str, UnitSpec] = {}
        self.connections: list[tuple[str, str]] = []
        self.links: list[tuple[str, str]] = []
        self.inputs: dict[str, object] = {}
        self.recorded: list[str] = []
        self.parameters: dict[str, object] = {}     # named values as a file writes them ([parameters])
        self.bindings: dict[str, object] = {}       # "unit.parameter" or input -> how it reads them

    def add(self, name: str, model, parameters: dict | None = None, **kw) -> str:
        """Add a unit; parameters as ``parameters={...}`` and/or keywords, vectors and
        matrices allowed (``com=[0, -1, 0]``, ``**{"c1.r": [0, -2, 0]}``)."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConnectionError_(f"unit name {name!r} must be an identifier (letters, digits, _)")
        if name in self.units:
            raise ConnectionError_(f"unit name {name!r} is already used")
        if not isinstance(model, str) and not hasattr(model, "__fspath__") and not is_spec(model):
            raise ConnectionError_(f"unit {name!r}: model must be a model name (e.g. a TITOP model identifier), "
                                   f"an .fmu path or a unit spec (a FunctionSpec, ...), got {model!r}")
        params = dict(parameters or {})
        params.update(kw)
        try:
            expanded = expand_parameters(params)
        except ConnectionError_ as e:
            raise ConnectionError_(f"unit {name!r}: {e}") from None
        self.units[name] = UnitSpec(name, model, expanded,
                                    {k: np.shape(v) for k, v in params.items() if k not in expanded})
        return name

    def connect(self, output: str, input: str):
        """Connect ``"unit.output"`` to ``"unit.input"``: scalars (``a.y[2]``) or
        whole ports (``a.c1.m`` -> ``b.p.m``, sizes must match)."""
        self.connections.append((output, input))

    def link(self, child_port: str, parent_port: str):
        """Link a child port ``"A.ci"`` to a parent port ``"B.p"`` both ways: the motion
        flows down, ``A.ci.m -> B.p.m``, the wrench back up, ``B.p.w -> A.ci.w`` (the port
        pair of a multibody tree). Links must form a forest (checked by :func:`analyse`)."""
        self.links.append((child_port, parent_port))
        self.connect(f"{child_port}.{MOTION}", f"{parent_port}.{MOTION}")
        self.connect(f"{parent_port}.{WRENCH}", f"{child_port}.{WRENCH}")

    def set_input(self, ref: str, value):
        """Give an unconnected input (scalar or port) a constant value."""
        self.inputs[ref] = value

    def record(self, *refs: str):
        """Outputs (scalars or ports) to record, in order."""
        self.recorded.extend(refs)
