"""TITOP models of a body with its joint to the parent: welded ``R^A_{P,C1..Cn}``
(section 3.1, eq. (15)), revolute ``R^{A,r}_{P,C1..Cn}`` (section 3.2, eqs. (16)–(23))
and prismatic ``R^{A,t}_{P0,C1..Cn}`` (section 3.3, eqs. (24)–(29), eq. (23)).

All three take the parent's motion vector at the joint point, projected in the
parent frame ``R_b``, and give back the wrench ``W_A/B`` applied on the parent,
projected in ``R_b``; child ports are in the body frame ``R_a``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..spatial import P_x2, axis_rotation, dcm_from_euler, motion_in_frame, skew, tau
from .base import BodyBlock
from .body import RigidBody, as_scalar, as_vector, unit_axis


class _MountedBody(BodyBlock):
    """A body ``A`` attached at ``P`` to a parent ``B``, mounting DCM ``P_a0/b`` from
    the 3-2-1 Euler angles ``mount`` of ``R_a`` w.r.t. ``R_b`` at zero joint motion; the
    body rigid or flexible."""

    parent_ports = ("p",)

    def __init__(self, body: RigidBody, gravity=(0.0, -9.81, 0.0), mount=(0.0, 0.0, 0.0)):
        self.g = as_vector("gravity", gravity)
        self.mount = as_vector("mount", mount)
        self.P_a0b = dcm_from_euler(self.mount)
        self.P_a0b_x2 = P_x2(self.P_a0b)
        self._attach(body)


class WeldedBody(_MountedBody):
    """``[R^A_{P,C1..Cn}]^{Ra}_{Rb}``: rigid body clamped to its parent (Figs. 4-6, eq. (15)).

    ``W_A/B,P = sum_i tau_CiP^T W_./A,Ci - D_P (x'dot_P - [g; 0]) - C(x'_P) D_P x'_P``
    (eq. (15), whose last factor is ``x'^A_P``), then ``m_Ci = upsilon_CiP(m_P)`` (eq. (14)).
    Static: no state.
    """

    def kinematics(self, x, m_parents, outputs=True):
        P_ab = self.P_a0b
        m_A, P_ai = motion_in_frame(m_parents["p"], P_ab, outputs)
        return self._body_kinematics(m_A, P_ai, x, outputs, P2=self.P_a0b_x2)    # the mounting: constant

    def accelerations(self, kin, u):
        a_A = kin.P2.T.dot(u["p.a"])
        W, modal = self.body.needed_wrench(kin, a_A - kin.g6, u, self.child_ports)    # eq. (15), eq. (F16)
        return self._body_outputs({"p.w": kin.P2.dot(-W)}, kin, a_A, modal)         # eq. (14)


class _JointBody(_MountedBody):
    """Common part of the revolute and prismatic bodies: joint states ``(q, qd)``,
    an optional spring/damper ``-k q - d qd`` inside the joint added to the
    actuator effort ``joint.tau``, and the mode:

    * ``"forward"``: input ``joint.tau`` (``C_m`` or ``F_m``), the joint
      acceleration is computed (eq. (22) / eq. (28));
    * ``"inverse"``: input ``joint.qdd``, the actuator effort needed is the
      output ``joint.tau`` (eq. (21) / eq. (27)).

    Output ``joint.q = [qdd, qd, q]`` (the joint motion ``m_r`` / ``m_t``).
    """

    own_states = ("q", "qd")

    def __init__(self, body, axis, q0=0.0, qd0=0.0, k=0.0, d=0.0, mode="forward", **kw):
        self.axis = unit_axis("axis", axis)
        self.q0 = as_scalar("q0", q0)
        self.qd0 = as_scalar("qd0", qd0)
        self.k = as_scalar("k", k, minimum=0.0)
        self.d = as_scalar("d", d, minimum=0.0)
        if mode not in ("forward", "inverse"):
            raise ParameterError("mode", f"must be 'forward' or 'inverse', got {mode!r}")
        self.mode = mode
        if mode == "forward":
            self.extra_inputs = {"joint.tau": 1}
            self.own_outputs = {"joint.q": 3}
        else:
            self.extra_inputs = {"joint.qdd": 1}
            self.own_outputs = {"joint.q": 3, "joint.tau": 1}
        self.optional_inputs = tuple(self.extra_inputs)
        super().__init__(body, **kw)

    def own_initial_state(self):
        return np.array([self.q0, self.qd0])

    def _apparent_inertia(self, kin):
        """The inertia the joint sees: ``J_r`` (eq. (20)) or ``m^A`` for a rigid body,
        ``s^T D_res s`` for a flexible one (eq. (F16))."""
        return self.J if not self.body.n_modes else self.body.apparent_inertia(kin, self.screw)

    def joint_effort(self, q, qd):
        """Spring/damper effort inside the joint: ``-k q - d qd``."""
        return -self.k * q - self.d * qd

    def _solve_joint(self, kin, u, J, beta):
        """Joint acceleration (forward, eq. (22) / eq. (28)) or actuator effort (inverse,
        eq. (21) / eq. (27)) from ``effort = J qdd + s^T beta``, ``s`` the joint's unit screw:
        the effort is ``C_m = -s^T W_A/B,P`` (eq. (19)) or ``F_m`` (eq. (26)) less the
        spring/damper, ``J`` is ``J_r`` (eq. (20)) or ``m^A``."""
        s_beta = kin.s.dot(beta)
        if self.mode == "forward":
            effort = u["joint.tau"][0] + kin.spring
            return (effort - s_beta) / J, {}
        qdd = u["joint.qdd"][0]
        return qdd, {"joint.tau": (J * qdd + s_beta - kin.spring)[None, :]}

    def own_derivatives(self, x, kin, acc):
        return np.array([x[1], acc["joint.qdd"][0]])

    def own_output_values(self, x, kin, acc):
        out = {"joint.q": np.array([acc["joint.qdd"][0], x[1], x[0]])}
        if self.mode == "inverse":
            out["joint.tau"] = acc["joint.tau"]
        return out


class RevoluteBody(_JointBody):
    """``[R^{A,r}_{P,C1..Cn}(s)]^{Ra}_{Rb}``: body with a revolute joint at ``P`` (Figs. 8-9).

    ``axis`` is ``[r]_Ra``; ``mount`` gives ``P_a0/b``; states ``theta, thetadot``.
    Equations: eq. (16) ``P_atheta/b = P_a0/b e^{theta (*r~)}``; eq. (17) motion of
    ``A`` at ``P``; eq. (20) ``J_r``; eq. (22) ``thetaddot`` (forward) or eq. (21) ``C_m``
    (inverse), ``C_m`` being defined by eq. (19); eq. (18) wrench on the parent;
    eq. (23) child motion vectors.
    """

    def __init__(self, body: RigidBody, axis=(0.0, 0.0, 1.0), **kw):
        super().__init__(body, axis, **kw)
        r6 = np.concatenate([np.zeros(3), self.axis])
        self.r6 = self.screw = r6
        self.skew_r2 = P_x2(skew(self.axis))                               # diag((*r~), (*r~))
        self.J_r = self.J = float(r6 @ body.D_P @ r6)                      # eq. (20)
        if self.J_r <= 1e-12 * max(1.0, body.mass):
            raise ParameterError("inertia", "the apparent inertia J_r about the revolute axis "
                                            "is zero: the joint acceleration is undefined")
        if body.n_modes:
            body.check_joint(r6, "inertia")

    def kinematics(self, x, m_parents, outputs=True):
        theta, thetad = x[0:2].tolist()
        P_ab = self.P_a0b.dot(axis_rotation(self.axis, theta))             # eq. (16)
        m_A, P_ai = motion_in_frame(m_parents["p"], P_ab, outputs)         # [m^B_P]_Ra, Theta^A
        e = -thetad * self.skew_r2.dot(m_A[6:12])                          # eq. (17): [(*r~) v_B; (*r~) w_B]
        m_A[9:12] += thetad * self.axis                                    # eq. (17), twist
        return self._body_kinematics(m_A, P_ai, x, outputs, P2=P_x2(P_ab), e=e.reshape(6, 1), s=self.r6,
                                     spring=self.joint_effort(theta, thetad))

    def accelerations(self, kin, u):
        body = self.body
        a_B = kin.P2.T.dot(u["p.a"])                                       # [x'dot^B_P]_Ra
        beta, _ = body.needed_wrench(kin, a_B - kin.g6 + kin.e, u, self.child_ports)   # bracket of eq. (21)
        thetadd, extra = self._solve_joint(kin, u, self._apparent_inertia(kin), beta)  # eq. (22) / eq. (21)
        if not kin.outputs and not body.n_modes:                           # state derivatives only
            return {"joint.qdd": thetadd[None, :]}
        a_A = a_B + kin.e + self.r6[:, None] * thetadd                     # eq. (17)
        W, modal = body.needed_wrench(kin, a_A - kin.g6, u, self.child_ports)     # eq. (18): -W_A/B,P
        acc = {"p.w": kin.P2.dot(-W), "joint.qdd": thetadd[None, :], **extra}
        return self._body_outputs(acc, kin, a_A, modal)                    # eq. (23)


class PrismaticBody(_JointBody):
    """``[R^{A,t}_{P0,C1..Cn}(s)]_Ra``: body with a prismatic joint (Figs. 11-12).

    ``axis`` is ``[t]_Ra``; the point ``P`` of ``A`` (origin of ``com`` and
    ``children``) slides along ``t`` from the parent's point ``P0``:
    ``P = P0 + x t~``. ``mount`` gives the constant ``P_a/b``; states ``x, xdot``.
    Equations: eq. (24) motion at ``P``; eq. (28) ``xddot`` (forward) or eq. (27) ``F_m``
    (inverse), ``F_m`` being defined by eq. (26); eq. (25) wrench at ``P``; eq. (29) wrench
    at ``P0``; eq. (23) child motion vectors.
    """

    def __init__(self, body: RigidBody, axis=(1.0, 0.0, 0.0), **kw):
        super().__init__(body, axis, **kw)
        self.t6 = self.screw = np.concatenate([self.axis, np.zeros(3)])
        self.skew_t = skew(self.axis)                                      # (*t~)
        self.J = body.mass
        if body.mass <= 0:
            raise ParameterError("mass", "a prismatic body needs a positive mass (eq. (28) divides by it)")
        if body.n_modes:
            body.check_joint(self.t6, "mass")

    def kinematics(self, x, m_parents, outputs=True):
        xq, xd = x[0:2].tolist()
        t = self.axis
        P_ab = self.P_a0b
        m_A, P_ai = motion_in_frame(m_parents["p"], P_ab, outputs)         # [m^A_P0]_Ra, then at P
        T = tau(-xq * t)                                                   # tau_{-x t~} = tau_PP0, eq. (24)
        m_A[6:12] = T.dot(m_A[6:12])
        m_A[6:9] += xd * t                                                 # eq. (24), twist
        m_A[12:15] += xq * t                                               # eq. (24), pose
        e = np.zeros(6)
        e[0:3] = -xd * self.skew_t.dot(m_A[9:12])                          # eq. (24), xdot term
        return self._body_kinematics(m_A, P_ai, x, outputs, P2=self.P_a0b_x2, T=T, e=e.reshape(6, 1), s=self.t6,
                                     spring=self.joint_effort(xq, xd))

    def accelerations(self, kin, u):
        body = self.body
        a_P0 = kin.P2.T.dot(u["p.a"])
        a_T = kin.T.dot(a_P0)                                              # tau_{-x t~} x'dot_P0, eq. (24)
        beta, _ = body.needed_wrench(kin, a_T - kin.g6 + kin.e, u, self.child_ports)   # bracket of eq. (27)
        xdd, extra = self._solve_joint(kin, u, self._apparent_inertia(kin), beta)     # eq. (28) / eq. (27)
        if not kin.outputs and not body.n_modes:                           # state derivatives only
            return {"joint.qdd": xdd[None, :]}
        a_A = a_T + kin.e + self.t6[:, None] * xdd                         # eq. (24)
        W_P, modal = body.needed_wrench(kin, a_A - kin.g6, u, self.child_ports)   # eq. (25): -W_A/B,P
        W_P0 = kin.T.T.dot(-W_P)                                           # eq. (29)
        acc = {"p.w": kin.P2.dot(W_P0), "joint.qdd": xdd[None, :], **extra}
        return self._body_outputs(acc, kin, a_A, modal)                    # eq. (23)
