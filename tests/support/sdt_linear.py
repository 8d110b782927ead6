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
inputs ``[base external wrench at P (6), joint efforts]``.
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


def linear_model(bodies):
    """``(A, B)`` of the tree ``bodies`` at its null equilibrium (module docstring)."""
    n = len(bodies)
    joints = [i for i in range(1, n) if bodies[i]["joint"] != "welded"]
    jindex = {i: k for k, i in enumerate(joints)}
    nj = len(joints)
    # unknowns: a_i (6 per body), qdd (per joint), W_i (6 per non-base body: on its parent at C, parent frame)
    na = 6 * n
    nw = 6 * (n - 1)
    N = na + nj + nw

    def a(i):
        return slice(6 * i, 6 * i + 6)

    def W(i):
        return slice(na + nj + 6 * (i - 1), na + nj + 6 * i)

    M = np.zeros((N, N))
    # right-hand sides: columns [q (nj), qd (nj), base ext wrench (6), efforts (nj)]
    ncol = 3 * nj + 6
    R = np.zeros((N, ncol))
    row = 0
    for i, b in enumerate(bodies):
        D = multiport_D(b)
        # Newton-Euler of body i at P: D a_i = (wrench from the parent) + sum of children's wrenches at P
        M[row:row + 6, a(i)] = D
        for j, c in enumerate(bodies):
            if j and c["parent"] == i:
                PC = np.asarray(b["children"][c["port"]], dtype=float)
                M[row:row + 6, W(j)] -= tau(-PC).T                   # tau_CP^T W_j (CP = -PC)
        if i == 0:
            R[row:row + 6, 2 * nj:2 * nj + 6] = np.eye(6)             # the external wrench at P
        else:
            Rm = np.zeros((6, 6))
            Rm[0:3, 0:3] = Rm[3:6, 3:6] = dcm(b["mount"])
            M[row:row + 6, W(i)] += Rm.T                               # -(-R^T W_i) moved to the left
        row += 6
        if i == 0:
            continue
        # kinematics of the joint: a_i = R^T tau_CPp a_parent + s qdd
        p = bodies[b["parent"]]
        PC = np.asarray(p["children"][b["port"]], dtype=float)
        Rm = np.zeros((6, 6))
        Rm[0:3, 0:3] = Rm[3:6, 3:6] = dcm(b["mount"])
        M[row:row + 6, a(i)] = np.eye(6)
        M[row:row + 6, a(b["parent"])] = -Rm.T @ tau(-PC)
        if i in jindex:
            axis = np.asarray(b["axis"], dtype=float)
            axis = axis / np.linalg.norm(axis)
            s = np.concatenate([np.zeros(3), axis]) if b["joint"] == "revolute" else np.concatenate([axis, np.zeros(3)])
            M[row:row + 6, na + jindex[i]] = -s
            row += 6
            # the effort: s^T (-R^T W_i) = -k q - d qd + u
            M[row, W(i)] = -s @ Rm.T
            k = jindex[i]
            R[row, k] = -b.get("k", 0.0)
            R[row, nj + k] = -b.get("d", 0.0)
            R[row, 2 * nj + 6 + k] = 1.0
            row += 1
        else:
            row += 6
    assert row == N
    X = np.linalg.solve(M, R)                  # every unknown per column of [q, qd, ext wrench, efforts]
    acc_base = X[a(0)]
    qdd = X[na:na + nj]
    # states [v, w (6), r (3), rotvec (3), (q, qd) per joint]; inputs [ext wrench (6), efforts]
    ns = 12 + 2 * nj
    A = np.zeros((ns, ns))
    B = np.zeros((ns, 6 + nj))
    A[6:9, 0:3] = np.eye(3)                    # r' = v (identity attitude)
    A[9:12, 3:6] = np.eye(3)                   # rotvec' = w
    for name, rows in (("base", acc_base), ("joints", qdd)):
        for r_, k in enumerate(range(rows.shape[0])):
            dest = r_ if name == "base" else 12 + 2 * k + 1
            A[dest, 12:12 + 2 * nj:2] = rows[k, 0:nj]               # d/dq
            A[dest, 13:13 + 2 * nj:2] = rows[k, nj:2 * nj]           # d/dqd
            B[dest, :] = rows[k, 2 * nj:]
    for k in range(nj):
        A[12 + 2 * k, 13 + 2 * k] = 1.0                              # q' = qd
    return A, B
