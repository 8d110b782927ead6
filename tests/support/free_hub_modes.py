"""The closed form of a rigid hub free in the plane with two equal Euler-Bernoulli cantilevers
from its centre along +x and -x (the free-floating spacecraft of examples/free_floating_hub.toml):
the bending modes that turn the hub (antisymmetric) and those that move it (symmetric).

Each beam's deflection ``y(x) = a1 cosh bx + a2 sinh bx + a3 cos bx + a4 sin bx`` with
``b^4 = rhoA omega^2 / EI``, free at its tip (``y''(L) = y'''(L) = 0``), and at the root:

* rotation (the hub's angle psi): ``y(0) = 0``, ``y'(0) = psi`` and the hub's equation
  ``-J omega^2 psi = 2 EI y''(0)`` (the two beams' root moments);
* translation (the hub's displacement Y): ``y'(0) = 0``, ``y(0) = Y`` and
  ``-m omega^2 Y = -2 EI y'''(0)`` (the two beams' root shear forces).

The frequencies are the roots of the 4 x 4 determinant of these conditions."""

import numpy as np
from scipy.optimize import brentq

#: the beam of the examples (Simo & Vu-Quoc's): L [m], EI [N m^2], rhoA [kg/m]
BEAM = {"length": 10.0, "EI": 1.4e4, "rhoA": 1.2}


def determinant(omega, kind, hub, length, EI, rhoA):
    """The determinant of the boundary conditions at ``omega`` [rad/s]; ``hub``: the hub's
    inertia about its centre (``kind = "rotation"``) or its mass (``"translation"``)."""
    b = (rhoA * omega * omega / EI) ** 0.25
    c, s, C, S = np.cosh(b * length), np.sinh(b * length), np.cos(b * length), np.sin(b * length)
    y0, y1 = np.array([1.0, 0, 1, 0]), b * np.array([0.0, 1, 0, 1])
    y2, y3 = b**2 * np.array([1.0, 0, -1, 0]), b**3 * np.array([0.0, 1, 0, -1])
    tip = [b**2 * np.array([c, s, -C, -S]), b**3 * np.array([s, c, S, -C])]
    if kind == "rotation":
        root = [y0, -hub * omega**2 * y1 - 2 * EI * y2]
    else:
        root = [y1, -hub * omega**2 * y0 + 2 * EI * y3]
    return np.linalg.det(np.array(root + tip))


def hub_beam_frequencies(kind, hub, count, beam=BEAM, samples=20000):
    """The first ``count`` frequencies [rad/s] of the ``kind`` family (bracketed on a grid up to
    twice the clamped beam's ``count``-th frequency, refined by Brent's method)."""
    scale = np.sqrt(beam["EI"] / (beam["rhoA"] * beam["length"] ** 4))
    grid = np.linspace(0.2 * scale, 2 * ((count - 0.5) * np.pi) ** 2 * scale, samples)
    f = [determinant(w, kind, hub, **beam) for w in grid]
    roots = [brentq(determinant, grid[i], grid[i + 1], args=(kind, hub, *beam.values()), xtol=1e-13, rtol=1e-14)
             for i in range(len(grid) - 1) if np.sign(f[i]) != np.sign(f[i + 1])]
    return np.array(roots[:count])
