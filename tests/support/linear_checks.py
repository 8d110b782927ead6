"""Oracles for linear models: the matrices by finite differences of the NumPy blocks
(:func:`fd_model`), and eigenvalue comparison (:func:`compare_eigenvalues`).

The finite differences perturb the minimal coordinates as their definition says, written
here again: a base's twist and position additively, its attitude ``P = P0 e^{(*phi)}``
(``q0 (x) [cos |phi|/2, sin |phi|/2 phi/|phi|]``), joints additively; and the attitude rate
is the co-rotating chart's, ``phidot = J_r(phi)^-1 (omega - e^{-(*phi)} omega0)``
(``omega0`` the operating body rate), with ``J_r^-1`` in closed form, and the position's
from the reference moving on at ``v0``, ``rhodot = d[IP]/dt - P0 v0 - (P0 omega0) x rho``."""

import numpy as np

from titop_fmu.blocks import FloatingBase, ImposedMotionBase, PrismaticBody, RevoluteBody
from titop_fmu.cosim.names import port_of
from titop_fmu.titop.records import inertial, inertial_entry


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _expm3(phi):
    a = np.linalg.norm(phi)
    if a == 0:
        return np.eye(3)
    K = _skew(phi / a)
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K


def _jr_inv(phi):
    a = np.linalg.norm(phi)
    S = _skew(phi)
    if a < 1e-8:
        return np.eye(3) + 0.5 * S + S @ S / 12.0
    return np.eye(3) + 0.5 * S + (1 / a ** 2 - (1 + np.cos(a)) / (2 * a * np.sin(a))) * S @ S


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def layout(system):
    """``[(block, native slice, kind)]`` with kind ``"base"`` (12 minimal), ``"joint"`` (2)."""
    out = []
    for n in system.plan().order:
        b = system.blocks[n]
        if isinstance(b, (FloatingBase, ImposedMotionBase)):
            out.append((n, system.state_slice(n), "base"))
        elif isinstance(b, (RevoluteBody, PrismaticBody)):
            out.append((n, system.state_slice(n), "joint"))
    return out


def perturbed(system, y0, dx):
    """The state ``y0`` moved by the minimal coordinates ``dx``."""
    y, k = np.array(y0, dtype=float), 0
    for _, s, kind in layout(system):
        if kind == "base":
            y[s.start:s.start + 9] += dx[k:k + 9]
            phi = dx[k + 9:k + 12]
            a = np.linalg.norm(phi)
            e = np.array([1.0, 0, 0, 0]) if a == 0 else np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * phi / a])
            y[s.start + 9:s.start + 13] = _qmul(y0[s.start + 9:s.start + 13], e)
            k += 12
        else:
            y[s] += dx[k:k + 2]
            k += 2
    return y


def rates(system, y0, dx):
    """The minimal coordinates' rates at ``y0 (+) dx`` (NumPy blocks)."""
    y = perturbed(system, y0, dx)
    ydot = system.rhs(0.0, y)
    out, k = [], 0
    for _, s, kind in layout(system):
        if kind == "base":
            phi, rho = dx[k + 9:k + 12], dx[k + 6:k + 9]
            omega, omega0, v0 = y[s.start + 3:s.start + 6], y0[s.start + 3:s.start + 6], y0[s.start:s.start + 3]
            P0 = _dcm(y0[s.start + 9:s.start + 13])
            rhodot = ydot[s.start + 6:s.start + 9] - P0 @ v0 - np.cross(P0 @ omega0, rho)
            out += [ydot[s.start:s.start + 6], rhodot, _jr_inv(phi) @ (omega - _expm3(-phi) @ omega0)]
            k += 12
        else:
            out.append(ydot[s])
            k += 2
    return np.concatenate(out)


def outputs(system, y0, dx, names):
    """The outputs ``names`` (``block.port[k]``, or an inertial quantity's component
    ``block.com.position[k]``, ``block.dcm[k]``: from the block's motion at its port on the
    NumPy blocks) at ``y0 (+) dx`` (NumPy blocks)."""
    y = perturbed(system, y0, dx)
    o, (kins, _) = system.outputs(y), system.evaluate(y)
    vals = []
    for name in names:
        block, _, var = name.partition(".")
        entry = inertial_entry(name, block, system.blocks[block], "")
        if entry is not None:
            vals.append(inertial(entry.quantity, kins[block].m_A, entry.PX)[entry.select[0]])
            continue
        port, k = port_of(var)
        v = np.atleast_1d(o[block][port])
        vals.append(v[k - 1] if k else v[0])
    return np.array(vals)


def fd_model(system, y0, inputs, output_names, h=1e-5):
    """``(A, B, C, D)`` by fourth-order central differences of the NumPy blocks at ``y0`` and
    the system's input values; ``inputs``: ``[(name, (block, port, component))]`` (the
    system must hold a value for each)."""
    n = sum(12 if kind == "base" else 2 for _, _, kind in layout(system))

    def f(dx, du):
        for (_, (b, p, i)), v in zip(inputs, du):
            system.values[(b, p)][i] += v
        try:
            return np.concatenate([rates(system, y0, dx), outputs(system, y0, dx, output_names)])
        finally:
            for (_, (b, p, i)), v in zip(inputs, du):
                system.values[(b, p)][i] -= v

    m = len(inputs)
    cols = []
    for j in range(n + m):
        e = np.zeros(n + m)
        e[j] = h

        def g(s):
            return f(s * e[:n], s * e[n:])
        cols.append((8 * (g(1) - g(-1)) - (g(2) - g(-2))) / (12 * h))
    J = np.array(cols).T
    return J[:n, :n], J[:n, n:], J[n:, :n], J[n:, n:]


def compare_eigenvalues(ours, reference, zero=1e-6):
    """``(largest relative error of the non-zero eigenvalues, zeros in ours, zeros in the
    reference)``: each non-zero eigenvalue of ``ours`` matched with the nearest of the
    reference (one to one); zero: ``|lambda| <= zero max(1, |lambda|max)``."""
    ours, reference = np.asarray(ours), np.asarray(reference)
    tol = zero * max(1.0, np.max(np.abs(reference)))
    a, b = list(ours[np.abs(ours) > tol]), list(reference[np.abs(reference) > tol])
    worst = 0.0
    assert len(a) == len(b), f"{len(a)} non-zero eigenvalues against {len(b)}"
    for x in sorted(a, key=abs):
        j = int(np.argmin([abs(x - r) for r in b]))
        worst = max(worst, abs(x - b[j]) / abs(b[j]))
        b.pop(j)
    return worst, int(np.sum(np.abs(ours) <= tol)), int(np.sum(np.abs(reference) <= tol))


def _log3(R):
    """The rotation vector of the rotation matrix ``R`` (small to moderate angles)."""
    c = np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)
    a = np.arccos(c)
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return 0.5 * v if a < 1e-8 else a / (2 * np.sin(a)) * v


def _dcm(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def difference(system, y, y0, t=0.0):
    """The minimal coordinates of the state ``y`` at time ``t`` in the chart of the operating
    point ``y0`` (the inverse of :func:`perturbed`): the attitude relative to the reference
    ``P0 e^{t (*omega0)}`` turning at the operating body rate, the position from the reference
    ``[IP]_0 + int P_ref v0`` in the inertial frame turned with it, ``P0 P_ref^T (...)``."""
    out = []
    for _, s, kind in layout(system):
        if kind == "base":
            P0, v0, omega0 = _dcm(y0[s.start + 9:s.start + 13]), y0[s.start:s.start + 3], y0[s.start + 3:s.start + 6]
            ref = P0 @ _expm3(t * omega0)
            a, K = np.linalg.norm(omega0), _skew(omega0)
            integral = t * np.eye(3) if a == 0 else \
                t * np.eye(3) + (1 - np.cos(a * t)) / a ** 2 * K + (a * t - np.sin(a * t)) / a ** 3 * K @ K
            r_ref = y0[s.start + 6:s.start + 9] + P0 @ integral @ v0
            rho = P0 @ ref.T @ (y[s.start + 6:s.start + 9] - r_ref)
            out += [y[s.start:s.start + 6] - y0[s.start:s.start + 6], rho,
                    _log3(ref.T @ _dcm(y[s.start + 9:s.start + 13]))]
        else:
            out.append(y[s] - y0[s])
    return np.concatenate(out)
