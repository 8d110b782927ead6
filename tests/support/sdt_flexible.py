"""SDT's linear TITOP model of a tree of rigid and flexible bodies at a null equilibrium (no
gravity, no velocity, joints and modes at zero), assembled from the SDT blocks "Multi port
rigid body" and "flexible body" (the linear flexible TITOP model of Chebbi et al. 2017 and
Alazard et al. 2023: cantilever modes, modal participation factors, residual mass) and linear
joints, independently of the non-linear code (none of titop_fmu is imported here).

Bodies as in ``sdt_linear`` (``mass``, ``inertia``, ``com``, ``children``, ``parent``, ``port``,
``joint``, ``axis``, ``mount``, ``k``, ``d``; body 0 a free base); a flexible body has instead
``modal``: a dict with ``mass`` (``D_P``, 6 x 6), ``L`` (n x 6), ``omega``, ``zeta`` (n), and
``phi``, ``psi`` (k x 3 x n) at its children, in order (``children`` its nodes).

The SDT flexible body, its N-port model at P, all in the body frame (``Phi_C = [phi_C;
psi_C]``, 6 x n, ``K = diag(omega^2)``, ``D = diag(2 zeta omega)``):

    etaddot = -D etadot - K eta - L x''_P + sum_C Phi_C^T W_C
    W_P     = (D_P - L^T L) x''_P - L^T (D etadot + K eta) + sum_C (L^T Phi_C^T - tau_CP^T) W_C
    x''_C   = tau_CP x''_P + Phi_C etaddot

``W_P`` the wrench the parent applies at P, ``W_C`` the wrenches the children apply at the
nodes. States ``[base twist (6), base position (3), base rotation vector (3), (q, qd) per
joint, (eta, etadot) per flexible body]``; inputs ``[base external wrench at P (6), joint
efforts]``.
"""

import numpy as np

from sdt_linear import dcm, multiport_D, tau


def linear_model(bodies):
    """``(A, B)`` of the tree ``bodies`` at its null equilibrium (module docstring)."""
    n = len(bodies)
    joints = [i for i in range(1, n) if bodies[i]["joint"] != "welded"]
    flex = [i for i in range(n) if "modal" in bodies[i]]
    nm = {i: len(bodies[i]["modal"]["omega"]) for i in flex}
    jindex = {i: k for k, i in enumerate(joints)}
    nj = len(joints)
    # unknowns: a_i (6 each), qdd, etaddot (per flexible body), W_i (6 per non-base body)
    na, ne = 6 * n, sum(nm.values())
    e_at, k = {}, 6 * n + nj
    for i in flex:
        e_at[i] = slice(k, k + nm[i])
        k += nm[i]
    N = na + nj + ne + 6 * (n - 1)
    # states [(q, qd) per joint, (eta, etadot) per flexible body]; then inputs
    s_at, k = {}, 2 * nj
    for i in flex:
        s_at[i] = (slice(k, k + nm[i]), slice(k + nm[i], k + 2 * nm[i]))
        k += 2 * nm[i]
    ns_int = k
    ncol = ns_int + 6 + nj

    def a(i):
        return slice(6 * i, 6 * i + 6)

    def W(i):
        return slice(na + nj + ne + 6 * (i - 1), na + nj + ne + 6 * i)

    def mount(b):
        Rm = np.zeros((6, 6))
        Rm[0:3, 0:3] = Rm[3:6, 3:6] = dcm(b["mount"])
        return Rm

    M, R, row = np.zeros((N, N)), np.zeros((N, ncol)), 0
    for i, b in enumerate(bodies):
        kids = [(j, c) for j, c in enumerate(bodies) if j and c["parent"] == i]
        if i in flex:                                  # the SDT flexible body
            md = b["modal"]
            L, K, Dm = np.asarray(md["L"]), np.diag(np.asarray(md["omega"]) ** 2), \
                np.diag(2 * np.asarray(md["zeta"]) * np.asarray(md["omega"]))
            Phi = [np.vstack([md["phi"][c["port"]], md["psi"][c["port"]]]) for _, c in kids]
            # W_P = D_res a - L^T (D etadot + K eta) + sum (L^T Phi^T - tau^T) W_C, W_P = -R^T W_i
            M[row:row + 6, a(i)] = np.asarray(md["mass"]) - L.T @ L
            for (j, c), P in zip(kids, Phi):
                PC = np.asarray(b["children"][c["port"]], dtype=float)
                M[row:row + 6, W(j)] += L.T @ P.T - tau(-PC).T
            se, sed = s_at[i]
            R[row:row + 6, se] = L.T @ K
            R[row:row + 6, sed] = L.T @ Dm
        else:
            M[row:row + 6, a(i)] = multiport_D(b)
            for j, c in kids:
                PC = np.asarray(b["children"][c["port"]], dtype=float)
                M[row:row + 6, W(j)] -= tau(-PC).T
        if i == 0:
            R[row:row + 6, ns_int:ns_int + 6] = np.eye(6)
        else:
            M[row:row + 6, W(i)] += mount(b).T
        row += 6
        if i in flex:                                  # etaddot + L a - sum Phi^T W_C = -D etadot - K eta
            md = b["modal"]
            ei = e_at[i]
            M[row:row + nm[i], ei] = np.eye(nm[i])
            M[row:row + nm[i], a(i)] = np.asarray(md["L"])
            for j, c in kids:
                P = np.vstack([md["phi"][c["port"]], md["psi"][c["port"]]])
                M[row:row + nm[i], W(j)] -= P.T                # W_C = W_j (the parent's frame)
            se, sed = s_at[i]
            R[row:row + nm[i], se] = -np.diag(np.asarray(md["omega"]) ** 2)
            R[row:row + nm[i], sed] = -np.diag(2 * np.asarray(md["zeta"]) * np.asarray(md["omega"]))
            row += nm[i]
        if i == 0:
            continue
        # the joint: a_i = R^T (tau_CPp a_parent + Phi_C etaddot_parent) + s qdd
        p = bodies[b["parent"]]
        PC = np.asarray(p["children"][b["port"]], dtype=float)
        Rm = mount(b)
        M[row:row + 6, a(i)] = np.eye(6)
        M[row:row + 6, a(b["parent"])] = -Rm.T @ tau(-PC)
        if "modal" in p:
            P = np.vstack([p["modal"]["phi"][b["port"]], p["modal"]["psi"][b["port"]]])
            M[row:row + 6, e_at[b["parent"]]] = -Rm.T @ P
        if i in jindex:
            axis = np.asarray(b["axis"], dtype=float)
            axis = axis / np.linalg.norm(axis)
            s = np.concatenate([np.zeros(3), axis]) if b["joint"] == "revolute" else np.concatenate([axis, np.zeros(3)])
            M[row:row + 6, na + jindex[i]] = -s
            row += 6
            M[row, W(i)] = -s @ Rm.T                   # s^T (-R^T W_i) = -k q - d qd + u
            kj = jindex[i]
            R[row, 2 * kj] = -b.get("k", 0.0)
            R[row, 2 * kj + 1] = -b.get("d", 0.0)
            R[row, ns_int + 6 + kj] = 1.0
            row += 1
        else:
            row += 6
    assert row == N
    X = np.linalg.solve(M, R)
    ns = 12 + ns_int
    A, B = np.zeros((ns, ns)), np.zeros((ns, 6 + nj))
    A[6:9, 0:3] = np.eye(3)
    A[9:12, 3:6] = np.eye(3)
    rows = [(r, X[6 * 0 + r]) for r in range(6)]                       # base accelerations
    rows += [(12 + 2 * kj + 1, X[na + kj]) for kj in range(nj)]       # qdd
    for i in flex:
        se, sed = s_at[i]
        rows += [(12 + sed.start + m, X[e_at[i].start + m]) for m in range(nm[i])]
    for dest, x in rows:
        A[dest, 12:12 + ns_int] = x[:ns_int]
        B[dest] = x[ns_int:]
    for kj in range(nj):
        A[12 + 2 * kj, 12 + 2 * kj + 1] = 1.0                          # q' = qd
    for i in flex:
        se, sed = s_at[i]
        A[12 + se.start:12 + se.stop, 12 + sed.start:12 + sed.stop] = np.eye(nm[i])
    return A, B
