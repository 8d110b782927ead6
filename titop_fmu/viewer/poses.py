"""Where every body of a system of TITOP units is over a run: its frame ``(P_a/i, [IP]_Ri)``
in the inertial frame, from the outputs the engines record.

A body's frame follows from what its unit gives, in this order:

* its own motion vector (``p.m`` of a base, ``ci.m`` of any body): components 16-18 are
  the Euler angles ``Theta`` of its frame, ``P_a/i = P(Theta)``, and 13-15 the point
  ``[IC_i]`` projected in that frame, so ``[IP]_Ri = P_a/i ([IC_i]_Ra - [PC_i]_Ra)``;
* else its pose in the inertial frame, when recorded: the position of one of its points
  ``<unit>.<point>.position`` (``p``, ``com``, ``c<i>``) and its attitude ``<unit>.dcm`` (the
  rows of ``P_a/i``) or ``<unit>.euler``, ``[IP]_Ri = [IX]_Ri - P_a/i [PX]_Ra``;
* else its parent's frame and its joint (forward kinematics): the joint point is the
  parent's child point ``C_j``, ``P_a/i = P_b/i P_a0/b e^{q (*r~)}`` for a revolute body
  (eq. (16)), ``P_b/i P_a0/b`` for welded and prismatic ones, and a prismatic body's point
  slides along its axis, ``P = C_j + q t~`` (eq. (24)); ``q`` is ``joint.q[3]``;
* a parent port fed a constant motion vector (a fixed support) gives the parent frame.

:func:`needed` says which outputs to record so that every body is placed (a base's pose
``p.m[13..18]`` and each joint's ``joint.q[3]``: 6 values per tree and one per joint), or which
ones a CSV lacks; :func:`poses` computes the frames from such columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..blocks.flexible import is_flexible
from ..control.build import is_control
from ..cosim import CoSystem
from ..cosim.engine import is_fmu_path
from ..errors import ConnectionError_, TitopError
from ..fmu import catalog
from ..spatial import axis_rotation, dcm_from_euler, inertial_position
from . import deform

BASES = ("floating_base", "imposed_motion_base")
#: the pose components of a motion vector: ``[IP]`` (13-15) and ``Theta`` (16-18)
POSE = tuple(range(13, 19))


@dataclass(frozen=True)
class Body:
    """What the view needs of one TITOP body unit (all vectors in its frame ``R_a``)."""

    name: str
    kind: str                       # catalog kind: floating_base, revolute, prismatic, welded, ...
    mass: float
    inertia: np.ndarray             # at the centre of mass
    com: np.ndarray                 # [PB]
    children: tuple                 # [PC_i], i = 1..n
    parent: tuple | None            # (parent unit, its child port "cj"): linked to a TITOP body
    joint_point: np.ndarray | None  # that port's point [PC_j], in the parent's frame
    support: np.ndarray | None      # constant motion vector fed to the parent port (a fixed support)
    axis: np.ndarray | None         # joint axis (unit), revolute and prismatic
    mount: np.ndarray               # P_a0/b: the frame w.r.t. the parent's at zero joint motion
    shape: dict | None = None       # the shape the system file gives it (systemfile.read_shape)
    flexible: tuple | None = None   # a flexible body: (deform.Drawn, number of modes)

    @property
    def joint(self) -> str:
        """``"base"``, ``"revolute"``, ``"prismatic"`` or ``"welded"``."""
        if self.kind in BASES:
            return "base"
        return self.kind.replace("_inverse", "")

    def motion_ports(self) -> list:
        """Its outputs that are motion vectors of its frame: ``p.m`` of a base, then ``c1.m``,
        ``c2.m``, ... (not a flexible body's: they are its deformed nodes' frames, eq. (F12))."""
        children = [] if self.flexible else [f"c{i}.m" for i in range(1, len(self.children) + 1)]
        return (["p.m"] if self.kind in BASES else []) + children

    def point(self, port: str) -> np.ndarray:
        """``[PX]_Ra`` of the point of a motion port: ``P`` for ``p.m``, ``C_i`` for ``ci.m``."""
        return np.zeros(3) if port == "p.m" else self.children[int(port[1:-2]) - 1]

    def points(self) -> dict:
        """``{point: [PX]_Ra}``: ``p``, ``com`` and the child points ``c<i>``, whose inertial
        positions may be recorded."""
        return {"p": np.zeros(3), "com": self.com, **{f"c{i + 1}": c for i, c in enumerate(self.children)}}


@dataclass(frozen=True)
class Closure:
    """A loop closure's two cut points: ``(body, [PC]_Ra)`` on each side (None: not a TITOP body)."""

    name: str
    left: tuple | None
    right: tuple | None


@dataclass(frozen=True)
class Model:
    """The drawable content of a system: its TITOP bodies (parents first), its loop
    closures, and the units that are not drawn, with why."""

    bodies: dict
    closures: list
    skipped: dict


def model(cs: CoSystem, beams=None) -> Model:
    """The bodies of ``cs`` built from their FMI parameters as the FMUs build them
    (:func:`~titop_fmu.fmu.catalog.build_unit`); units that are FMU files or functions are
    not drawn (named in :attr:`Model.skipped`), control units, which have no body, left out.
    ``beams``: ``{unit: ModalData}`` of flexible beams at all their nodes, drawn through them
    (:func:`.deform.of_body`)."""
    blocks, skipped = {}, {}
    for name, spec in cs.units.items():
        if is_control(spec.model):                   # a signal block: no body to draw
            continue
        if not isinstance(spec.model, str) or is_fmu_path(spec.model):
            skipped[name] = "not drawn: not a TITOP block (an FMU file or a function)"
            continue
        try:
            kind, _ = catalog.parse_identifier(spec.model)
            unit, _ = catalog.build_unit(spec.model, spec.parameters)
        except KeyError as e:
            raise ConnectionError_(f"unit {name!r}: {e.args[0]}") from None
        blocks[name] = (kind, unit.block)
    parent_of = {}                    # (unit, parent port) -> (unit, child port) whose motion it reads
    for output, input in cs.connections:                                # a link is two connections
        a, _, out_port = output.partition(".")
        b, _, in_port = input.partition(".")
        if out_port.endswith(".m") and in_port.endswith(".m"):          # whole motion ports
            parent_of[(b, in_port[:-2])] = (a, out_port[:-2])
    bodies, closures = {}, []
    for name, (kind, block) in blocks.items():
        if kind == "loop_closure":
            closures.append(Closure(name, *(_cut_point(parent_of.get((name, s)), blocks) for s in ("l", "r"))))
            continue
        parent = parent_of.get((name, "p"))
        if _cut_point(parent, blocks) is None:
            parent = None
        support = cs.inputs.get(f"{name}.p.m")
        body = block.body
        drawn = (deform.of_body(body, (beams or {}).get(name)), body.n_modes) if is_flexible(body) else None
        bodies[name] = Body(name, kind, float(body.mass), np.array(body.inertia), np.array(body.com),
                            tuple(np.array(c) for c in body.children), parent,
                            None if parent is None else _cut_point(parent, blocks)[1],
                            None if support is None else np.asarray(support, dtype=float),
                            getattr(block, "axis", None), getattr(block, "P_a0b", np.eye(3)),
                            cs.units[name].appearance, drawn)
    return Model(_parents_first(bodies), closures, skipped)


def _cut_point(source, blocks):
    """``(body, [PC_j])`` of the child port ``source = (body, "cj")``; None if not a TITOP
    body's child port."""
    if source is None or source[0] not in blocks or not re.fullmatch(r"c\d+", source[1]) \
            or blocks[source[0]][0] == "loop_closure":
        return None
    name, port = source
    return name, np.array(blocks[name][1].body.children[int(port[1:]) - 1])


def _parents_first(bodies: dict) -> dict:
    out = {}

    def visit(name):
        if name not in out:
            parent = bodies[name].parent
            if parent is not None:
                visit(parent[0])
            out[name] = bodies[name]
    for name in bodies:
        visit(name)
    return out


def pose_labels(name, port):
    return [f"{name}.{port}[{k}]" for k in POSE]


def _joint_label(name):
    return f"{name}.joint.q[3]"


#: a body's attitude as it may be recorded in the inertial frame: its DCM, or its Euler angles
ATTITUDES = {"dcm": 9, "euler": 3}


def inertial_pose(name, b: Body, available):
    """``(point, attitude)`` of a pose of ``b`` recorded in the inertial frame among the labels
    ``available`` (``bus.com.position[1..3]`` and ``bus.dcm[1..9]`` or ``bus.euler[1..3]``), or None."""
    point = next((x for x in b.points() if {f"{name}.{x}.position[{k}]" for k in (1, 2, 3)} <= available), None)
    attitude = next((a for a, n in ATTITUDES.items()
                     if {f"{name}.{a}[{k}]" for k in range(1, n + 1)} <= available), None)
    return (point, attitude) if point and attitude else None


def rules(m: Model, available) -> tuple:
    """``({body: rule}, [missing outputs])``: how each body is placed from the outputs
    ``available`` (scalar labels such as ``"bus.p.m[13]"``), and the outputs to add so
    that every body is placed: a body's own motion port when all six pose components are
    there, else its recorded inertial pose, else forward kinematics from its parent, else a
    base's ``p.m`` pose (or a root
    body's ``c1.m``); joints need ``joint.q[3]``. A rule is ``("own", port)``,
    ``("inertial", (point, attitude))`` (:func:`inertial_pose`), ``("joint", None)`` or
    ``("none", why)``."""
    available = set(available)
    out, missing = {}, []

    def need(labels):
        missing.extend(x for x in labels if x not in available and x not in missing)

    for name, b in m.bodies.items():
        own = next((p for p in b.motion_ports() if set(pose_labels(name, p)) <= available), None)
        recorded = inertial_pose(name, b, available)
        if own is not None:
            out[name] = ("own", own)
        elif recorded is not None:
            out[name] = ("inertial", recorded)
        elif (b.parent is not None and out[b.parent[0]][0] != "none") or b.support is not None:
            out[name] = ("joint", None)
            if b.joint in ("revolute", "prismatic"):
                need([_joint_label(name)])
        elif b.motion_ports():
            port = b.motion_ports()[0]
            out[name] = ("own", port)
            need(pose_labels(name, port))
        else:
            out[name] = ("none", "not drawn: its parent is not a TITOP body and it has no motion output")
    return out, missing


def unplaced(m: Model) -> dict:
    """``{unit: why}`` of the units that the view cannot draw."""
    return {**m.skipped, **{n: r[1] for n, r in rules(m, ())[0].items() if r[0] == "none"}}


def needed(m: Model, available=()) -> list:
    """The outputs to record, besides ``available``, so that every body is placed, and the
    displacements of a flexible body's ports (``c<i>.u[1..3]``) unless its modal coordinates are
    there (:func:`.deform.deformations`)."""
    out = rules(m, available)[1]
    for name, b in m.bodies.items():
        if b.flexible and not set(deform.eta_labels(name, b.flexible[1])) <= set(available):
            out += [x for x in deform.u_labels(name, len(b.children)) if x not in available]
    return out


def poses(m: Model, columns: dict, n: int | None = None) -> dict:
    """``{body: (P_a/i (n, 3, 3), [IP]_Ri (n, 3))}`` from ``columns`` (``{label: (n,) array}``)
    for every body that can be placed; a :class:`TitopError` names the outputs missing."""
    r, missing = rules(m, columns)
    if missing:
        raise TitopError("the run lacks the outputs that place the bodies: " + ", ".join(missing) +
                         " (or, for a body, the position of one of its points and its attitude in the inertial "
                         "frame: <unit>.com.position with <unit>.dcm or <unit>.euler)")
    n = len(next(iter(columns.values()))) if n is None else n
    out = {}
    for name, b in m.bodies.items():
        how, port = r[name]
        if how == "own":                                  # [IP]_Ri = [IC]_Ri - P_a/i [PC]_Ra
            M = np.zeros((n, 18))
            M[:, 12:18] = np.column_stack([columns[x] for x in pose_labels(name, port)])
            R = np.array([dcm_from_euler(m[15:18]) for m in M])
            out[name] = (R, np.array([inertial_position(m) for m in M]) - np.einsum("kij,j->ki", R, b.point(port)))
        elif how == "inertial":                           # [IP]_Ri = [IX]_Ri - P_a/i [PX]_Ra
            point, attitude = port
            X = np.column_stack([columns[f"{name}.{point}.position[{k}]"] for k in (1, 2, 3)])
            A = np.column_stack([columns[f"{name}.{attitude}[{k}]"] for k in range(1, ATTITUDES[attitude] + 1)])
            R = A.reshape(n, 3, 3) if attitude == "dcm" else np.array([dcm_from_euler(e) for e in A])
            out[name] = (R, X - np.einsum("kij,j->ki", R, b.points()[point]))
        elif how == "joint":
            q = np.asarray(columns[_joint_label(name)], dtype=float) if b.joint in ("revolute", "prismatic") \
                else np.zeros(n)
            out[name] = joint_pose(b, *attachment(b, out, n), q)
    return out


def attachment(b: Body, placed: dict, n: int) -> tuple:
    """``(P_b/i (n, 3, 3), [IC]_Ri (n, 3))``: the parent's frame and the joint point of ``b``
    (the parent's child point ``C_j``, or the point of the constant motion vector fed to it)."""
    if b.parent is not None:
        R_b, p_b = placed[b.parent[0]]
        return R_b, p_b + np.einsum("kij,j->ki", R_b, b.joint_point)
    R = dcm_from_euler(b.support[15:18])
    return np.broadcast_to(R, (n, 3, 3)), np.broadcast_to(R.dot(b.support[12:15]), (n, 3))


def joint_pose(b: Body, R_b, p_C, q) -> tuple:
    """``(P_a/i, [IP]_Ri)`` of ``b`` from its parent's frame ``P_b/i``, its joint point ``C``
    and its joint coordinate ``q`` (arrays over the samples): eq. (16) for a revolute body,
    eq. (24) for a prismatic one (``P = C + q t~``), the mounting alone for a welded one."""
    R0 = np.einsum("kij,jl->kil", R_b, b.mount)                                 # P_b/i P_a0/b
    if b.joint == "revolute":
        R = np.einsum("kij,kjl->kil", R0, np.array([axis_rotation(b.axis, x) for x in q]))
        return R, np.array(p_C, dtype=float)
    if b.joint == "prismatic":
        return R0, p_C + np.einsum("kij,j->ki", R0, b.axis) * np.asarray(q)[:, None]
    return R0, np.array(p_C, dtype=float)
