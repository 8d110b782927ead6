"""The frequencies of a uniform cantilever on a hub of radius zero spinning at ``Omega``, in the
rotating frame, from the rotating-beam equations solved by Chebyshev collocation: an
independent reference for the flexible bodies (no finite elements, no modes; nothing of
titop_fmu imported).

Flapwise (along the spin axis) and chordwise (in the plane of rotation), inextensible beam,
centrifugal tension ``N(x) = rhoA Omega^2 (L^2 - x^2) / 2``:

    EI w'''' - (N w')' = omega^2 rhoA w                      (flapwise)
    EI v'''' - (N v')' - rhoA Omega^2 v = omega^2 rhoA v     (chordwise)

with ``w(0) = w'(0) = 0``, ``w''(L) = 0``, ``EI w'''(L) - N(L) w'(L) = 0`` (and the same for
``v``). The boundary rows replace the first and last two collocation rows; the eigenvalues of
the pencil that stay finite are the ``omega^2``.
"""

import numpy as np
from scipy.linalg import eig


def chebyshev(n):
    """Chebyshev points on [-1, 1] (from 1 down to -1) and the differentiation matrix."""
    k = np.arange(n + 1)
    x = np.cos(np.pi * k / n)
    c = np.where((k == 0) | (k == n), 2.0, 1.0) * (-1.0) ** k
    X = np.tile(x, (n + 1, 1)).T
    D = np.outer(c, 1 / c) / (X - X.T + np.eye(n + 1))
    D -= np.diag(D.sum(axis=1))
    return x, D


def frequencies(L, EI, rhoA, Omega, chordwise=False, n=48, count=3):
    """The first ``count`` frequencies [rad/s] of the flapwise (or chordwise) motion."""
    xi, D = chebyshev(n)
    x = L * (1 - xi) / 2                                   # x = 0 at xi = 1 (the clamp)
    D1 = -2.0 / L * D
    D2, D3, D4 = D1 @ D1, D1 @ D1 @ D1, D1 @ D1 @ D1 @ D1
    N = rhoA * Omega ** 2 * (L ** 2 - x ** 2) / 2
    A = EI * D4 - D1 @ (np.diag(N) @ D1)
    if chordwise:
        A -= rhoA * Omega ** 2 * np.eye(n + 1)
    B = rhoA * np.eye(n + 1)
    clamp, tip = 0, n
    rows = [(clamp, np.eye(n + 1)[clamp]), (clamp + 1, D1[clamp]),
            (tip, D2[tip]), (tip - 1, EI * D3[tip] - N[tip] * D1[tip])]
    for r, v in rows:
        A[r], B[r] = v, 0.0
    lam = eig(A, B, right=False)
    lam = np.sort(lam[np.isfinite(lam)].real)
    lam = lam[lam > -np.inf]
    return np.sqrt(np.abs(lam[:count])) * np.sign(lam[:count])
