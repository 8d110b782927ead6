"""A whole system of TITOP units as ONE co-simulation unit (and FMU): the assembly.

Per-block FMUs of a TITOP system have a direct-feedthrough algebraic loop that only a
master with a loop solver resolves. An assembly holds the system's monolithic twin
(:func:`~titop_fmu.titop.monolithic.twin`: the loop solved exactly at every evaluation)
and integrates all its states together with Dormand-Prince 5(4) to the tolerances
``rtol``/``atol`` (the step-size guess is part of the state, so a saved state restores
exactly), so any FMI host can run it.

Its FMI view (:func:`assembly_interface`):

* **parameters**: every parameter of every unit, ``<unit>.<name>`` (``balloon.mass``,
  ``balloon.inertia[1,1]``, ``slider.c1.r[2]``), start values from the system, then
  ``rtol``, ``atol`` of the integrator (the units' own ``rtol``/``atol`` have no use here);
* **inputs**: the free inputs of the units, ``<unit>.<port>``: external wrenches,
  joint efforts or accelerations, imposed accelerations, the wrenches of free child
  ports; start values from the system's constant inputs;
* **outputs**: the wrench ``<unit>.p.w`` of every free parent port, the motion
  ``<unit>.c<i>.m`` of every free child port, and the system's recorded outputs, same
  names (``slider.joint.q[3]``);
* a **sub-assembly**, whose root is a joint body (a parent port ``<unit>.p`` not linked),
  is a body: that port is the FMU's ``p.m`` (18 in) / ``p.w`` (6 out), with the
  conventions of a block's parent port, so it links under any child port as a block does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..cosim import CoSystem
from ..cosim.names import port_names, port_of
from ..cosim.systemfile import from_dict
from ..errors import ConnectionError_
from ..fmu import catalog
from ..fmu.catalog import Interface, Param, ScalarVar
from .assembly_unit import AssemblyUnit, ClosedLoopUnit
from .closedloop import ClosedLoop
from .monolithic import is_closed_loop, twin, twin_and_warnings
from .records import Records
from .totals import refuse

#: the parent port of a sub-assembly, named as a block's
ROOT_PORT = "p"
#: the whole system's integrator at the in-process engine's default tolerance (an exported
#: system gives in any host, at its defaults, what titop-fmu simulate gives)
TOLERANCES = (
    Param("rtol", 1e-12, "1", "relative tolerance of the Dormand-Prince 5(4) integrator of the whole system"),
    Param("atol", 1e-12, "1", "absolute tolerance of the integrator (states in SI units)"),
)
_UNIT_TOLERANCES = {p.name for p in catalog.TOLERANCES}


@dataclass(frozen=True)
class Port:
    """A port of the assembly: ``name`` (FMI), the unit's port it is, its size, and for an
    output that is one scalar of the unit's port, that component (0-based); or an inertial
    quantity of a body (``record``: the recorded entry, :mod:`.records`)."""

    name: str
    unit: str
    port: str
    size: int
    component: int | None = None
    record: str | None = None


@dataclass(frozen=True)
class AssemblyInterface(Interface):
    """An :class:`~titop_fmu.fmu.catalog.Interface` whose unit is a whole system."""

    system: dict = field(default=None, repr=False)      # the system file (systemfile.to_dict)
    units: tuple = ()                                    # (unit name, model identifier) of the TITOP units
    inputs: tuple = ()                                   # Port
    outputs: tuple = ()                                  # Port
    closed: bool = False                                 # time signals or control units: a ClosedLoop

    def cosystem(self, scalars) -> CoSystem:
        """The system with the parameter values ``scalars`` (in :attr:`param_scalars` order)."""
        cs, _ = from_dict(self.system, self.model_identifier)        # a new system each time
        for (name, *_), value in zip(self.param_scalars, scalars):
            unit, dot, param = name.partition(".")
            if dot:
                cs.units[unit].parameters[param] = value
        return cs

    def make_unit(self, scalars) -> tuple:
        """``(AssemblyUnit or ClosedLoopUnit, [warning messages])``; :class:`ParameterError`
        naming the FMI parameter (``balloon.mass``) if one is invalid."""
        cs = self.cosystem(scalars)
        v = self.values(scalars)
        tolerances = catalog.positive("rtol", v["rtol"]), catalog.positive("atol", v["atol"])
        if self.closed:
            loop = ClosedLoop(cs)
            return ClosedLoopUnit(loop, self.inputs, self.outputs, *tolerances, records=self.records(cs, loop)), \
                loop.warnings
        system, messages = twin_and_warnings(cs)
        return AssemblyUnit(system, self.inputs, self.outputs, *tolerances, records=Records(cs)), messages

    @staticmethod
    def records(cs: CoSystem, loop=None) -> Records:
        """The record entries of ``cs`` (of its :class:`ClosedLoop` ``loop``, if one)."""
        return Records(cs) if loop is None else Records(cs, loop.types)


def model_identifier(name: str) -> str:
    """A C and Python identifier from a file name (``balloon-v2`` -> ``balloon_v2``)."""
    mid = re.sub(r"\W", "_", name)
    return mid if re.match(r"[A-Za-z_]", mid) else f"m_{mid}"


def _unit_params(name, model, values) -> list:
    """The catalog parameters of the unit ``name`` (no tolerances) named ``<unit>.<param>``,
    their start values the unit's ``values`` (FMI scalars) over the defaults."""
    out = []
    for p in catalog.interface_of(model).params:
        if p.name in _UNIT_TOLERANCES:
            continue
        flat = [values.get(n, d) for n, _i, d, _u in p.scalars()]
        default = np.reshape(np.array(flat, dtype=object), p.shape).tolist() if p.shape else flat[0]
        out.append(Param(f"{name}.{p.name}", default, p.unit, f"{name}: {p.description}", p.type))
    return out


def assembly_interface(system: dict, model_id: str) -> AssemblyInterface:
    """The FMI interface of the system ``system`` (the content of a system file: TITOP units,
    control units, time signals) as one FMU ``model_id``; :class:`ConnectionError_` if it has
    no twin (or no :class:`ClosedLoop`)."""
    cs, _ = from_dict(system, model_id)
    loop = ClosedLoop(cs) if is_closed_loop(cs) else None
    s = twin(cs) if loop is None else loop.plant          # checks: TITOP units, links (and control units)
    fed = set() if loop is None else loop.fed_ports
    units = tuple((n, spec.model) for n, spec in cs.units.items() if n in s.blocks)
    kind = {n: catalog.parse_identifier(m)[0] for n, m in units}
    params = tuple(q for n, m in units for q in _unit_params(n, m, cs.units[n].parameters)) + TOLERANCES
    linked = {(link.child, link.parent_port) for link in s.links} | \
             {(link.parent, link.child_port) for link in s.links}
    free_parents = [(n, p) for n, b in s.blocks.items() for p in b.parent_ports if (n, p) not in linked]
    root = free_parents[0] if len(free_parents) == 1 and free_parents[0][1] == ROOT_PORT else None

    def fmi_name(unit, port):
        return f"{ROOT_PORT}.{port[2:]}" if (unit, port[:1]) == root else f"{unit}.{port}"

    starts = {}
    for ref, value in (cs.inputs if loop is None else loop.constants).items():
        unit, _, var = ref.partition(".")
        port, k = port_of(var)
        if k:
            starts[(unit, port, k - 1)] = value
        else:
            starts.update({(unit, port, i): v for i, v in enumerate(np.ravel(np.asarray(value, dtype=float)))})
    inputs, outputs = [], []
    for n, b in s.blocks.items():
        for port, size in b.inputs.items():
            if (n, port.rpartition(".")[0]) not in linked and (n, port) not in fed:
                inputs.append(Port(fmi_name(n, port), n, port, size))
        outputs += [Port(fmi_name(n, f"{pp}.w"), n, f"{pp}.w", 6) for pp in b.parent_ports if (n, pp) not in linked]
        outputs += [Port(fmi_name(n, f"{c}.m"), n, f"{c}.m", 18) for c in b.child_ports if (n, c) not in linked]
    known = {(p.unit, p.port) for p in inputs} | fed
    stray = sorted({f"{u}.{p}" for u, p, _ in starts if u in s.blocks and (u, p) not in known})
    if stray:
        raise ConnectionError_(f"{model_id}: constant input(s) {stray} are not free inputs of the system")
    controls = {} if loop is None else {n.name: loop.types[n.name] for n in loop.nodes}
    for n, t in controls.items():                  # a control unit's port that nothing feeds: a setpoint
        inputs += [Port(f"{n}.{port}", n, port, len(names)) for port, names in t.ports("input").items()
                   if (n, port) not in fed]
    taken = {name for p in outputs for name in port_names({p.name: p.size})}       # the FMI scalars
    records = AssemblyInterface.records(cs, loop)
    refuse(records, "an exported FMU")
    for e in records.entries:     # each recorded scalar once: a free port's, or listed twice, is there
        new = [(k, label) for k, label in zip(e.select, e.labels) if label not in taken]
        taken.update(label for _, label in new)
        if len(new) == len(e.select) and e.select == tuple(range(len(e.select))) and len(new) > 1:
            outputs.append(Port(e.ref, e.unit, e.port, len(new), record=e.ref if e.quantity else None))
        else:
            outputs += [Port(label, e.unit, e.port, 1, k, e.ref if e.quantity else None) for k, label in new]
    inertial_vars = {label: (unit, e.description) for e in records.entries if e.quantity
                     for label, unit in zip(e.labels, e.units)}
    variables = [ScalarVar(name, "parameter", params[i].type, default, unit, params[i].description)
                 for i, q in enumerate(params) for name, _index, default, unit in q.scalars()]
    for causality, ports in (("input", inputs), ("output", outputs)):
        for p in ports:
            if p.record:
                variables += [ScalarVar(name, "output", "Real", None, *inertial_vars[name])
                              for name in port_names({p.name: p.size})]
                continue
            if p.unit in controls:
                variables += _control_variables(p, causality, controls[p.unit], starts)
                continue
            b = s.blocks[p.unit]
            size = (b.inputs if causality == "input" else b.outputs_spec)[p.port]
            scalars = catalog.port_variables(kind[p.unit], p.port, size, causality)
            if p.component is not None:
                scalars = [scalars[p.component]]
            names = [p.name] if p.component is not None else \
                [f"{p.name}{v.name[len(p.port):]}" for v in scalars]
            for k, (v, name) in enumerate(zip(scalars, names)):
                start = starts.get((p.unit, p.port, k), 0.0) if causality == "input" else None
                variables.append(ScalarVar(name, causality, "Real", start, v.unit, f"{p.unit}: {v.description}"))
    scalars = tuple((name, i, index, default, unit)
                    for i, q in enumerate(params) for name, index, default, unit in q.scalars())
    description = (f"TITOP assembly {model_id}: {len(units)} units "
                   f"({', '.join(f'{n} {m}' for n, m in units)}), the loop solved exactly inside"
                   + (f", closed by {', '.join(f'{n} {t.name}' for n, t in controls.items())}" if controls else "")
                   + (", driven by time signals" if loop is not None and loop.signals else ""))
    return AssemblyInterface(
        "assembly", 0, model_id, description, params, scalars,
        tuple(v.name for v in variables if v.causality == "input"),
        tuple(v.name for v in variables if v.causality == "output"), tuple(variables),
        system=system, units=units, inputs=tuple(inputs), outputs=tuple(outputs), closed=loop is not None)


def _control_variables(p: Port, causality: str, t, starts: dict) -> list:
    """The FMI variables of a control unit's port ``p`` (in the assembly): no unit (the block's
    signals are the user's), an input's start value the constant it was given (or 0)."""
    scalars = t.scalars(p.port, causality)
    if p.component is not None:
        return [ScalarVar(p.name, causality, "Real", None, None, f"{p.unit}: {scalars[p.component]} ({t.name})")]
    return [ScalarVar(n, causality, "Real", starts.get((p.unit, p.port, k), 0.0) if causality == "input" else None,
                      None, f"{p.unit}: {s} ({t.name})")
            for k, (n, s) in enumerate(zip(port_names({p.name: p.size}), scalars))]


def random_parameters(iface: AssemblyInterface, rng) -> list:
    """Generic random parameter values of an assembly: each unit's
    (:func:`titop_fmu.fmu.model_description.random_parameters`), the tolerances as they are."""
    from ..fmu.model_description import random_parameters as unit_random
    values = []
    for _name, model in iface.units:
        ui = catalog.interface_of(model)
        values += [v for (n, *_), v in zip(ui.param_scalars, unit_random(ui, rng)) if n not in _UNIT_TOLERANCES]
    return values + [p.default for p in TOLERANCES]

