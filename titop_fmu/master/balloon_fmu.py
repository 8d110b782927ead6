"""The paper's balloon (shared/balloon-scenario.md) as a system of TITOP FMUs.

Same data and wiring as :func:`titop_fmu.balloon.build` (the in-process
monolithic model), with each block a unit::

    balloon (floating_base_c1) --c1--> slider (prismatic_c1) --c1--> pendulum1 (revolute_c1)
        --c1--> pendulum2 (revolute_c0);   buoyancy: constant input balloon.ext.w

and the CSV columns of the in-process engine, computed from the units'
outputs: the balloon's motion vector at the chain tip C, ``c1.m``, gives the
Euler angles and ``[IB]_Ri = P_b/i ([IC]_Rb - [BC]_Rb)``; ``p``, ``theta1``,
``theta2`` are ``joint.q[3]`` of the joints.
"""

from __future__ import annotations

import numpy as np

from .. import balloon
from ..spatial import Gamma, dcm_from_euler
from .cosim import Options
from .graph import CoSystem

COLUMNS = balloon.COLUMNS
#: the observed values that are attitude angles (phi, theta, psi)
ANGLES = np.array([False, False, False, True, True, True, False, False, False])


def system(overrides=None) -> CoSystem:
    p = balloon.parameters(overrides)
    g = np.asarray(p["g"], dtype=float)
    zero = np.zeros((3, 3))
    s = CoSystem()
    s.add("balloon", "floating_base_c1", mass=p["m_B"], inertia=p["I_B"], com=[0.0, 0.0, 0.0],
          gravity=g, **{"c1.r": -np.asarray(p["CB"], dtype=float)})
    s.add("slider", "prismatic_c1", mass=p["m_S"], inertia=zero, com=[0.0, 0.0, 0.0], axis=p["t"],
          gravity=g, q0=p["p_0"], qd0=p["pd_0"], k=p["k"], d=p["d_s"], **{"c1.r": [0.0, 0.0, 0.0]})
    s.add("pendulum1", "revolute_c1", mass=p["m_P1"], inertia=zero, com=p["SP1"], axis=p["r1"],
          gravity=g, q0=p["theta1_0"], qd0=p["thetad1_0"], d=p["d_p1"], **{"c1.r": p["SP1"]})
    s.add("pendulum2", "revolute_c0", mass=p["m_P2"], inertia=zero, com=p["P1P2"], axis=p["r2"],
          gravity=g, q0=p["theta2_0"], qd0=p["thetad2_0"], d=p["d_p2"])
    s.link("balloon.c1", "slider.p")
    s.link("slider.c1", "pendulum1.p")
    s.link("pendulum1.c1", "pendulum2.p")
    s.set_input("balloon.ext.w", balloon.buoyancy(p))
    s.record("balloon.c1.m", "slider.joint.q", "pendulum1.joint.q", "pendulum2.joint.q")
    return s


def observer(overrides=None):
    """``f(recorded outputs) -> (3, 9)``: the CSV columns and their first and second time
    derivatives (for the dense output), from ``balloon.c1.m`` and the joints' ``joint.q``."""
    BC = -np.asarray(balloon.parameters(overrides)["CB"], dtype=float)    # [BC]_Rb: B to the tip C

    def observe(rec):
        m = rec[0:18]
        acc, twist, pose = m[0:6], m[6:12], m[12:18]
        Theta = pose[3:6]
        P = dcm_from_euler(Theta)
        w, dw = twist[3:6], acc[3:6]
        v_B = twist[0:3] - np.cross(w, BC)                     # v_C + w x CB
        a_B = acc[0:3] - np.cross(dw, BC)                      # body-frame derivative of v_B
        out = np.empty((3, 9))
        out[0, 0:3] = P @ (pose[0:3] - BC)
        out[1, 0:3] = P @ v_B
        out[2, 0:3] = P @ (a_B + np.cross(w, v_B))
        out[0, 3:6] = Theta
        if abs(np.cos(Theta[1])) > 1e-6:
            G = Gamma(Theta)
            dTheta = G @ w
            eps = 1e-6
            dG = (Gamma(Theta + eps * dTheta) - Gamma(Theta - eps * dTheta)) / (2 * eps)
            out[1, 3:6] = dTheta
            out[2, 3:6] = G @ dw + dG @ w
        else:                                                   # gimbal lock: no derivatives
            out[1:, 3:6] = np.nan
        q = rec[18:27].reshape(3, 3)                            # per joint [qdd, qd, q]
        out[0, 6:9], out[1, 6:9], out[2, 6:9] = q[:, 2], q[:, 1], q[:, 0]
        return out

    return observe


def options(overrides=None, **kw) -> Options:
    """Master options with the balloon's CSV columns as observed values."""
    return Options(observe=observer(overrides), labels=list(COLUMNS[1:]), angles=ANGLES, **kw)
