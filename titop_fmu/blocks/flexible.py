"""The flexible body of the TITOP blocks (docs/flexible-bodies.md, eqs. (F1)-(F18)): a
floating frame at the port point ``P``, the body cantilevered there, its elastic motion as
the coordinates ``eta`` of its clamped modes, with first-order geometric stiffening.

:class:`FlexibleBody` is what a :class:`~titop_fmu.blocks.body.RigidBody` is to the blocks:
the same methods (``kinematics``, ``needed_wrench``, ``forward``, ``child_accelerations``),
so any block takes either. Its own states are ``eta`` and ``etadot`` (after the block's).
"""

from __future__ import annotations

from types import SimpleNamespace

import math

import numpy as np

from ..errors import ParameterError
from ..spatial import C_times, cross, euler_angles, gravity6, skew, tau
from .body import BodyPorts, as_vector, rigid_properties
from .modal import ModalData

#: the three cyclic (k, a, b): the component k of a x b is x_a y_b - x_b y_a
_CYCLIC = ((0, 1, 2), (1, 2, 0), (2, 0, 1))
#: Pi_p with omega^T Pi_p omega = pi_p(omega), p = xx, yy, zz, xy, xz, yz (eq. (F8))
_PI = np.zeros((6, 3, 3))
for _p, (_k, _l) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
    _PI[_p, _k, _l] += 0.5
    _PI[_p, _l, _k] += 0.5
_PI9 = _PI.reshape(6, 9)
_I3 = np.eye(3)


def omega_products(w) -> np.ndarray:
    """``pi(omega) = [w_x^2, w_y^2, w_z^2, w_x w_y, w_x w_z, w_y w_z]`` (eq. (F2))."""
    x, y, z = w
    return np.array([x * x, y * y, z * z, x * y, x * z, y * z])


def rotation_and_jacobians(theta, thetadot):
    """``(exp((*theta)), J_l(theta), Jdot_l thetadot)`` (eq. (F11), eq. (F12)): the rotation, the
    left Jacobian of SO(3) ``1 + a (*theta) + b (*theta)^2`` and its derivative along
    ``thetadot`` applied to it, ``adot theta x thetadot + bdot theta x (theta x thetadot) +
    b thetadot x (theta x thetadot)``; series near ``theta = 0``."""
    t2 = float(theta @ theta)
    t = math.sqrt(t2)
    if t < 1e-4:
        s1, a, b = 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
        da, db = -1.0 / 12.0 + t2 / 180.0, -1.0 / 60.0 + t2 / 1260.0          # a'(t)/t, b'(t)/t
    else:
        s, c = math.sin(t), math.cos(t)
        s1, a, b = s / t, (1.0 - c) / t2, (t - s) / (t2 * t)
        da, db = (t * s - 2.0 * (1.0 - c)) / (t2 * t2), (3.0 * s - t * c - 2.0 * t) / (t2 * t2 * t)
    S = skew(theta)
    S2 = S @ S
    E = np.eye(3) + s1 * S + a * S2
    Jl = np.eye(3) + a * S + b * S2
    rate = float(theta @ thetadot)
    tx = cross(theta, thetadot)
    Jdot = da * rate * tx + db * rate * cross(theta, tx) + b * cross(thetadot, tx)
    return E, Jl, Jdot


class FlexibleBody(BodyPorts):
    """A body clamped at ``P`` given by its :class:`~titop_fmu.blocks.modal.ModalData`; its
    nodes are the child ports ``c1, c2, ...``. ``stiffening=False`` drops every ``K0`` term
    (eq. (F10)); ``eta0``, ``etad0``: initial modal coordinates and rates."""

    children_through_sum = False        # each child drives the modes through its own node

    def __init__(self, data: ModalData, stiffening: bool = True, eta0=None, etad0=None):
        self.data = data
        n = self.n_modes = data.n_modes
        self.stiffening = bool(stiffening)
        self.eta0 = np.zeros(n) if eta0 is None else as_vector("eta0", eta0, n)
        self.etad0 = np.zeros(n) if etad0 is None else as_vector("etad0", etad0, n)
        D = self.D_P = data.mass
        self.mass, self.com, self.inertia = rigid_properties(D)
        self.c0 = self.mass * self.com
        self.children = tuple(np.array(c) for c in data.nodes)
        self.C1, self.C2 = data.L[:, 0:3].T.copy(), data.L[:, 3:6].T.copy()
        self.K, self.Dd = data.omega ** 2, 2.0 * data.zeta * data.omega
        self.F = np.ascontiguousarray(data.I_phi_phi.reshape(9 * n, n))           # eq. (F5)
        self.E = np.ascontiguousarray(data.I_phi_x0)
        self.E9 = self.E.reshape(9, n)
        self.trE = np.einsum("aaj->j", data.I_phi_x0)
        s = 1.0 if self.stiffening else 0.0
        self.K0t = s * data.K0t.reshape(3 * n, n)
        self.K0r = s * data.K0r.reshape(3 * n, n)
        self.K0om = s * data.K0om.reshape(6 * n, n)
        self.K0F = [s * K.reshape(3 * n, n) for K in data.K0F]
        self.K0M = [s * K.reshape(3 * n, n) for K in data.K0M]
        self.state_names = tuple(f"eta{i + 1}" for i in range(n)) + tuple(f"etad{i + 1}" for i in range(n))
        self.extra_outputs = {f"{c}.u": 6 for c in self.child_ports()}
        self.D_res0 = D - data.L.T @ data.L                                       # eq. (F15) at eta = 0

    def initial_state(self):
        return np.concatenate([self.eta0, self.etad0])

    # -- the state level: eqs. (F7)-(F9), (F11)-(F12) ------------------------------------------
    def kinematics(self, g_i, child_ports, m_P, P_ai, outputs=True, x=None, **extra):
        """The configuration-dependent mass ``M(eta)``, the terms ``h_r``, ``f_e`` and
        ``D_res`` of eqs. (F9), (F14), (F15), and each node's frame and Jacobians (eq. (F11));
        with ``outputs``, the twist/pose part of the child motion vectors (eq. (F12))."""
        n = self.n_modes
        eta, etad = x[:n], x[n:]
        tw = m_P[6:12]
        v, w = tw[0:3], tw[3:6]
        Fe = (self.F @ eta).reshape(3, 3, n)                                      # F_ab eta
        Fd = (self.F @ etad).reshape(3, 3, n)
        Q = Fe @ eta                                                              # Q_ab = eta^T F_ab eta
        Qd = Fe.transpose(1, 0, 2) @ etad                                         # eta^T F_ab etadot
        G, Gd = Fe.transpose(1, 0, 2) - Fe, Fd.transpose(1, 0, 2) - Fd
        Gam = np.array([G[a, b] for _, a, b in _CYCLIC])                          # Gam(eta), 3 x n
        Gamd = np.array([Gd[a, b] for _, a, b in _CYCLIC])
        Ee, Ed = self.E @ eta, self.E @ etad
        Lt, Ltd = (self.K0t @ eta).reshape(3, n), (self.K0t @ etad).reshape(3, n)
        Lr, Lrd = (self.K0r @ eta).reshape(3, n), (self.K0r @ etad).reshape(3, n)
        Ko = (self.K0om @ eta).reshape(6, n)
        sp, spd = Ko @ eta, 2.0 * (Ko @ etad)
        c = self.c0 + self.C1 @ eta + 0.5 * (Lt @ eta)                           # eq. (F8)
        cd = self.C1 @ etad + Lt @ etad
        Qdot = Qd + Qd.T
        dI = (2.0 * np.trace(Ee) + np.trace(Q)) * _I3 - Ee - Ee.T - Q - (sp @ _PI9).reshape(3, 3)
        Idot = (2.0 * np.trace(Ed) + np.trace(Qdot)) * _I3 - Ed - Ed.T - Qdot - (spd @ _PI9).reshape(3, 3)
        M_rr = self.D_P.copy()                                                    # eq. (F7)
        dc = c - self.c0
        M_rr[3:6, 0:3] += skew(dc)
        M_rr[0:3, 3:6] -= skew(dc)
        M_rr[3:6, 3:6] += dI
        M_re = np.vstack([self.C1 + Lt, self.C2 + Gam + Lr])
        p_r = M_rr @ tw + M_re @ etad
        Mdq = np.concatenate([cross(w, cd) + Ltd @ etad, cross(cd, v) + Idot @ w + Lrd @ etad])
        h_r = Mdq + C_times(tw, p_r)                                              # eq. (F9)
        pw, ww = omega_products(w), np.outer(w, w).ravel()
        w2 = float(w @ w)
        Nw = w2 * (Fe[0, 0] + Fe[1, 1] + Fe[2, 2]) - ww @ Fe.reshape(9, n)
        h_e = 2.0 * (Gamd.T @ w) - (self.C1 + Lt).T @ cross(v, w) - (w2 * self.trE - ww @ self.E9) - Nw + pw @ Ko
        kin = SimpleNamespace(
            m_A=m_P, P_ai=P_ai, outputs=outputs, g6=gravity6(P_ai, g_i).reshape(6, 1),
            eta=eta, etad=etad, M_rr=M_rr, M_re=M_re, p_r=p_r, h_r=h_r.reshape(6, 1),
            f_e=(self.K * eta + self.Dd * etad + h_e).reshape(n, 1), D_res=M_rr - M_re @ M_re.T,
            c=c, nodes=[], m_out={}, **extra)
        for i, cport in enumerate(child_ports):
            kin.nodes.append(self._node(i, eta, etad, m_P, P_ai, outputs))
            if outputs:
                kin.m_out[f"{cport}.m"] = kin.nodes[-1].m
        return kin

    def _node(self, i, eta, etad, m_P, P_ai, outputs):
        """Node ``i``: its frame, position, Jacobians (eq. (F11)) and, with ``outputs``, its
        motion vector's twist and pose and the state part of its acceleration (eq. (F12))."""
        d = self.data
        KFe, KMe = (self.K0F[i] @ eta).reshape(3, -1), (self.K0M[i] @ eta).reshape(3, -1)
        r = self.children[i] + d.phi[i] @ eta - 0.5 * (KFe @ eta)
        theta = d.psi[i] @ eta - 0.5 * (KMe @ eta)
        J, Theta = d.phi[i] - KFe, d.psi[i] - KMe
        thetad = Theta @ etad
        E, Jl, Jdot = rotation_and_jacobians(theta, thetad)
        W = Jl @ Theta
        node = SimpleNamespace(r=r, theta=theta, E=E, Jt=np.vstack([J, W]), tau=tau(-r))
        node.E2 = np.zeros((6, 6))
        node.E2[0:3, 0:3] = node.E2[3:6, 3:6] = E
        node.tauT = node.tau.T
        if outputs:
            v, w = m_P[6:9], m_P[9:12]
            w_rel = W @ etad
            v_C, w_C = v + cross(w, r) + J @ etad, w + w_rel
            m = np.zeros(18)
            m[6:9], m[9:12] = E.T @ v_C, E.T @ w_C
            m[12:15] = E.T @ (m_P[12:15] + r)
            m[15:18] = euler_angles(P_ai @ E)
            KFd, KMd = (self.K0F[i] @ etad).reshape(3, -1), (self.K0M[i] @ etad).reshape(3, -1)
            beta = np.concatenate([cross(w, J @ etad) - KFd @ etad, Jdot - Jl @ (KMd @ etad)])
            w_n = E.T @ w_rel
            node.bias = node.E2.T @ beta - np.concatenate([cross(w_n, m[6:9]), cross(w_n, m[9:12])])
            node.m = m
        return node

    # -- the acceleration level: eqs. (F13)-(F15) ----------------------------------------------
    def _children(self, kin, u, child_ports):
        """``(sum_C W_C,P, Q_c)`` of the children's wrenches (eq. (F13))."""
        Wc = Q = 0.0
        for node, c in zip(kin.nodes, child_ports):
            wa = node.E2 @ u[f"{c}.w"]
            Wc = Wc + node.tauT @ wa
            Q = Q + node.Jt.T @ wa
        return Wc, Q

    def needed_wrench(self, kin, a_hat, u, child_ports):
        """``(W(a_hat), etaddot)``: the wrench the body needs at ``P`` (applied by its parent) for
        the frame's acceleration ``a_hat = x'dot - [g; 0]`` (6 x k) and the children's wrenches,
        and the modal accelerations (eqs. (F14), (F15))."""
        Wc, Q = self._children(kin, u, child_ports)
        eddot = Q - kin.f_e - kin.M_re.T @ a_hat
        return kin.M_rr @ a_hat + kin.M_re @ eddot + kin.h_r - Wc, eddot

    def forward(self, kin, w_ext, u, child_ports):
        """``(x'dot_P, etaddot)`` of a free body under the wrench ``w_ext`` at ``P`` (eq. (F16),
        floating base): ``D_res a_hat = w_ext - W(0)``."""
        Wc, Q = self._children(kin, u, child_ports)
        rest = kin.M_re @ (Q - kin.f_e) + kin.h_r - Wc                            # W(0), eq. (F15)
        a_hat = np.linalg.solve(kin.D_res, w_ext - rest)
        return a_hat + kin.g6, Q - kin.f_e - kin.M_re.T @ a_hat

    def apparent_inertia(self, kin, s):
        """``s^T D_res s``: the inertia a joint of axis screw ``s`` sees (eq. (F16))."""
        return float(s @ kin.D_res @ s)

    def child_accelerations(self, kin, a, eddot, child_ports):
        """``ci.a``: each node frame's spatial acceleration (eq. (F12)) from the frame's ``a``
        (gravity not subtracted) and ``etaddot``."""
        return {f"{c}.a": node.E2.T @ (node.tau @ a + node.Jt @ eddot) + node.bias[:, None]
                for node, c in zip(kin.nodes, child_ports)}

    def derivatives(self, x, kin, acc):
        return np.concatenate([x[self.n_modes:], acc["modal.qdd"]])

    def output_values(self, kin) -> dict:
        """``ci.u = [r_C - PC; theta_C]``: each node's elastic displacement (eq. (F13))."""
        return {f"c{i + 1}.u": np.concatenate([node.r - PC, node.theta])
                for i, (node, PC) in enumerate(zip(kin.nodes, self.children))}

    def check_joint(self, s, name):
        """A joint of screw ``s`` needs ``s^T D_res s > 0`` (eq. (F16), at ``eta = 0``)."""
        if s @ self.D_res0 @ s <= 1e-12 * max(1.0, self.mass):
            raise ParameterError(name, "the flexible body's residual inertia along the joint is zero: the joint "
                                       "acceleration is undefined")


def is_flexible(body) -> bool:
    return isinstance(body, FlexibleBody)
