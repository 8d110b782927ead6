"""The rotating cantilever: Simo's beam on a hub spinning at Omega about z, its frequencies in
the rotating frame against the rotating-beam equation solved by Chebyshev collocation
(tests/support/rotating_beam.py, no finite elements, no modes): the flapwise ones stiffen
(Southwell), the chordwise one is the flapwise one softened by Omega^2; without stiffening the
chordwise mode goes unstable once Omega passes the first clamped frequency."""

import numpy as np
import pytest
from flexible_systems import SIMO, spinning_beam
from rotating_beam import frequencies

from titop_fmu.linear import linearize

MODES = 10


def plane_frequencies(Omega, stiffening=True):
    """``(chordwise, flapwise, eigenvalues)``: the modal block of the exact linear model about the
    steady spin (linearize: the C kernel on dual numbers), the modes along y (chordwise) and
    along z (flapwise) taken apart (the beam's modes alternate y, z)."""
    model = linearize(spinning_beam(Omega, MODES, stiffening))
    idx = [i for i, x in enumerate(model.states) if x.startswith("beam.")]
    A = model.A[np.ix_(idx, idx)]
    out = []
    for plane in (0, 1):
        keep = [i for i in range(2 * MODES) if (i % MODES) % 2 == plane]
        other = [i for i in range(2 * MODES) if i not in keep]
        assert np.max(np.abs(A[np.ix_(keep, other)])) < 1e-6           # the planes do not couple
        lam = np.linalg.eigvals(A[np.ix_(keep, keep)])
        out.append(np.sort(np.abs(lam[lam.imag > 1e-9].imag)))
    return out[0], out[1], np.linalg.eigvals(A)


@pytest.mark.parametrize("Omega", [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
def test_flapwise_stiffens_and_chordwise_softens_by_omega_squared(Omega):
    chord, flap, _ = plane_frequencies(Omega)
    L, EI, rhoA = SIMO["length"], SIMO["EIy"], SIMO["rhoA"]
    np.testing.assert_allclose(flap[:2], frequencies(L, EI, rhoA, Omega)[:2], rtol=1e-3)
    np.testing.assert_allclose(chord[0], frequencies(L, EI, rhoA, Omega, chordwise=True)[0], rtol=1e-3)
    if Omega:
        assert flap[0] > np.hypot(3.79773055, Omega) > chord[0]     # Southwell's coefficient is above 1


def test_the_chordwise_mode_is_the_flapwise_one_less_omega_squared():
    """omega_c^2 = omega_f^2 - Omega^2 (uniform beam, EIy = EIz): in the model itself."""
    chord, flap, _ = plane_frequencies(6.0)
    assert chord[0] ** 2 == pytest.approx(flap[0] ** 2 - 36.0, rel=1e-9)


def test_without_stiffening_the_chordwise_mode_goes_unstable_above_the_first_frequency():
    """omega_1 = 3.7977 rad/s: at 3.5 rad/s every eigenvalue on the imaginary axis, at 4.0 rad/s
    one with a positive real part (omega^2 = omega_1^2 - Omega^2 < 0)."""
    *_, lam = plane_frequencies(3.5, stiffening=False)
    assert np.max(lam.real) < 1e-6
    *_, lam = plane_frequencies(4.0, stiffening=False)
    assert np.max(lam.real) == pytest.approx(np.sqrt(16.0 - 3.79773055 ** 2), rel=1e-4)


def test_a_family_along_the_spin_rate_is_the_campbell_diagram():
    """The LPV family along the hub's spin rate (the state hub.w_z held, the beam's deflection
    trimmed at each value): its flapwise and chordwise frequencies at every grid point are the
    rotating-beam equation's, to 1e-3."""
    from titop_fmu.linear.lpv import family
    grid = np.linspace(0.0, 10.0, 6)
    fam = family(spinning_beam(0.0, MODES), "hub.w_z", grid, midpoints=False)
    L, EI, rhoA = SIMO["length"], SIMO["EIy"], SIMO["rhoA"]
    for Omega, model in zip(grid, fam.models):
        idx = [i for i, x in enumerate(model.states) if x.startswith("beam.")]
        lam = np.linalg.eigvals(model.A[np.ix_(idx, idx)])
        w = np.sort(np.abs(lam[lam.imag > 1e-9].imag))
        reference = np.sort(np.concatenate([frequencies(L, EI, rhoA, Omega)[:2],
                                            frequencies(L, EI, rhoA, Omega, chordwise=True)[:2]]))
        np.testing.assert_allclose(w[:4], reference, rtol=1e-3)
