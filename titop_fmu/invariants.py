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


def _bodies(system: System, y):
    """``(block, body, P_ai, r_P (R_i), twist at P (R_a))`` for every body block at ``y``."""
    kins, _ = system.evaluate(y)
    for name in system.plan().order:
        b = system.blocks[name]
        if hasattr(b, "body"):
            k = kins[name]
            yield name, b, b.body, k.P_ai, k.P_ai @ k.m_A[12:15], k.m_A[6:12], kins


def center_of_mass(system: System, y) -> np.ndarray:
    """Centre of mass of all bodies, in ``R_i`` [m]."""
    m_tot, mc = 0.0, np.zeros(3)
    for _, _, body, P, r_P, _, _ in _bodies(system, y):
        m_tot += body.mass
        mc += body.mass * (r_P + P @ body.com)
    return mc / m_tot


def momenta(system: System, y):
    """``(p, H_I)``: linear momentum and angular momentum about the origin ``I``, in ``R_i``."""
    p, H = np.zeros(3), np.zeros(3)
    for _, _, body, P, r_P, tw, _ in _bodies(system, y):
        v, w = tw[0:3], tw[3:6]
        r_B = r_P + P @ body.com
        mv = body.mass * (P @ (v + np.cross(w, body.com)))
        p += mv
        H += np.cross(r_B, mv) + P @ (body.inertia @ w)
    return p, H


def energy(system: System, y) -> float:
    """Total mechanical energy [J]: kinetic + gravity + joint springs + loop-closure
    springs + the potential of constant external forces at floating bases given in
    ``R_i`` (e.g. buoyancy). A constant external torque has no potential: error."""
    e = 0.0
    kins = None
    for name, block, body, P, r_P, tw, kins in _bodies(system, y):
        e += 0.5 * tw @ body.D_P @ tw
        e -= body.mass * block.g @ (r_P + P @ body.com)
        if isinstance(block, _JointBody):
            e += 0.5 * block.k * y[system.state_slice(name)][0] ** 2
        if isinstance(block, FloatingBase):
            w = system.values.get((name, "ext.w"), np.zeros(6))
            if block.ext_frame != "inertial" or np.any(w[3:6]):
                if np.any(w):
                    raise ValueError(f"{name}: the external wrench has no potential energy")
            e -= w[0:3] @ r_P
    if kins is None:
        kins, _ = system.evaluate(y)
    for name, block in system.blocks.items():
        if isinstance(block, LoopClosure):
            dx = kins[name].dx
            e += 0.5 * dx @ block.K @ dx
    return float(e)
