"""A system checked against its unit types and compiled to index arrays: coupling
inputs, algebraic loops and their unknowns, evaluation schedules.

:func:`analyse` checks a :class:`~.graph.CoSystem` against the unit types
(before anything is instantiated) and compiles a :class:`Structure`:

* every connected input ("coupling input") and its source output;
* the scalar dependency graph: input -> output inside a unit (the units'
  declared direct feedthrough, e.g. FMI ``<ModelStructure>``), output -> input
  along a connection. Its strongly connected components with a cycle are the
  algebraic loops (:mod:`.cycles`);
* the unknowns of the loop solve: every coupling input of every loop. Newton
  iterates on all of them at once (:mod:`.loop`), each unit evaluated at its own
  inputs, rather than on a torn few, the others computed in a sweep around the
  loop: a sweep carries every error around the loop. On a chain of 64 bodies
  the torn residual's Jacobian (its fewest tearing: every wrench) has a
  condition number of 7e11 and Newton stalled at 4e-6 N; the whole loop's
  ``I - M``, 6e4;
* evaluation schedules with the unknowns given: the outputs that do not depend
  on a loop variable (evaluated once per communication point) and those that
  do (evaluated at every Newton iteration). A schedule is a list of unit calls
  "set these inputs, read these outputs", batched per unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import ConnectionError_, did_you_mean
from ..topology import tree_order
from .charts import Chart
from .graph import MOTION, CoSystem
from .names import port_of
from .protocol import UnitType
from .cycles import find_loops, schedules

@dataclass(frozen=True)
class UnitLayout:
    """Where one unit's coupling inputs and the outputs feeding others sit: what its
    Jacobian columns (:mod:`.loop`, :mod:`.run`) are measured on."""

    cin: np.ndarray                     # its coupling inputs (global positions, by local index)
    local_in: np.ndarray                # their local input indices
    rows: np.ndarray                    # the coupling inputs its outputs feed (global positions)
    outputs: np.ndarray                 # the distinct local outputs feeding them ...
    of_row: np.ndarray                  # ... and, per row, which of these feeds it
    chart_in: Chart                     # the coordinates of ``cin``
    chart_out: Chart                    # the coordinates of ``rows``


@dataclass
class Structure:
    """A checked system, as index arrays (see the module docstring)."""

    unit_names: list
    types: list                         # UnitType per unit
    out_offset: np.ndarray              # global output index of unit j's output 0
    n_out: int
    cin_unit: np.ndarray                # per coupling input k: unit, local input index
    cin_local: np.ndarray
    cin_src: np.ndarray                 # global output index feeding it
    cin_angle: np.ndarray               # bool: attitude angle (average/extrapolate modulo 2 pi)
    unit_cin: list                      # per unit: coupling-input positions (sorted by local index)
    constants: list                     # per unit: {input name: value}
    loops: list
    unknowns: np.ndarray                # the loop solve's unknowns: every coupling input of every loop
    pre: list                           # Op schedule, independent of the unknowns
    loop_ops: list                      # Op schedule depending on the unknowns
    full: list                          # Op schedule of every output, the unknowns given
    recorded: list                      # [(label, global output index)]
    dep_in: list                        # per unit: per output, local input indices
    cin_state: np.ndarray = None        # bool: coupling input outside every loop (a function of states)
    cin_chart: Chart = None             # coordinates of the coupling inputs (angles, attitudes)
    rec_chart: Chart = None             # coordinates of the recorded outputs
    layouts: list = None                # UnitLayout per unit
    rec_state: np.ndarray = None        # bool: recorded output that is a function of the states alone

    @property
    def n_cin(self):
        return len(self.cin_unit)

    @cached_property
    def event_units(self) -> list:
        """The units with time events (:attr:`UnitType.time_events`), each after the units that
        feed it (in a cycle, in the system's order): the order of their event updates."""
        src = np.searchsorted(self.out_offset, self.cin_src, side="right") - 1     # unit of each source
        feeds = {j: set(src[self.cin_unit == j].tolist()) - {j} for j in range(len(self.types))}
        order, done = [], set()

        def visit(j, path):
            if j in done or j in path:
                return
            for i in sorted(feeds[j]):
                visit(i, path | {j})
            done.add(j)
            order.append(j)

        for j in range(len(self.types)):
            visit(j, frozenset())
        return [j for j in order if self.types[j].time_events]

    def cin_label(self, k) -> str:
        j = self.cin_unit[k]
        return f"{self.unit_names[j]}.{self.types[j].input_names[self.cin_local[k]]}"


def _split(ref: str, units: dict):
    name, dot, var = ref.partition(".")
    if not dot or not var:
        raise ConnectionError_(f"{ref!r}: expected 'unit.variable'")
    if name not in units:
        raise ConnectionError_(f"unknown unit {name!r} in {ref!r}{did_you_mean(name, units)}; units: "
                               f"{', '.join(units) or 'none'}")
    return name, var


def _resolve(ref: str, types: dict, causality: str) -> tuple[str, list]:
    """``(unit, [scalar names])`` of a reference with the given causality, or a clear error."""
    name, var = _split(ref, types)
    t: UnitType = types[name]
    scalars = t.scalars(var, causality)
    if scalars:
        return name, scalars
    other = "output" if causality == "input" else "input"
    if t.scalars(var, other):
        raise ConnectionError_(f"{ref!r} is an {other} of {name!r} ({t.name}); a connection goes from an "
                               "output to an input")
    v = t.variables.get(var)
    if v is not None:
        raise ConnectionError_(f"{ref!r} is a {v.causality} of {name!r} ({t.name}), not an {causality}")
    ports = t.ports(causality)
    port, k = port_of(var)
    if port in ports:
        raise ConnectionError_(f"{ref!r}: {port} has {len(ports[port])} component(s), {ports[port][0]} .. "
                               f"{ports[port][-1]}")
    raise ConnectionError_(f"{name!r} ({t.name}) has no {causality} {var!r}{did_you_mean(var, ports)}; its "
                           f"{causality}s: {', '.join(ports)}")


def analyse(system: CoSystem, types: dict) -> Structure:
    """Check ``system`` against its unit types (``{unit name: UnitType}``) and compile
    its :class:`Structure`; every problem is a :class:`ConnectionError_` naming it."""
    if not system.units:
        raise ConnectionError_("the system has no unit")
    names = list(system.units)
    index = {n: j for j, n in enumerate(names)}
    tlist = [types[n] for n in names]

    # parameters
    for n, spec in system.units.items():
        t = types[n]
        for p in spec.parameters:
            v = t.variables.get(p)
            if v is None or v.causality not in ("parameter", "calculatedParameter"):
                if v is not None:
                    raise ConnectionError_(f"{n}.{p} is a {v.causality}, not a parameter")
                base = port_of(p)[0].split("[")[0]
                known = sorted({re.sub(r"\[.*\]$", "", q) for q in t.parameter_names})
                hint = f" (did you mean {base}[...]?)" if base in known else did_you_mean(base, known)
                raise ConnectionError_(f"{n!r} ({t.name}) has no parameter {p!r}{hint}; parameters: "
                                       + ", ".join(known))

    # links: a child port (motion out) to a parent port (motion in)
    for child_port, parent_port in system.links:
        a, _, va = child_port.partition(".")
        b, _, vb = parent_port.partition(".")
        if a in types and b in types and types[a].scalars(f"{va}.{MOTION}", "input") \
                and types[b].scalars(f"{vb}.{MOTION}", "output"):
            raise ConnectionError_(f"link {child_port} -> {parent_port}: a link goes from a child port to a parent "
                                   f"port: [\"{parent_port}\", \"{child_port}\"]")

    # connections, scalar by scalar
    src_of: dict[tuple, tuple] = {}
    for out_ref, in_ref in system.connections:
        a, outs = _resolve(out_ref, types, "output")
        b, ins = _resolve(in_ref, types, "input")
        if len(outs) != len(ins):
            raise ConnectionError_(f"size mismatch: {out_ref} has {len(outs)} scalar(s), {in_ref} has {len(ins)}")
        for o, i in zip(outs, ins):
            to, ti = types[a].variables[o], types[b].variables[i]
            if to.type != ti.type:
                raise ConnectionError_(f"type mismatch: {a}.{o} is {to.type}, {b}.{i} is {ti.type}")
            if to.type != "Real":
                raise ConnectionError_(f"{a}.{o} -> {b}.{i}: only Real variables can be coupled, not {to.type}")
            if to.unit and ti.unit and to.unit != ti.unit:
                raise ConnectionError_(f"unit mismatch: {a}.{o} is in {to.unit}, {b}.{i} in {ti.unit}")
            key = (b, i)
            if key in src_of:
                prev = src_of[key]
                raise ConnectionError_(f"input {b}.{i} is connected twice (from {prev[0]}.{prev[1]} and {a}.{o})")
            src_of[key] = (a, o)

    # constant inputs
    constants = [dict() for _ in names]
    for ref, value in system.inputs.items():
        b, ins = _resolve(ref, types, "input")
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (len(ins),):
            raise ConnectionError_(f"input {ref} takes {len(ins)} value(s), got {v.size}")
        if not np.all(np.isfinite(v)):
            raise ConnectionError_(f"input {ref} must be finite, got {v.tolist()}")
        for i, x in zip(ins, v):
            if (b, i) in src_of:
                raise ConnectionError_(f"input {b}.{i} is both connected and set to a value")
            constants[index[b]][i] = float(x)

    # the link tree first: a cycle leaves its bases' ports free, which are not the problem
    _check_links(system, names)

    # dangling required inputs
    missing = []
    for n in names:
        t = types[n]
        for i in sorted(t.required, key=t.input_index.get):
            if (n, i) not in src_of and i not in constants[index[n]]:
                missing.append(f"{n}.{i}")
    if missing:
        ports = sorted({m.split("[")[0] for m in missing})
        raise ConnectionError_("dangling required input(s): " + ", ".join(ports)
                               + " (connect them; set a free child port's wrench c<i>.w to zero explicitly)")

    # coupling inputs
    out_offset = np.zeros(len(names), dtype=int)
    k = 0
    for j, t in enumerate(tlist):
        out_offset[j] = k
        k += len(t.output_names)
    n_out = k
    keys = sorted(src_of, key=lambda key: (index[key[0]], types[key[0]].input_index[key[1]]))
    cin_unit = np.array([index[b] for b, _ in keys], dtype=int)
    cin_local = np.array([types[b].input_index[i] for b, i in keys], dtype=int)
    cin_src = np.array([out_offset[index[src_of[key][0]]] + types[src_of[key][0]].output_index[src_of[key][1]]
                        for key in keys], dtype=int)
    cin_angle = np.array([i in types[b].angles for b, i in keys], dtype=bool)
    cin_pos = {key: k for k, key in enumerate(keys)}
    cin_triples = [[cin_pos[(b, n)] for n in tr] for b in names for tr in types[b].attitudes
                   if all((b, n) in cin_pos for n in tr)]
    unit_cin = [np.flatnonzero(cin_unit == j) for j in range(len(names))]

    dep_in = [[np.asarray(d, dtype=int) for d in t.dependencies] for t in tlist]
    loops = find_loops(names, tlist, dep_in, out_offset, cin_unit, cin_local, cin_src)
    unknowns = _unique(np.concatenate([lp.inputs for lp in loops])) if loops else np.zeros(0, dtype=int)
    pre, loop_ops, full, tainted = schedules(tlist, dep_in, out_offset, n_out, cin_unit, cin_local, cin_src,
                                              unit_cin, unknowns)
    cin_state = ~tainted[cin_src]           # coupling inputs that are functions of the states alone

    recorded = []
    for ref in system.recorded:
        a, outs = _resolve(ref, types, "output")
        for o in outs:
            recorded.append((f"{a}.{o}", int(out_offset[index[a]] + types[a].output_index[o])))
    rec_pos = {label: i for i, (label, _) in enumerate(recorded)}
    rec_angle = np.array([label.partition(".")[2] in types[label.partition(".")[0]].angles
                          for label, _ in recorded], dtype=bool)
    rec_triples = [[rec_pos[f"{a}.{n}"] for n in tr] for a in names for tr in types[a].attitudes
                   if all(f"{a}.{n}" in rec_pos for n in tr)]

    cin_chart = Chart(len(keys), cin_angle, cin_triples)
    return Structure(names, tlist, out_offset, n_out, cin_unit, cin_local, cin_src, cin_angle, unit_cin,
                     constants, loops, unknowns, pre, loop_ops, full, recorded, dep_in, cin_state,
                     cin_chart, Chart(len(recorded), rec_angle, rec_triples),
                     _layouts(out_offset, cin_local, cin_src, unit_cin, cin_chart),
                     ~tainted[np.array([g for _, g in recorded], dtype=int)])


def _unique(a):
    """``np.unique`` of an integer array, without numpy.ma, which np.unique imports at its first
    call (0.02 to 0.07 s of a run's start)."""
    return np.array(sorted(set(a.tolist())), dtype=a.dtype)


def _layouts(out_offset, cin_local, cin_src, unit_cin, cin_chart) -> list:
    """The :class:`UnitLayout` of every unit."""
    src_unit = np.searchsorted(out_offset, cin_src, side="right") - 1
    layouts = []
    for j, cin in enumerate(unit_cin):
        rows = np.flatnonzero(src_unit == j)
        outputs = _unique(cin_src[rows] - out_offset[j])
        of_row = np.searchsorted(outputs, cin_src[rows] - out_offset[j])
        layouts.append(UnitLayout(cin, cin_local[cin], rows, outputs, of_row.reshape(-1),
                                  cin_chart.restricted(cin), cin_chart.restricted(rows)))
    return layouts


def _check_links(system: CoSystem, names):
    """The links (parent -> child) must form a forest: a cycle is a kinematic loop,
    which only a loop-closure unit can close."""
    children = {n: [] for n in names}
    for child_port, parent_port in system.links:
        a, b = child_port.partition(".")[0], parent_port.partition(".")[0]
        if a == b:
            raise ConnectionError_(f"{child_port} -> {parent_port}: {a} is linked to itself, a cycle in the "
                                   "tree topology")
        children[a].append(b)
    tree_order(children, what="tree topology", hint="close kinematic loops with a loop_closure unit")
