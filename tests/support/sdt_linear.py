"""SDT's linear TITOP model of a tree of rigid bodies at a null equilibrium (no gravity, no
velocity, joints at zero), assembled from the multi-port rigid body (shared SDT block
"Multi port rigid body") and linear joint models, independently of the non-linear code
(none of titop_fmu is imported here).

Each body is described by a dict: ``mass``, ``inertia`` (at the centre of mass, body
frame), ``com`` (``[PB]``, from its port point P), ``children`` (``[PC_i]``), and for a
body with a parent: ``parent`` (index), ``port`` (child index at the parent), ``joint``
(``"welded"``, ``"revolute"``, ``"prismatic"``), ``axis`` (body frame), ``mount`` (3-2-1
Euler angles of the body frame w.r.t. the parent's), ``k``, ``d``. Body 0 is a free base.

Linear model of each body, the SDT way, all projected in the body frame:

* the multi-port rigid body: ``W_P = D_P x''_P`` with ``D_P = tau_BP^T diag(m 1, I_B) tau_BP``,
  and every point moving rigidly, ``x''_C = tau_CP x''_P``; wrenches transported by
  ``W_P = tau_CP^T W_C``;
* a joint at P between the parent's child point C and the body: ``x''_P = R^T tau_CPp
  x''_Pp + s qdd`` (``R`` the mounting, ``s = [0; r]`` revolute, ``[t; 0]`` prismatic), and
  the effort along ``s`` of the wrench the parent applies, ``s^T (-R^T W) = -k q - d qd +
  u`` (``W``: the wrench the body applies on its parent at C, in the parent's frame).

These equations, written for all bodies at once, are a static linear system in the
accelerations, joint accelerations and interface wrenches; its solution for the columns
of the states and inputs gives ``A`` and ``B`` in the states ``[base twist, base position,
base rotation vector, (q, qd) per joint]`` (the base's at the identity attitude) and the
inputs ``[base external wrench at P (6), joint efforts]``: ``sdt_flexible.linear_model``,
which assembles flexible bodies too.
"""

import numpy as np


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def tau(r):
    """``tau_CP`` for ``r = CP``: ``x''_C = tau x''_P``."""
    t = np.eye(6)
    t[0:3, 3:6] = skew(r)
    return t


def dcm(euler):
    phi, theta, psi = euler
    Rx = np.array([[1, 0, 0], [0, np.cos(phi), -np.sin(phi)], [0, np.sin(phi), np.cos(phi)]])
    Ry = np.array([[np.cos(theta), 0, np.sin(theta)], [0, 1, 0], [-np.sin(theta), 0, np.cos(theta)]])
    Rz = np.array([[np.cos(psi), -np.sin(psi), 0], [np.sin(psi), np.cos(psi), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def multiport_D(body):
    """``D_P = tau_BP^T D_B tau_BP`` (the SDT multi-port rigid body's inverse dynamic model)."""
    D_B = np.zeros((6, 6))
    D_B[0:3, 0:3] = body["mass"] * np.eye(3)
    D_B[3:6, 3:6] = np.asarray(body["inertia"], dtype=float)
    t = tau(-np.asarray(body["com"], dtype=float))          # BP = -PB
    return t.T @ D_B @ t
