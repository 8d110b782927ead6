"""Any system of TITOP units as a Pinocchio model: an independent twin of a system file.

Only the data is shared with ``titop_fmu``: the units, their parameters (read through
the FMU catalog, which merges the defaults) and the links of a
:class:`titop_fmu.cosim.CoSystem`; none of its equations. The tree is rebuilt with
Pinocchio's joints and solved by its algorithms (ABA, and its analytic derivatives
``computeABADerivatives``).

Supported: a floating base (``floating_base_*``: a free-flyer joint at the port point P,
its frame the body frame, so that Pinocchio's configuration ``[IP]_Ri``, ``P_b/i`` and
LOCAL velocity ``[v_P; omega]_Rb`` are the TITOP base's states) or a fixed base
(``imposed_motion_base_*`` with no imposed acceleration and no initial twist, welded to
the universe at ``r0``, ``Theta0``); revolute and prismatic bodies in the forward mode
(``revolute_*``, ``prismatic_*``: unaligned joints along the unit axis, placed at the
parent's child point with the mounting rotation ``Rz(psi) Ry(theta) Rx(phi)`` of
``mount``), their springs and dampers ``-k q - d qd`` and constant ``joint.tau``; welded
bodies (their inertia added to the parent joint, at their placement); full inertias
at offset centres of mass; the constant external wrench ``ext.w`` of a floating base at P,
in the inertial (``ext_frame = 0``) or body frame. No loop closure, no inverse-mode joint.

Conventions: TITOP's (README): ``P_a/b`` has the axes of ``R_a`` as columns, Euler angles
3-2-1, wrenches ``[F; T_P]``, twists ``[v_P; omega]``; the gravity of every unit must be the
same (``model.gravity``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from titop_fmu.cosim.names import port_of
from titop_fmu.fmu import catalog

JOINT_KINDS = ("revolute", "prismatic")


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _dcm(euler):
    """``Rz(psi) Ry(theta) Rx(phi)`` of ``euler = [phi, theta, psi]`` (Pinocchio's rpy is the same
    sequence)."""
    return pin.rpy.rpyToMatrix(float(euler[0]), float(euler[1]), float(euler[2]))


class PinocchioTwin:
    """The Pinocchio model of a :class:`~titop_fmu.cosim.CoSystem` of TITOP units.

    ``joints``: ``{unit: (kind, index in q, index in v)}`` for every unit with states
    (``kind``: ``"floating_base"``, ``"revolute"``, ``"prismatic"``), in Pinocchio's order."""

    def __init__(self, cs):
        self.units = {}
        for name, spec in cs.units.items():
            if not isinstance(spec.model, str) or spec.model.endswith(".fmu"):
                raise ValueError(f"{name}: only TITOP model identifiers have a Pinocchio twin")
            kind, n = catalog.parse_identifier(spec.model)
            iface = catalog.interface(kind, n)
            values = dict(zip((s[0] for s in iface.param_scalars), iface.defaults()))
            values.update(spec.parameters)
            self.units[name] = (kind, n, iface.values([values[s[0]] for s in iface.param_scalars]))
        self.children = {}                                       # (unit, "ci") -> child unit
        linked = set()
        for child_port, parent_port in cs.links:
            unit, _, port = child_port.partition(".")
            self.children[(unit, port)] = parent_port.partition(".")[0]
            linked.add(parent_port.partition(".")[0])
        roots = [u for u in self.units if u not in linked]
        if len(roots) != 1:
            raise ValueError(f"expected one root unit, got {roots}")
        self.inputs = {}
        for ref, value in cs.inputs.items():
            unit, _, port = ref.partition(".")
            if port_of(port)[1]:
                raise ValueError(f"input {ref}: give whole ports")
            self.inputs[(unit, port)] = np.atleast_1d(np.asarray(value, dtype=float))
        gravities = {tuple(np.asarray(v["gravity"], dtype=float)) for _, _, v in self.units.values()}
        if len(gravities) != 1:
            raise ValueError("every unit must have the same gravity")
        self.model = pin.Model()
        self.model.gravity = pin.Motion(np.array(gravities.pop()), np.zeros(3))
        self.joints = {}
        self.base = None
        self._place(roots[0], 0, pin.SE3.Identity())
        self.data = self.model.createData()

    def _place(self, unit, parent_joint, at):
        """Add ``unit`` whose port point and parent frame are at ``at`` in ``parent_joint``'s frame."""
        kind, n, v = self.units[unit]
        model = self.model
        if kind == "floating_base":
            if parent_joint != 0:
                raise ValueError(f"{unit}: a floating base must be the root")
            joint = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), unit)
            frame = pin.SE3.Identity()
            self.base = (unit, v)
        elif kind == "imposed_motion_base":
            if np.any(np.asarray(v["twist0"])) or np.any(self.inputs.get((unit, "p.a"), 0.0)):
                raise ValueError(f"{unit}: only a fixed base (no imposed acceleration, no twist) has a twin")
            joint, frame = 0, pin.SE3(_dcm(v["Theta0"]), np.asarray(v["r0"], dtype=float))
        elif kind in JOINT_KINDS:
            axis = np.asarray(v["axis"], dtype=float)
            axis = axis / np.linalg.norm(axis)
            jm = pin.JointModelRevoluteUnaligned(axis) if kind == "revolute" else pin.JointModelPrismaticUnaligned(axis)
            joint = model.addJoint(parent_joint, jm, at * pin.SE3(_dcm(v["mount"]), np.zeros(3)), unit)
            frame = pin.SE3.Identity()
        elif kind == "welded":
            joint, frame = parent_joint, at * pin.SE3(_dcm(v["mount"]), np.zeros(3))
        else:
            raise ValueError(f"{unit}: {kind} has no Pinocchio twin")
        if kind == "floating_base" or kind in JOINT_KINDS:
            self.joints[unit] = (kind, model.joints[joint].idx_q, model.joints[joint].idx_v)
        inertia = pin.Inertia(float(v["mass"]), np.asarray(v["com"], dtype=float), np.asarray(v["inertia"], dtype=float))
        model.appendBodyToJoint(joint, inertia, frame)
        for i in range(1, n + 1):
            child = self.children.get((unit, f"c{i}"))
            if child is not None:
                self._place(child, joint, frame * pin.SE3(np.eye(3), np.asarray(v[f"c{i}.r"], dtype=float)))

    # -- states ------------------------------------------------------------------------------
    def configuration(self, states: dict) -> tuple:
        """``(q, v)`` from the TITOP units' own states ``{unit: state}`` (a floating base:
        ``[v_P, omega, [IP]_Ri, quaternion w, x, y, z]``; a joint: ``[q, qd]``)."""
        q, v = pin.neutral(self.model), np.zeros(self.model.nv)
        for unit, (kind, iq, iv) in self.joints.items():
            x = np.asarray(states[unit], dtype=float)
            if kind == "floating_base":
                w, xq, yq, zq = x[9:13] / np.linalg.norm(x[9:13])
                q[iq:iq + 7] = [*x[6:9], xq, yq, zq, w]
                v[iv:iv + 6] = x[0:6]
            else:
                q[iq], v[iv] = x[0], x[1]
        return q, v

    # -- forces --------------------------------------------------------------------------------
    def _efforts(self, q, v):
        """``(tau, dtau_dq, dtau_dv)``: joint springs, dampers and constant efforts."""
        nv = self.model.nv
        tau, dq, dv = np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv))
        for unit, (kind, iq, iv) in self.joints.items():
            if kind == "floating_base":
                continue
            p = self.units[unit][2]
            tau[iv] = -p["k"] * q[iq] - p["d"] * v[iv] + float(self.inputs.get((unit, "joint.tau"), [0.0])[0])
            dq[iv, iv], dv[iv, iv] = -p["k"], -p["d"]
        return tau, dq, dv

    def _external(self, q):
        """``(fext, dfext)``: the floating base's ``ext.w`` as Pinocchio forces (LOCAL joint
        frames) and the derivative of its generalized force along the base's local rotation
        (a wrench fixed in ``R_i`` turns by ``-dphi`` in the body frame)."""
        f = [pin.Force.Zero() for _ in range(self.model.njoints)]
        nv = self.model.nv
        d = np.zeros((nv, nv))
        if self.base is None:
            return f, d
        unit, p = self.base
        w = self.inputs.get((unit, "ext.w"), np.zeros(6))
        _, iq, iv = self.joints[unit]
        if int(p["ext_frame"]) == 0:
            x, y, z, s = q[iq + 3:iq + 7]
            R = pin.Quaternion(s, x, y, z).toRotationMatrix()            # P_b/i
            F, T = R.T @ w[0:3], R.T @ w[3:6]
            d[iv:iv + 3, iv + 3:iv + 6] = _skew(F)
            d[iv + 3:iv + 6, iv + 3:iv + 6] = _skew(T)
        else:
            F, T = w[0:3], w[3:6]
        f[self.model.getJointId(unit)] = pin.Force(F, T)
        return f, d

    def accelerations(self, q, v) -> np.ndarray:
        """``ddq``: Pinocchio's ABA with the springs, dampers, efforts and external wrench."""
        tau, _, _ = self._efforts(q, v)
        fext, _ = self._external(q)
        return pin.aba(self.model, self.data, q, v, tau, fext).copy()

    def linearization(self, q, v) -> np.ndarray:
        """``A`` (``2 nv`` square) of ``d/dt [dq; v]`` at rest (``v = 0``), ``dq`` Pinocchio's
        tangent of the configuration (``integrate(q, dq)``: a floating base's translation and
        rotation in its LOCAL frame): ``[[0, 1], [ddq/dq, ddq/dv]]`` from
        ``computeABADerivatives``, plus the springs, dampers and the turning external wrench
        through ``M^-1``."""
        tau, dtau_dq, dtau_dv = self._efforts(q, v)
        fext, dfext = self._external(q)
        pin.computeABADerivatives(self.model, self.data, q, v, tau, fext)
        Minv = np.triu(self.data.Minv) + np.triu(self.data.Minv, 1).T
        nv = self.model.nv
        A = np.zeros((2 * nv, 2 * nv))
        A[:nv, nv:] = np.eye(nv)
        A[nv:, :nv] = self.data.ddq_dq + Minv @ (dtau_dq + dfext)
        A[nv:, nv:] = self.data.ddq_dv + Minv @ dtau_dv
        return A
