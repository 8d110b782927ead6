"""Physical invariants of a system of TITOP bodies: centre of mass, momenta, energy.

They are computed from each body's motion vector ``m_P`` at its port point (the kinematic
stage of the blocks, or the recorded outputs), independently of the loop solution, and are
what the validation checks: with zero net external force the centre of mass stays put;
without damping the energy is constant; with damping it never increases.

One body's share (:func:`body_totals`), with ``P = P_b/i(Theta)``, ``[IP]_Ri = P [IP]_Rb``,
the twist ``[v_P; omega]`` at ``P`` (body frame) and the centre of mass ``B``:

* ``r_B = [IP]_Ri + P [PB]``; linear momentum ``p = m P (v_P + omega x PB)``;
* angular momentum about the origin ``I`` of ``R_i``: ``H_I = r_B x p + P I_B omega``;
* kinetic energy ``T = 1/2 [v_P; omega]^T D_P [v_P; omega]`` (``D_P`` the mass matrix at ``P``,
  eq. (4)); gravity's potential ``-m g . r_B``.

The system adds its springs (``1/2 k q^2`` in a joint, ``1/2 dx^T K dx`` in a loop closure)
and the potential of its constant loads (``-tau q`` of a constant joint effort, ``-F . [IP]_Ri``
of a constant force in ``R_i`` at a floating base). The work of anything else (torques at a
floating base, loads in a body frame or varying in time, dampers) is not a potential: it
changes the energy.

A flexible body's share (:func:`flexible_totals`) comes from its momenta at ``P`` and its
modal coordinates, eqs. (F17)-(F18) of docs/flexible-bodies.md.
"""

from __future__ import annotations

import numpy as np

from .blocks import FloatingBase, LoopClosure
from .blocks.joints import _JointBody
from .spatial import cross, dcm_from_euler
from .system import System

#: the layout of :func:`body_totals`: mass, first moment m r_B, p, H_I, kinetic and gravity energy
MASS, MOMENT, LINEAR, ANGULAR, KINETIC, GRAVITY = 0, slice(1, 4), slice(4, 7), slice(7, 10), 10, 11
SIZE = 12


def body_totals(body, gravity, m_P) -> np.ndarray:
    """``[m, m r_B, p, H_I, T, V_g]`` (12 numbers, in ``R_i``) of the rigid body ``body`` (its
    mass, inertia ``I_B``, ``[PB]`` and mass matrix ``D_P``) under ``gravity`` (``R_i``), from
    its motion vector ``m_P`` at ``P`` in its frame (the module docstring)."""
    m_P = np.asarray(m_P, dtype=float)
    P = dcm_from_euler(m_P[15:18])
    tw = m_P[6:12]
    v, w = tw[0:3], tw[3:6]
    r_B = P @ (m_P[12:15] + body.com)
    p = body.mass * (P @ (v + cross(w, body.com)))
    out = np.empty(SIZE)
    out[MASS] = body.mass
    out[MOMENT] = body.mass * r_B
    out[LINEAR] = p
    out[ANGULAR] = cross(r_B, p) + P @ (body.inertia @ w)
    out[KINETIC] = 0.5 * tw @ body.D_P @ tw
    out[GRAVITY] = -body.mass * np.asarray(gravity, dtype=float) @ r_B
    return out


def flexible_totals(body, gravity, k) -> np.ndarray:
    """:func:`body_totals` of the flexible body ``body`` from its kinematic stage ``k`` (the
    rigid-body momenta ``p_r = M_rr t + M_re etadot`` at ``P``, the first moment ``c`` of the
    deformed body, the modal coordinates): eqs. (F17), (F18). The strain energy
    ``1/2 eta^T K eta`` is counted in the kinetic slot with the modal kinetic energy."""
    P = k.P_ai
    r_P, tw = P @ k.m_A[12:15], k.m_A[6:12]
    r_B = r_P + P @ k.c / body.mass
    p = P @ k.p_r[0:3]
    out = np.empty(SIZE)
    out[MASS] = body.mass
    out[MOMENT] = body.mass * r_B
    out[LINEAR] = p
    out[ANGULAR] = cross(r_P, p) + P @ k.p_r[3:6]
    out[KINETIC] = (0.5 * tw @ k.p_r + 0.5 * k.etad @ (k.M_re.T @ tw + k.etad)
                    + 0.5 * body.K @ k.eta ** 2)
    out[GRAVITY] = -body.mass * np.asarray(gravity, dtype=float) @ r_B
    return out


def spring_energy(block, q) -> float:
    """``1/2 k q^2``: the energy of the spring inside a joint at ``q``."""
    return 0.5 * block.k * q * q


def closure_energy(block, dx) -> float:
    """``1/2 dx^T K dx``: the energy of a loop closure's spring at its relative pose ``dx``."""
    return 0.5 * dx @ block.K @ dx


def load_potential(force, r_P) -> float:
    """``-F . r_P``: the potential of a force ``F`` constant in ``R_i`` applied at ``r_P``."""
    return -float(np.asarray(force, dtype=float) @ r_P)


def summary(system: System, y) -> dict:
    """``com`` [m], ``p`` [kg m/s], ``H`` (about the origin, [kg m^2/s]), all in ``R_i``, and
    ``energy`` [J] at the state ``y`` (one evaluation of the system)."""
    kins, _ = system.evaluate(y)
    sums, e = np.zeros(SIZE), 0.0
    for name in system.plan().order:
        block = system.blocks[name]
        if not hasattr(block, "body"):
            continue
        m_A = kins[name].m_A
        if block.body.n_modes:
            sums += flexible_totals(block.body, block.g, kins[name])
        else:
            sums += body_totals(block.body, block.g, m_A)
        if isinstance(block, _JointBody):
            e += spring_energy(block, y[system.state_slice(name)][0])
        if isinstance(block, FloatingBase):
            W = system.values.get((name, "ext.w"), np.zeros(6))
            if np.any(W) and (block.ext_frame != "inertial" or np.any(W[3:6])):
                raise ValueError(f"{name}: the external wrench has no potential energy")
            e += load_potential(W[0:3], dcm_from_euler(m_A[15:18]) @ m_A[12:15])
    for name, block in system.blocks.items():
        if isinstance(block, LoopClosure):
            e += closure_energy(block, kins[name].dx)
    return {"com": sums[MOMENT] / sums[MASS], "p": sums[LINEAR], "H": sums[ANGULAR],
            "energy": float(e + sums[KINETIC] + sums[GRAVITY])}


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
