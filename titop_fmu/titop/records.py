"""A system's ``record`` list, resolved once for every engine: outputs of its units
(``"arm.joint.q[3]"``, ``"base.c1.m"``) and the motion of its bodies in the inertial frame
``R_i`` (docs/system-files.md, "Recording outputs"):

* ``<unit>.<point>.position`` (3, m): ``[IX]_Ri``, the position of the point ``X``;
* ``<unit>.<point>.velocity`` (6, m/s and rad/s): ``[v_X; omega]_Ri``, the velocity of ``X``
  and the body's angular velocity;
* ``<unit>.dcm`` (9): ``P_b/i`` row by row (its columns are the body axes in ``R_i``);
* ``<unit>.euler`` (3, rad): the 3-2-1 Euler angles of the body frame w.r.t. ``R_i``;

``<point>`` is ``p`` (the port point P), ``com`` (the centre of mass) or ``c<i>`` (the child
point C_i); ``[k]`` picks one component (``link3.c1.position[2]``).

They are computed from the body's motion vector at ``P`` in its own frame (:class:`BodyMotion`):
a base's ``p.m`` output; for a body on a joint, its block's kinematics (eq. (15), eqs. (16)-(17),
eq. (24)) at its parent's motion at the joint (the linked parent's ``c<i>.m`` output, or the
port's constant input) and its joint state (``joint.q``). The same functions serve the
in-process engine (the twin's outputs at the stored states), the co-simulation master (the
units' outputs it records, on the output grid: :meth:`Records.finish`) and the assembly FMU
(its system's outputs at its states).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from ..blocks import FlexibleBody
from ..cosim import CoSystem, build
from ..cosim.names import port_of
from ..errors import ConnectionError_, ParameterError, did_you_mean
from ..fmu import catalog
from ..spatial import (dcm_euler_partials, dcm_from_euler, inertial_acceleration, inertial_position,
                       inertial_twist, skew)
from .totals import total_entry
from .units import TitopUnits, titop_model

#: inertial quantities: their size and the SI unit of each component
QUANTITIES = {
    "position": ("m",) * 3,
    "velocity": ("m/s",) * 3 + ("rad/s",) * 3,
    "acceleration": ("m/s2",) * 3 + ("rad/s2",) * 3,
    "dcm": ("1",) * 9,
    "euler": ("rad",) * 3,
}
#: the quantities of a point (the others are the body's)
POINT_QUANTITIES = ("position", "velocity", "acceleration")
#: the quantities that depend on the accelerations (and so on the inputs): not state-level
ACCELERATION_QUANTITIES = ("acceleration",)
DESCRIPTIONS = {
    "position": "position of the point {X} in R_i",
    "velocity": "velocity of the point {X} [v; omega] in R_i",
    "acceleration": "acceleration of the point {X} and angular acceleration [a; omega_dot] in R_i",
    "dcm": "DCM P_b/i of the body frame, row by row (columns: body axes in R_i)",
    "euler": "3-2-1 Euler angles [phi, theta, psi] of the body frame w.r.t. R_i",
}
_INERTIAL = re.compile(r"^(?:(\w+)\.)?(" + "|".join(QUANTITIES) + r")(?:\[(\d+)\])?$")


def recording(cs: CoSystem, refs) -> CoSystem:
    """The system ``cs`` (the same units, parameters, links and inputs) recording ``refs``."""
    out = CoSystem()
    out.units, out.connections, out.links, out.inputs = cs.units, cs.connections, cs.links, cs.inputs
    out.record(*refs)
    return out


def inertial(quantity: str, m_P, PX=None) -> np.ndarray:
    """One inertial quantity of a body from its motion vector ``m_P`` at ``P`` (body frame) and
    the point ``[PX]_Rb``: the small function an assembly evaluates per recorded entry."""
    if quantity == "position":
        return inertial_position(m_P, PX)
    if quantity == "velocity":
        return inertial_twist(m_P, PX)
    if quantity == "acceleration":
        return inertial_acceleration(m_P, PX)
    if quantity == "dcm":
        return dcm_from_euler(m_P[15:18]).reshape(9)
    return np.array(m_P[15:18], dtype=float)


def inertial_jacobian(quantity: str, m_P, PX=None) -> np.ndarray:
    """``d inertial(quantity, m_P, PX) / d m_P``: its rows per component, 18 columns (the
    motion vector's; the acceleration's six are zero), exact: with ``P = P_b/i(Theta)`` and its
    partials ``P_k`` (:func:`~titop_fmu.spatial.dcm_euler_partials`), the position ``P (r + PX)``
    has ``P`` along ``r`` and ``P_k (r + PX)`` along ``Theta_k``; the velocity ``[P (v + omega x
    PX); P omega]`` has ``P``, ``-P (*PX)`` and ``P_k (.)``; the DCM ``P_k``; the Euler angles 1."""
    m_P = np.asarray(m_P, dtype=float)
    PX = np.zeros(3) if PX is None else PX
    Theta = m_P[15:18]
    P, dP = dcm_from_euler(Theta), dcm_euler_partials(Theta)
    J = np.zeros((len(QUANTITIES[quantity]), 18))
    if quantity == "position":
        J[:, 12:15] = P
        J[:, 15:18] = (dP @ (m_P[12:15] + PX)).T
    elif quantity == "velocity":
        v, w = m_P[6:9] + np.cross(m_P[9:12], PX), m_P[9:12]
        J[:3, 6:9] = P
        J[:3, 9:12] = -P @ skew(PX)
        J[3:, 9:12] = P
        J[:3, 15:18] = (dP @ v).T
        J[3:, 15:18] = (dP @ w).T
    elif quantity == "dcm":
        J[:, 15:18] = dP.reshape(3, 9).T
    else:
        J[:, 15:18] = np.eye(3)
    return J


@dataclass(frozen=True)
class BodyMotion:
    """How to get the motion vector ``m_A`` of the body of the unit ``unit`` at its port point
    ``P``, in its own frame, from the outputs ``{unit: {port: value}}`` and the constant inputs
    ``{(unit, port): value}`` of a system."""

    unit: str
    block: object
    parent: tuple | None = None        # (unit, output port) feeding its p.m; None: a base, or p.m an input
    node: str | None = None            # a flexible body's child port: the node's own motion, its ci.m

    @property
    def is_base(self) -> bool:
        return "p.m" in self.block.outputs_spec or self.node is not None

    def needs(self) -> set:
        """The whole output ports ``(unit, port)`` it reads."""
        if self.node is not None:
            return {(self.unit, f"{self.node}.m")}
        if self.is_base:
            return {(self.unit, "p.m")}
        own = {(self.unit, "joint.q")} if "joint.q" in self.block.outputs_spec else set()
        return own | ({self.parent} if self.parent else set())

    def constants(self, cs: CoSystem) -> dict:
        """``{(unit, "p.m"): value}`` of the constant motion fed to its parent port, if it reads one."""
        if self.is_base or self.parent is not None:
            return {}
        return {(self.unit, "p.m"): np.asarray(cs.inputs[f"{self.unit}.p.m"], dtype=float)}

    def __call__(self, outs: dict, inputs: dict) -> np.ndarray:
        if self.is_base:
            return np.asarray(outs[self.unit][f"{self.node or 'p'}.m"], dtype=float)
        m_parent = outs[self.parent[0]][self.parent[1]] if self.parent else inputs[(self.unit, "p.m")]
        q = outs.get(self.unit, {}).get("joint.q")              # a welded body: no joint, no output read
        x = np.zeros(self.block.n_states)                       # a flexible body's modes: its motion at P
        if q is not None:                                       # does not depend on them
            x[0:2] = q[2], q[1]                                 # [q, qd] of [qdd, qd, q]
        kin = self.block.kinematics(x, {"p": np.asarray(m_parent, dtype=float)})
        if q is None:
            return kin.m_A
        m = kin.m_A.copy()                           # the body's acceleration: the parent's (at P0 moved
        if hasattr(kin, "T"):                        # to P on a prismatic joint), then the joint's share
            m[0:6] = kin.T.dot(m[0:6])
        m[0:6] += kin.e.ravel() + kin.s * q[0]       # eq. (17) / eq. (24): e + r qdd (t xdd)
        return m


@dataclass(frozen=True)
class Entry:
    """One ``record`` entry: a unit's output port (``quantity`` None; ``labels`` None for a unit
    this module does not know, which the master sizes) or an inertial quantity of a body."""

    ref: str
    unit: str
    port: str | None = None
    select: tuple = ()                 # components (0-based) of the port's or quantity's value
    labels: tuple | None = None        # scalar labels
    units: tuple = ()                  # SI unit per scalar
    quantity: str | None = None
    point: str | None = None
    PX: np.ndarray | None = field(default=None, repr=False)
    motion: BodyMotion | None = field(default=None, repr=False)
    description: str = ""

    def needs(self) -> set:
        if self.quantity is None:
            return {(self.unit, self.port)}
        return self.motion.needs()

    def constants(self, cs: CoSystem) -> dict:
        """The constant inputs its value reads (:meth:`BodyMotion.constants`)."""
        return self.motion.constants(cs)

    def value(self, outs: dict, inputs: dict, motions: dict) -> np.ndarray:
        """The value of an inertial quantity from the outputs and constant inputs of the units
        at one instant; ``motions`` keeps the bodies' motion vectors at ``P`` for the other
        entries of the same instant."""
        if self.unit not in motions:
            motions[self.unit] = self.motion(outs, inputs)
        return inertial(self.quantity, motions[self.unit], self.PX)[list(self.select)]


def body_points(block) -> dict:
    """``{point: [PX]_Rb}`` of the body of a block (empty for a loop closure)."""
    body = getattr(block, "body", None)
    if body is None:
        return {}
    if isinstance(body, FlexibleBody):              # its nodes move: their own motion vectors, ci.m
        return {"p": np.zeros(3), **{f"c{i + 1}": np.zeros(3) for i in range(body.n_children)}}
    return {"p": np.zeros(3), "com": body.com,
            **{f"c{i + 1}": PC for i, PC in enumerate(body.children)}}


def quantity_component(var: str) -> tuple | None:
    """``(SI unit, description)`` of the component ``var`` of an inertial quantity
    (``c1.position[2]``, ``euler[3]``: a unit's output name without the unit), None if ``var``
    names no such component."""
    m = _INERTIAL.match(var)
    if m is None or m.group(3) is None or not 1 <= int(m.group(3)) <= len(QUANTITIES[m.group(2)]):
        return None
    point, quantity, k = m.groups()
    if (point is not None) != (quantity in POINT_QUANTITIES):
        return None
    return QUANTITIES[quantity][int(k) - 1], DESCRIPTIONS[quantity].format(X=point)


def inertial_entry(ref: str, unit: str, block, model: str, what: str = "record") -> Entry | None:
    """The :class:`Entry` (without its ``motion``) of ``ref``, ``"<unit>.<var>"``, if ``var``
    names an inertial quantity (``com.position[2]``, ``dcm``) of the body of ``block`` (the
    unit's, None for a unit that is not a TITOP model's, ``model`` its model and ``what`` the
    name's role, for the errors);
    None if it names no inertial quantity; a :class:`ConnectionError_` that says what is
    wrong otherwise."""
    m = _INERTIAL.match(ref.partition(".")[2])
    if m is None:
        return None
    if block is None:
        raise ConnectionError_(f"{what} {ref!r}: inertial outputs are those of TITOP model units; "
                               f"{unit!r} is {model}")
    point, quantity, k = m.groups()
    points = body_points(block)
    if not points:
        raise ConnectionError_(f"{what} {ref!r}: {unit!r} ({model}) has no body "
                               "to give a position, velocity or attitude")
    if quantity in POINT_QUANTITIES and point is None:
        raise ConnectionError_(f"{what} {ref!r}: a {quantity} is a point's: "
                               + ", ".join(f"{unit}.{p}.{quantity}" for p in points))
    if quantity not in POINT_QUANTITIES and point is not None:
        raise ConnectionError_(f"{what} {ref!r}: the {quantity} is the body's: {unit}.{quantity}")
    if point is not None and point not in points:
        raise ConnectionError_(f"{what} {ref!r}: {unit!r} has no point {point!r}{did_you_mean(point, points)}; "
                               f"points: {', '.join(points)} (port point P, centre of mass, child points)")
    size = len(QUANTITIES[quantity])
    k = int(k) if k is not None else 0
    if k and not 1 <= k <= size or k == 0 and ref.endswith("]"):
        raise ConnectionError_(f"{what} {ref!r}: {quantity} has {size} components, [1] .. [{size}]")
    select = (k - 1,) if k else tuple(range(size))
    name = f"{unit}.{point}.{quantity}" if point else f"{unit}.{quantity}"
    where = {"p": "P", "com": "B (centre of mass)"}.get(point, f"C{point[1:]}" if point else "")
    return Entry(ref, unit, None, select, tuple(f"{name}[{i + 1}]" for i in select),
                 tuple(QUANTITIES[quantity][i] for i in select), quantity, point,
                 points.get(point), description=f"{unit}: {DESCRIPTIONS[quantity].format(X=where)}")


class Records:
    """The ``record`` list of the system ``cs`` resolved against its TITOP units (a
    :class:`ConnectionError_` with the nearest valid names for a wrong entry)."""

    def __init__(self, cs: CoSystem, types: dict | None = None):
        self.cs = cs
        self.types = types or {}          # {unit: UnitType} of units that are not TITOP models, to size them
        self._blocks = {}
        self.entries = [self._entry(ref) for ref in cs.recorded]

    @property
    def inertial(self) -> bool:
        return any(e.quantity for e in self.entries)

    @property
    def labels(self) -> list:
        """The scalar labels, in order (``arm.joint.q`` is ``arm.joint.q[1]`` .. ``[3]``, as the
        master names them; an entry of a unit this module does not know as it is written)."""
        return [label for e in self.entries for label in (e.labels if e.labels is not None else [e.ref])]

    # -- resolution ---------------------------------------------------------------------------
    def block(self, unit: str):
        """The block of the TITOP unit ``unit`` (None for another unit), built once."""
        if unit not in self._blocks:
            spec = self.cs.units[unit]
            block, model = None, titop_model(spec.model)
            if model is not None:
                try:
                    block = catalog.build_unit(model, spec.parameters)[0].block
                except KeyError as e:
                    raise ConnectionError_(f"unit {unit!r}: {e.args[0]}") from None
                except ParameterError as e:
                    raise e.renamed(f"{unit}.{e.parameter}") from None
            self._blocks[unit] = block
        return self._blocks[unit]

    def _entry(self, ref) -> Entry:
        if not isinstance(ref, str):
            raise ConnectionError_(f"record: entries are \"unit.output\" strings, got {ref!r}")
        unit, dot, var = ref.partition(".")
        if not dot or not var:
            raise ConnectionError_(f"record {ref!r}: expected \"unit.output\" (e.g. \"arm.joint.q[3]\" or "
                                   "\"arm.c1.position\")")
        total = total_entry(ref, self)
        if total is not None:
            return total
        if unit not in self.cs.units:
            raise ConnectionError_(f"record {ref!r}: unknown unit {unit!r}{did_you_mean(unit, [*self.cs.units, 'system'])}; "
                                   f"units: {', '.join(self.cs.units)} (and the system's totals, system.momentum, ...)")
        block = self.block(unit)
        entry = inertial_entry(ref, unit, block, self.cs.units[unit].model)
        if entry is not None:
            if isinstance(block.body, FlexibleBody) and entry.point not in (None, "p"):
                return replace(entry, motion=BodyMotion(unit, block, node=entry.point))
            return replace(entry, motion=self.motion(ref, unit, block))
        if block is None:
            return self._other(ref, unit, var)
        port, k = port_of(var)
        size = block.outputs_spec.get(port)
        if size is None:
            if port in block.inputs:
                raise ConnectionError_(f"record {ref!r}: {port} is an input of {unit!r}; outputs: "
                                       + ", ".join(self.names(unit)))
            raise ConnectionError_(f"record {ref!r}: {unit!r} ({self.cs.units[unit].model}) has no output "
                                   f"{var!r}{did_you_mean(var, self.names(unit))}; outputs: "
                                   + ", ".join(self.names(unit)))
        if var != port and not 1 <= k <= size or size == 1 and k:
            raise ConnectionError_(f"record {ref!r}: {port} has {size} component(s)"
                                   + (f", {port}[1] .. {port}[{size}]" if size > 1 else f", written {port}"))
        select = (k - 1,) if k else tuple(range(size))
        kind = catalog.parse_identifier(titop_model(self.cs.units[unit].model))[0]
        variables = catalog.port_variables(kind, port, size, "output")
        return Entry(ref, unit, port, select, tuple(f"{unit}.{variables[i].name}" for i in select),
                     tuple(variables[i].unit for i in select), description=variables[select[0]].description)

    def _other(self, ref, unit, var) -> Entry:
        """The entry of an output of a unit that is not a TITOP model: sized by its type when
        :attr:`types` has it (a control unit's ``y``), else as written (the master sizes it)."""
        t = self.types.get(unit)
        if t is None:
            return Entry(ref, unit, var)
        scalars = t.scalars(var, "output")
        if not scalars:
            outputs = t.ports("output")
            raise ConnectionError_(f"record {ref!r}: {unit!r} ({t.name}) has no output {var!r}"
                                   f"{did_you_mean(var, outputs)}; outputs: {', '.join(outputs)}")
        port = port_of(scalars[0])[0]
        everything = t.ports("output")[port]
        return Entry(ref, unit, port, tuple(everything.index(s) for s in scalars),
                     tuple(f"{unit}.{s}" for s in scalars), ("",) * len(scalars))

    def names(self, unit: str) -> list:
        """What ``unit`` can record: its output ports and its inertial quantities."""
        block = self.block(unit)
        points = body_points(block)
        return list(block.outputs_spec) + ([f"{p}.{q}" for q in POINT_QUANTITIES for p in points]
                                           + ["dcm", "euler"] if points else [])

    def motion(self, ref, unit, block) -> BodyMotion:
        """Where the motion of the body of ``unit`` comes from (see :class:`BodyMotion`)."""
        motion = BodyMotion(unit, block)
        return motion if motion.is_base else replace(motion, parent=self.feeding(ref, unit, "p"))

    def feeding(self, ref, unit: str, port: str):
        """``(unit, output port)`` whose motion vector feeds the motion input ``<port>.m`` of
        ``unit`` (a body's parent port ``p``, a loop closure's ``l`` or ``r``): a link, a
        connection of the whole port or of its 18 scalars from one port (as an SSP package
        does); None when ``[inputs]`` gives it a constant value; else a
        :class:`ConnectionError_` naming the entry ``ref``."""
        for child_port, parent_port in self.cs.links:
            if parent_port == f"{unit}.{port}" or (port == "p" and parent_port == unit):
                source, _, child = child_port.partition(".")
                return source, f"{child}.m"
        target, scalars = f"{unit}.{port}.m", {}
        for out, inp in self.cs.connections:
            if inp == target:
                source, _, out_port = out.partition(".")
                return source, out_port
            if port_of(inp)[0] == target:
                scalars[port_of(inp)[1]] = port_of(out)
        sources = {(src.partition(".")[0], src.partition(".")[2]) for src, _ in scalars.values()}
        if len(scalars) == 18 and len(sources) == 1 and all(scalars[k][1] == k for k in scalars):
            return sources.pop()
        if target in self.cs.inputs:
            return None
        what = f"the motion of {unit!r} is that of its parent port p" if port == "p" else \
            f"{unit!r} reads the motion at its port {port}"
        raise ConnectionError_(f"record {ref!r}: {what}, which is not linked (link it, or give {port}.m a "
                               "constant value in [inputs])")

    # -- evaluation ---------------------------------------------------------------------------
    def inputs(self) -> dict:
        """``{(unit, port): value}``: the constant inputs that entries read (the motions of free
        parent ports, the loads of :mod:`.totals`)."""
        out = {}
        for e in self.entries:
            if e.quantity is not None:
                out.update(e.constants(self.cs))
        return out

    def needs(self) -> list:
        """The whole output ports ``(unit, port)`` of TITOP units that the entries are read or
        computed from, once, sorted."""
        return sorted({n for e in self.entries if e.labels is not None for n in e.needs()})

    def table(self, outs: dict, n: int, inputs: dict | None = None) -> np.ndarray:
        """The recorded values ``(n, k)`` at ``n`` instants from the outputs ``{unit: {port:
        (n, size) array}}`` of the units (:meth:`needs`; an entry of a unit this module does
        not know under its own name, its columns taken whole): a unit output's columns taken
        at once, an inertial quantity computed instant by instant."""
        inputs = self.inputs() if inputs is None else inputs
        columns, rows = [], None
        for e in self.entries:
            if e.quantity is None:
                v = np.reshape(np.asarray(outs[e.unit][e.port], dtype=float), (n, -1))
                columns.append(v if e.labels is None else v[:, list(e.select)])
                continue
            if rows is None:                # per instant: the outputs they read, the bodies' motions
                read = {p for e in self.entries if e.quantity for p in e.needs()}
                rows = [({}, {}) for _ in range(n)]
                for u, p in read:
                    for i, (o, _) in enumerate(rows):
                        o.setdefault(u, {})[p] = outs[u][p][i]
            columns.append(np.reshape([e.value(o, inputs, m) for o, m in rows], (n, len(e.select))))
        return np.hstack(columns) if columns else np.zeros((n, 0))

    def raw(self) -> list:
        """What the master records for these entries: the entries of units this module does not
        know as written, then every whole output port the others are read or computed from, once
        (a port recorded whole and its scalars again would be interpolated twice, the copies'
        Euler angles component-wise, not on the rotation group)."""
        return [e.ref for e in self.entries if e.labels is None] + [f"{u}.{p}" for u, p in self.needs()]

    def raw_system(self) -> CoSystem:
        """``cs`` recording :meth:`raw`."""
        return recording(self.cs, self.raw())

    def finish(self, values, labels, types: dict) -> tuple:
        """``(values, labels)`` of the entries from what the master recorded for :meth:`raw`
        (``values`` ``(n, k)``, ``labels`` its scalar labels); ``types``: ``{unit: UnitType}``
        sizes the entries of units this module does not know."""
        values = np.asarray(values, dtype=float)
        refs, k, cols = self.raw(), 0, {}
        for ref in refs:
            unit, _, var = ref.partition(".")
            n = len(types[unit].scalars(var, "output"))
            cols[ref] = slice(k, k + n)
            k += n
        outs = {}
        for ref in refs:
            unit, _, port = ref.partition(".")
            outs.setdefault(unit, {})[port] = values[:, cols[ref]]
        names = [label for e in self.entries
                 for label in (labels[cols[e.ref]] if e.labels is None else e.labels)]
        return self.table(outs, len(values)), names


def simulate(cs: CoSystem, stop: float, units=None, output_interval=None, options=None, progress=False):
    """:func:`titop_fmu.cosim.simulate` for a system of TITOP units whose ``record`` list may
    hold inertial quantities: the master records the outputs they are computed from
    (:meth:`Records.raw`), and the :class:`~titop_fmu.cosim.master.Result` has the values and
    labels of the entries (its ``mesh_values`` stay those of the outputs recorded)."""
    records = Records(cs)
    master = build(records.raw_system(), units or TitopUnits(), options)
    try:
        res = master.simulate(stop, output_interval, progress=progress)
    finally:
        master.terminate()
    values, labels = records.finish(res.values, res.labels, dict(zip(master.st.unit_names, master.st.types)))
    return replace(res, values=values, labels=labels)
