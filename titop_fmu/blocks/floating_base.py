"""Floating rigid base ``G^B_{P,C1..Cn}`` (Figs. 2-3, eqs. (11)–(13)) and the
imposed-motion base of the direct dynamic model (Fig. 1)."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..spatial import P_x2, dcm_from_euler, dcm_from_quat, euler_angles, quat_derivative, quat_from_dcm
from .base import BodyBlock
from .body import RigidBody, as_vector

BASE_STATES = ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z",
               "r_x", "r_y", "r_z", "q_w", "q_x", "q_y", "q_z")


class _Base(BodyBlock):
    """A body (rigid or flexible) with 6 d.o.f. w.r.t. ``R_i``: twist ``x'_P`` (in ``R_b``),
    position ``[IP]_Ri`` and a unit quaternion of ``P_b/i`` as states (no gimbal lock; the
    Euler angles of the motion vector are computed from it)."""

    own_states = BASE_STATES

    def __init__(self, body: RigidBody, gravity=(0.0, -9.81, 0.0),
                 r0=(0.0, 0.0, 0.0), Theta0=(0.0, 0.0, 0.0), twist0=(0.0,) * 6):
        self.g = as_vector("gravity", gravity)
        self.r0 = as_vector("r0", r0)
        self.Theta0 = as_vector("Theta0", Theta0)
        self.twist0 = as_vector("twist0", twist0, 6)
        self._attach(body)

    def own_initial_state(self):
        return np.concatenate([self.twist0, self.r0, quat_from_dcm(dcm_from_euler(self.Theta0))])

    def kinematics(self, x, m_parents, outputs=True):
        twist, r_i, q = x[0:6], x[6:9], x[9:13]
        P_bi = dcm_from_quat(q)
        m_P = np.zeros(18)
        m_P[6:12] = twist
        m_P[12:15] = r_i.dot(P_bi)                                       # P_b/i^T [IP]_Ri
        m_P[15:18] = euler_angles(P_bi) if outputs else np.nan            # Theta(P_b/i)
        kin = self._body_kinematics(m_P, P_bi, x, outputs)
        kin.m_out = {"p.m": m_P, **kin.m_out}
        return kin

    def project_state(self, x):
        x = x.copy()
        x[9:13] /= np.linalg.norm(x[9:13])
        return x

    def own_derivatives(self, x, kin, acc):
        """``x'dot_P``, then the kinematics of eq. (12) with the position in ``R_i``,
        ``d[IP]_Ri/dt = P_b/i v_P``, and a quaternion in place of ``Gamma(Theta)``."""
        twist, q = x[0:6], x[9:13]
        return np.concatenate([acc["p.a"], kin.P_ai.dot(twist[0:3]), quat_derivative(q, twist[3:6])])


class FloatingBase(_Base):
    """``[G^B_{P,C1..Cn}(s)]_Rb``: forward dynamics of a free rigid body (Fig. 2, Fig. 3).

    ``x'dot_P = D_P^{-1} (W_ext,P + sum_i tau_CiP^T W_./B,Ci - C(x'_P) D_P x'_P) + [g; 0]``
    (eq. (11), eq. (13)), the twist and pose being integrated from ``twist0``, ``r0``,
    ``Theta0``.

    Inputs: ``ext.w`` external wrench ``[F; T_P]`` applied at ``P``, projected in
    ``R_i`` (``ext_frame="inertial"``, e.g. buoyancy) or in ``R_b``
    (``ext_frame="body"``, e.g. thrusters); ``ci.w``. Outputs: ``p.m``, the
    motion vector of the base at ``P`` (in ``R_b``); ``ci.m``.
    """

    extra_inputs = {"ext.w": 6}
    extra_outputs = {"p.m": 18}
    optional_inputs = ("ext.w",)

    def __init__(self, body: RigidBody, ext_frame="inertial", **kw):
        super().__init__(body, **kw)
        if ext_frame not in ("inertial", "body"):
            raise ParameterError("ext_frame", f"must be 'inertial' or 'body', got {ext_frame!r}")
        self.ext_frame = ext_frame
        if body.mass <= 0:
            raise ParameterError("mass", f"a floating base needs a positive mass, got {body.mass}")
        if np.linalg.eigvalsh(body.inertia)[0] <= 0:
            raise ParameterError("inertia", "a floating base needs a positive definite inertia")
        if body.n_modes and np.linalg.eigvalsh(body.D_res0)[0] <= 1e-12 * body.mass:
            raise ParameterError("mass", "a floating base needs a positive definite residual mass D_P - L^T L")
        self.D_inv = body.D_inv if isinstance(body, RigidBody) else None     # [D_P]^-1, Fig. 2

    def accelerations(self, kin, u):
        w_ext = u["ext.w"]
        if self.ext_frame == "inertial":
            w_ext = P_x2(kin.P_ai).T.dot(w_ext)
        a_P, modal = self.body.forward(kin, w_ext, u, self.child_ports)  # eq. (11) solved, Fig. 2; eq. (F16)
        acc = {"p.a": a_P}
        if modal is not None:
            acc["modal.qdd"] = modal
        if kin.outputs:
            acc.update(self.body.child_accelerations(kin, a_P, modal, self.child_ports))
        return acc


class ImposedMotionBase(_Base):
    """Direct dynamic model of a body at ``P`` (Fig. 1, eq. (11)): inverse dynamics.

    The spatial acceleration ``p.a`` = ``x'dot_P`` (in ``R_b``) is imposed and
    integrated from ``twist0``, ``r0``, ``Theta0``; the output ``p.w`` is the
    wrench ``W_./B,P`` (in ``R_b``) that the environment must apply at ``P``:
    ``W_./B,P = D_P (x'dot_P - [g; 0]) + C(x'_P) D_P x'_P - sum_i tau_CiP^T W_./B,Ci``
    (eq. (11), eq. (13)).
    With ``p.a = 0`` and a zero initial twist it is a fixed base whose ``p.w`` is
    the reaction wrench.
    """

    extra_inputs = {"p.a": 6}
    extra_outputs = {"p.m": 18, "p.w": 6}
    optional_inputs = ("p.a",)

    def accelerations(self, kin, u):
        a_P = u["p.a"]
        w_P, modal = self.body.needed_wrench(kin, a_P - kin.g6, u, self.child_ports)   # eq. (11), eq. (F16)
        return self._body_outputs({"p.a": a_P, "p.w": w_P}, kin, a_P, modal)

    def own_output_values(self, x, kin, acc):
        return {"p.w": acc["p.w"]}
