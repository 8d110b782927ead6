"""Physical invariants of an in-process system: centre of mass, momenta, energy.

They are computed from each body's motion vector at its port point (the
kinematic stage of the blocks), independently of the loop solution, and are
what the validation checks: with zero net external force the centre of mass
stays put; without damping the energy is constant; with damping it never
increases.
"""

from __future__ import annotations

import numpy as np

from .blocks import FloatingBase, LoopClosure
from .blocks.joints import _JointBody
from .system import System


def _bodies(system: System, kins):
    """``(name, block, body, P_ai, r_P (R_i), twist at P (R_a))`` for every body block."""
    for name in system.plan().order:
        b = system.blocks[name]
        if hasattr(b, "body"):
            k = kins[name]
            yield name, b, b.body, k.P_ai, k.P_ai @ k.m_A[12:15], k.m_A[6:12]


def summary(system: System, y) -> dict:
    """``com`` [m], ``p`` [kg m/s], ``H`` (about the origin, [kg m^2/s]), all in ``R_i``, and
    ``energy`` [J] at the state ``y`` (one evaluation of the system)."""
    kins, _ = system.evaluate(y)
    m_tot, mc, p, H, e = 0.0, np.zeros(3), np.zeros(3), np.zeros(3), 0.0
    for name, block, body, P, r_P, tw in _bodies(system, kins):
        v, w = tw[0:3], tw[3:6]
        r_B = r_P + P @ body.com
        mv = body.mass * (P @ (v + np.cross(w, body.com)))
        m_tot += body.mass
        mc += body.mass * r_B
        p += mv
        H += np.cross(r_B, mv) + P @ (body.inertia @ w)
        e += 0.5 * tw @ body.D_P @ tw - body.mass * block.g @ r_B
        if isinstance(block, _JointBody):
            e += 0.5 * block.k * y[system.state_slice(name)][0] ** 2
        if isinstance(block, FloatingBase):
            W = system.values.get((name, "ext.w"), np.zeros(6))
            if np.any(W) and (block.ext_frame != "inertial" or np.any(W[3:6])):
                raise ValueError(f"{name}: the external wrench has no potential energy")
            e -= W[0:3] @ r_P
    for name, block in system.blocks.items():
        if isinstance(block, LoopClosure):
            dx = kins[name].dx
            e += 0.5 * dx @ block.K @ dx
    return {"com": mc / m_tot, "p": p, "H": H, "energy": float(e)}


def center_of_mass(system: System, y) -> np.ndarray:
    """Centre of mass of all bodies, in ``R_i`` [m]."""
    return summary(system, y)["com"]


def momenta(system: System, y):
    """``(p, H_I)``: linear momentum and angular momentum about the origin ``I``, in ``R_i``."""
    s = summary(system, y)
    return s["p"], s["H"]


def energy(system: System, y) -> float:
    """Total mechanical energy [J]: kinetic + gravity + joint springs + loop-closure
    springs + the potential of constant external forces at floating bases given in
    ``R_i`` (e.g. buoyancy). A constant external torque has no potential: error."""
    return summary(system, y)["energy"]
