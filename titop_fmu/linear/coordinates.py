"""The coordinates of a linear model of a TITOP system: minimal states, named inputs and
named outputs, and the maps between the system's states and the minimal ones.

States. A :class:`~titop_fmu.system.System` integrates a floating (or imposed-motion) base
as its twist, its position and a unit quaternion (13 numbers, one constraint); a linear
model has 12 minimal coordinates instead, deviations from the *reference motion*: the
operating point moving on with its twist held, ``P_ref(t) = P_b/i,0 e^{t (*omega0)}``,
``[IP]_ref(t) = [IP]_0 + int P_ref v0`` (``v0, omega0`` the operating twist, body frame).
At rest the reference stands still; about a steady spin (a relative equilibrium) it turns
with the body, and the model has constant coefficients:

* ``<base>.v_x, v_y, v_z, w_x, w_y, w_z``: the twist ``x'_P = [v_P; omega]`` at ``P`` in the
  body frame (as the system's states);
* ``<base>.r_x, r_y, r_z``: the position of ``P`` from the reference, in the inertial frame
  turned with the reference, ``rho = P_b/i,0 P_ref(t)^T ([IP] - [IP]_ref(t))``: at rest
  ``[IP]_Ri - [IP]_0``; ``rhodot = P_b/i,0 (e^{(*phi)} v - v0) - (P_b/i,0 omega0) x rho``;
* ``<base>.rotvec_x, rotvec_y, rotvec_z``: the attitude chart, the rotation vector ``phi``
  (body frame) of the deviation from the reference, ``P_b/i = P_ref(t) e^{(*phi)}``
  (:func:`~titop_fmu.spatial.quat_chart`): ``phidot = (omega - omega0) + phi x omega0 +
  O(2)`` (:func:`~titop_fmu.spatial.chart_rate_jacobian`).

The pose rows are zero at the operating point (the reference moves with it).

A joint body has ``<joint>.q, <joint>.qd``; welded bodies and loop closures have none. A
flexible body adds its modal coordinates and rates, ``<block>.eta1 .. etad<n>``, as they are
(docs/flexible-bodies.md).

Inputs and outputs are FMI scalar names (:mod:`titop_fmu.cosim.names`) prefixed by the
block: ``balloon.ext.w[2]``, ``slider.joint.tau``, ``pendulum1.joint.q[3]``; a port name
alone (``balloon.ext.w``) stands for all its components. The inputs are the system's
unlinked inputs (external wrenches, joint efforts, free child wrenches, imposed
accelerations, a root's constant motion vector); the outputs are every block output,
as the C kernel lays them out (:func:`titop_fmu.kernel.plan_entries`), and the inertial
quantities of the bodies a record list may hold (``bus.com.position``, ``boom.dcm``).
"""

from __future__ import annotations

import numpy as np

from ..blocks import FlexibleBody, FloatingBase, ImposedMotionBase, PrismaticBody, RevoluteBody
from ..cosim.names import port_names, port_of
from ..errors import ConnectionError_
from ..spatial import chart_rate_jacobian, dcm_from_quat, quat_chart, quat_exp, quat_multiply
from ..system import System
from ..titop.records import ACCELERATION_QUANTITIES, inertial_entry
from ..titop.totals import SYSTEM

MINIMAL_BASE_STATES = ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "r_x", "r_y", "r_z",
                       "rotvec_x", "rotvec_y", "rotvec_z")
JOINT_STATES = ("q", "qd")
#: the chart, as the models and their files say it
CHART = ("deviations from the reference motion, the operating point moving on with its twist [v0; omega0] "
         "held: floating bases: twist [v_P; omega] at P in the body frame; position of P from the reference "
         "in the inertial frame turned with it, r = P0 P_ref(t)^T ([IP] - [IP]_ref(t)) (at rest: [IP] - [IP]_0 "
         "in R_i); attitude as the rotation vector rotvec (body frame) of P_b/i = P_ref(t) exp((*rotvec)), "
         "P_ref(t) = P0 exp(t (*omega0)), P0 the operating attitude; joints: q, qd")


class Coordinates:
    """The minimal states of a :class:`System` (or of a ``layout``: ``[(block, kind, native
    slice)]``, kind ``"base"`` or ``"joint"``) and their maps to its own states.

    ``bases``, ``joints`` and ``modal`` (a flexible body's modal coordinates and rates) list
    ``(block name, native slice, minimal slice)``; the minimal states follow the system's state
    order. Joints and modes are their own minimal coordinates."""

    def __init__(self, system: System | None = None, layout=None):
        self.system = system
        if system is not None:
            plan = system.plan()
            layout = []
            for n in plan.order:
                b, s = system.blocks[n], plan.state_slices[n]
                own = 0
                if isinstance(b, (FloatingBase, ImposedMotionBase)):
                    own = 13
                    layout.append((n, "base", slice(s.start, s.start + own)))
                elif isinstance(b, (RevoluteBody, PrismaticBody)):
                    own = 2
                    layout.append((n, "joint", slice(s.start, s.start + own)))
                if getattr(getattr(b, "body", None), "n_modes", 0):
                    layout.append((n, "modal", slice(s.start + own, s.stop)))
                elif b.n_states > own:
                    raise ConnectionError_(f"block {n!r} ({type(b).__name__}) has states without minimal "
                                           "coordinates for a linear model")
        self.bases, self.joints, self.modal, names = [], [], [], []
        k = n_native = 0
        for n, kind, s in layout:
            size = {"base": 12, "joint": 2}.get(kind, s.stop - s.start)
            {"base": self.bases, "joint": self.joints, "modal": self.modal}[kind].append((n, s, slice(k, k + size)))
            names += [f"{n}.{x}" for x in (MINIMAL_BASE_STATES if kind == "base" else JOINT_STATES if kind == "joint"
                                           else modal_names(size // 2))]
            k += size
            n_native = max(n_native, s.stop)
        self.state_names = names
        self.n, self.n_native = k, (system.plan().n_states if system is not None else n_native)
        self.index = {name: i for i, name in enumerate(names)}

    def tangent(self, y) -> np.ndarray:
        """``T = dy/dx`` (``(n_native, n)``) at ``y``: how the system's states move along each
        minimal coordinate (the identity but for a quaternion, :func:`quat_chart`)."""
        T = np.zeros((self.n_native, self.n))
        for _, s, m in self.bases:
            T[s.start:s.start + 9, m.start:m.start + 9] = np.eye(9)
            T[s.start + 9:s.start + 13, m.start + 9:m.start + 12] = quat_chart(y[s.start + 9:s.start + 13])
        for _, s, m in self.joints + self.modal:
            T[s, m] = np.eye(s.stop - s.start)
        return T

    def rates(self, y, ydot, dydot=None, seeds=None):
        """``(xdot, dxdot)``: the minimal states' derivative at ``y`` (the system's ``ydot``
        there) and, with ``dydot`` (``(n_native, k)``: ``ydot``'s derivatives along ``k``
        directions whose minimal-coordinate components are ``seeds``, ``(n, k)``), its
        derivatives. The pose follows the reference (module docstring): 0 at the operating
        point; ``rhodot`` adds ``-(P_b/i,0 omega0) x rho`` to ``d[IP]/dt``'s derivatives,
        ``phidot = (omega - omega0) + phi x omega0`` (:func:`~titop_fmu.spatial.chart_rate_jacobian`)."""
        xdot = np.empty(self.n)
        k = 0 if dydot is None else dydot.shape[1]
        dx = np.empty((self.n, k))
        for _, s, m in self.bases:
            omega = y[s.start + 3:s.start + 6]
            xdot[m.start:m.start + 6] = ydot[s.start:s.start + 6]
            xdot[m.start + 6:m.start + 12] = 0.0                  # the pose moves with the reference
            if k:
                dx[m.start:m.start + 9] = dydot[s.start:s.start + 9]
                dx[m.start + 6:m.start + 9] += chart_rate_jacobian(dcm_from_quat(y[s.start + 9:s.start + 13]).dot(
                    omega)).dot(seeds[m.start + 6:m.start + 9])
                dx[m.start + 9:m.start + 12] = seeds[m.start + 3:m.start + 6] \
                    + chart_rate_jacobian(omega).dot(seeds[m.start + 9:m.start + 12])
        for _, s, m in self.joints + self.modal:
            xdot[m] = ydot[s]
            if k:
                dx[m] = dydot[s]
        return (xdot, dx) if dydot is not None else xdot

    def retract(self, y, dx) -> np.ndarray:
        """The system's state ``y (+) dx``: each minimal coordinate moved by ``dx`` (the
        attitude turned by ``dx``'s rotation vector in the body frame, ``q (x) quat_exp``)."""
        y = np.array(y, dtype=float)
        for _, s, m in self.bases:
            y[s.start:s.start + 9] += dx[m.start:m.start + 9]
            q = quat_multiply(y[s.start + 9:s.start + 13], quat_exp(dx[m.start + 9:m.start + 12]))
            y[s.start + 9:s.start + 13] = q / np.linalg.norm(q)
        for _, s, m in self.joints + self.modal:
            y[s] += dx[m]
        return y


def modal_names(n: int) -> list:
    """The state names of a flexible body's ``n`` modes: ``eta1 .. etan, etad1 .. etadn``."""
    return [f"eta{i + 1}" for i in range(n)] + [f"etad{i + 1}" for i in range(n)]


# -- inputs and outputs ---------------------------------------------------------------------------

def free_inputs(system: System) -> dict:
    """``{(block, port): size}`` of the system's unlinked inputs, in state order: the extra
    inputs (``ext.w``, ``joint.tau``, ...), free child wrenches ``ci.w`` and constant parent
    motions ``p.m``."""
    plan = system.plan()
    out = {}
    for n in plan.order:
        b = system.blocks[n]
        for p in b.parent_ports:
            if (n, p) not in plan.parent_link:
                out[(n, f"{p}.m")] = 18
        for c in b.child_ports:
            if (n, c) not in plan.child_link:
                out[(n, f"{c}.w")] = 6
        for e, size in b.extra_inputs.items():
            out[(n, e)] = size
    return out


def default_inputs(system: System) -> list:
    """The inputs of a linear model when none are named: every component of the free inputs
    but the constant motion vectors (boundary conditions, not actuators)."""
    return [f"{n}.{s}" for (n, port), size in free_inputs(system).items() if not port.endswith(".m")
            for s in port_names({port: size})]


def _scalars(ref, spec: dict, what: str) -> list:
    """``[(scalar name, (block, port, component))]`` of the scalar or port ``ref`` among the
    ports ``spec`` (``{(block, port): size}``); ConnectionError_ naming ``what`` for an
    unknown one."""
    block, _, var = ref.partition(".")
    port, k = port_of(var)
    size = spec.get((block, port))
    if size is None or k > size or (k and size == 1):
        known = sorted({f"{b}.{p}" for b, p in spec})
        raise ConnectionError_(f"unknown {what} {ref!r}; the {what}s are (with [1..n] for a component): "
                               + ", ".join(known))
    names = port_names({port: size})
    return [(f"{block}.{names[i]}", (block, port, i)) for i in (range(size) if k == 0 else [k - 1])]


def resolve_inputs(system: System, names) -> list:
    """``[(scalar name, (block, port, component))]`` of the input names (scalars or ports)."""
    spec = free_inputs(system)
    return [x for ref in names for x in _scalars(ref, spec, "input")]


def output_layout(system: System) -> tuple:
    """``(spec, offsets)``: ``{(block, port): size}`` of every block output and the position of
    each port's first component in the kernel's output vector (blocks in state order, each
    one's ports as :attr:`~titop_fmu.blocks.base.Block.outputs_spec` orders them)."""
    spec, offsets, k = {}, {}, 0
    for n in system.plan().order:
        for port, size in system.blocks[n].outputs_spec.items():
            spec[(n, port)] = size
            offsets[(n, port)] = k
            k += size
    return spec, offsets


def resolve_outputs(system: System, names) -> list:
    """``[(scalar name, where)]`` of the output names: ``where`` is the position in the kernel's
    output vector of a block output's scalar (``balloon.c1.m[3]``), or ``(entry, i)`` for the
    component ``i`` of an inertial quantity of a body (``bus.com.position``, ``boom.dcm[4]``:
    :func:`titop_fmu.titop.records.inertial_entry`)."""
    spec, offsets = output_layout(system)
    out = []
    for ref in names:
        if ref.partition(".")[0] == SYSTEM and SYSTEM not in system.blocks:
            raise ConnectionError_(f"output {ref!r}: the system's totals (momentum, energy, centre of mass) are not "
                                   "outputs of a linear model: record them in a run")
        block = system.blocks.get(ref.partition(".")[0])
        entry = inertial_entry(ref, ref.partition(".")[0], block, type(block).__name__, "output") if block else None
        if entry is not None:
            if entry.quantity in ACCELERATION_QUANTITIES:
                raise ConnectionError_(f"output {ref!r}: a point's acceleration is not an output of a linear model "
                                       "(it reads the accelerations: take the joint's q[1] or a base's p.m[1..6])")
            node = isinstance(block.body, FlexibleBody) and entry.point not in (None, "p")
            at = (offsets[(entry.unit, f"{entry.point}.m")],) if node else ()      # a node: its own motion
            out += [(label, (entry, i, *at)) for label, i in zip(entry.labels, entry.select)]
            continue
        try:
            out += [(name, offsets[(b, port)] + i) for name, (b, port, i) in _scalars(ref, spec, "output")]
        except ConnectionError_ as e:
            raise ConnectionError_(f"{e}; and a body's inertial quantities (<block>.<point>.position, "
                                   "<block>.<point>.velocity, <block>.dcm, <block>.euler)") from None
    return out


def with_inputs(system: System, ports) -> System:
    """A copy of ``system`` (the same blocks and links, its own input values) in which every
    port of ``ports`` (``(block, port)``) has a value array, zero where it had none: the
    kernel then reads it, and it can be differentiated along. The system given is not changed."""
    s = System(system.solver)
    s.blocks = dict(system.blocks)
    s.links = list(system.links)
    s.values = {k: v.copy() for k, v in system.values.items()}
    spec = free_inputs(system)
    for key in ports:
        if key not in s.values:
            s.values[key] = np.zeros(spec[key])
    return s
