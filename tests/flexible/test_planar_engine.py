"""The planar geometrically exact beam engine (validation/engines/planar_beam.py), the reference
of the spin-up beam and of the free-floating spacecraft, checked on its own: its small-deflection
limit against the clamped-free Euler-Bernoulli frequencies (beta_n L), and its internal forces the
gradient of its strain energy."""

import numpy as np
import pytest

from validation.engines.planar_beam import Beam, BeamMesh, Hub

BETA_L = np.array([1.87510407, 4.69409113, 7.85475744, 10.99554073])
BEAM = Beam(length=10.0, EA=2.8e7, EI=1.4e4, rhoA=1.2)


def stiffness(mesh, h=1e-6):
    """d f / d Q at the straight reference, by central differences of the internal forces."""
    K = np.zeros((mesh.nq, mesh.nq))
    for j in range(mesh.nq):
        e = np.zeros(mesh.nq)
        e[j] = h
        K[:, j] = (mesh.internal_force(mesh.QX + e) - mesh.internal_force(mesh.QX - e)) / (2 * h)
    return K


@pytest.mark.parametrize("linear", [False, True])
def test_small_deflections_give_the_clamped_free_frequencies(linear):
    """The bending frequencies of the tangent model at rest within 1e-4 of beta_n L (the
    transverse ones: their modes move the tip along y; cubic Hermite elements, 20 of them)."""
    mesh = BeamMesh(BEAM, 20, linear=linear)
    f = mesh.free
    K, M = stiffness(mesh)[np.ix_(f, f)], mesh.M[np.ix_(f, f)]
    lam, V = np.linalg.eig(np.linalg.solve(M, K))
    order = np.argsort(lam.real)
    lam, V = lam.real[order], V.real[:, order]
    tip_y = np.flatnonzero(f == mesh.nq - 3)[0]
    tip_x = np.flatnonzero(f == mesh.nq - 4)[0]
    bending = np.abs(V[tip_y]) > np.abs(V[tip_x])
    exact = BETA_L ** 2 * np.sqrt(BEAM.EI / (BEAM.rhoA * BEAM.length ** 4))
    w = np.sqrt(lam[bending][:4])
    np.testing.assert_allclose(w, exact, rtol=1e-4)
    assert np.all(w >= exact * (1 - 1e-9))                      # a conforming model: from above


def test_internal_forces_are_the_gradient_of_the_strain_energy():
    """At a large deflection (a quarter turn of bending), f(Q) = dU/dQ to 1e-6."""
    mesh = BeamMesh(BEAM, 6)
    rng = np.random.default_rng(3)
    Q = mesh.QX.copy()
    s = np.linspace(0, BEAM.length, 7)
    Q[1::4] += 0.08 * s ** 2                                   # y = 0.08 s^2, slope 0.16 s
    Q[3::4] += 0.16 * s
    Q += 1e-3 * rng.standard_normal(mesh.nq)
    g = np.array([(mesh.strain_energy(Q + 1e-6 * e) - mesh.strain_energy(Q - 1e-6 * e)) / 2e-6
                  for e in np.eye(mesh.nq)])
    np.testing.assert_allclose(mesh.internal_force(Q), g, rtol=1e-6, atol=1e-6 * np.max(np.abs(g)))

