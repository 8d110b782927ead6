"""Loop-closure spring-damper ``L^A_C`` (section 3.4, Figs. 13-14)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import ParameterError
from ..spatial import P_x2, dcm_from_euler, rotation_vector
from .base import Block, col


def _psd(name, value):
    M = np.asarray(value, dtype=float)
    if M.shape != (6, 6) or not np.all(np.isfinite(M)):
        raise ParameterError(name, f"expected a finite 6x6 matrix, got shape {M.shape}")
    if np.max(np.abs(M - M.T)) > 1e-9 * max(1.0, np.max(np.abs(M))):
        raise ParameterError(name, "must be symmetric")
    if np.linalg.eigvalsh(0.5 * (M + M.T))[0] < -1e-9 * max(1.0, np.max(np.abs(M))):
        raise ParameterError(name, "must be positive semi-definite")
    return M


class LoopClosure(Block):
    """``[L^A_C]_Ra``: closes a kinematic loop opened at point ``C`` of a body ``A``
    split into ``A_l`` and ``A_r`` (Fig. 13), through a 6x6 stiffness ``K`` and
    damping ``D`` (Fig. 14).

    Ports ``l`` and ``r`` take the motion vectors ``m^{A_l}_C`` and ``m^{A_r}_C``
    (each in its own frame) and give back the wrench applied on each part at
    ``C``. The relative motion ``delta m = m^{A_r}_C - m^{A_l}_C`` is formed
    frame-consistently, in ``R_al``:

    * ``delta x = [P_ar/al [IC]_r - [IC]_l ; log(P_ar/al)]`` (the rotation
      vector replaces the Euler-angle difference: both agree to first order when
      the frames coincide, the rotation vector stays valid at any attitude);
    * ``delta x' = [P_ar/al v_r - v_l ; P_ar/al omega_r - omega_l]``;

    ``W_Ar/Al,C = K delta x + D delta x'`` (on ``A_l``), and the opposite force
    on ``A_r`` with the torque ``-T + delta r x F`` that keeps the angular
    momentum balanced when the two points ``C`` do not coincide.
    Static, no direct feedthrough of accelerations.
    """

    parent_ports = ("l", "r")

    def __init__(self, K, D):
        self.K = _psd("K", K)
        self.D = _psd("D", D)

    def kinematics(self, x, m_parents, outputs=True):
        m_l, m_r = m_parents["l"], m_parents["r"]
        R_lr = dcm_from_euler(m_l[15:18]).T @ dcm_from_euler(m_r[15:18])   # P_ar/al
        dr = R_lr @ m_r[12:15] - m_l[12:15]
        dx = np.concatenate([dr, rotation_vector(R_lr)])
        dxp = np.concatenate([R_lr @ m_r[6:9] - m_l[6:9], R_lr @ m_r[9:12] - m_l[9:12]])
        W_l = self.K @ dx + self.D @ dxp
        F, T = W_l[0:3], W_l[3:6]
        W_r = P_x2(R_lr).T @ np.concatenate([-F, -T + np.cross(dr, F)])
        return SimpleNamespace(m_out={}, W_l=W_l, W_r=W_r, dx=dx)

    def accelerations(self, kin, u):
        return {"l.w": col(kin.W_l), "r.w": col(kin.W_r)}
