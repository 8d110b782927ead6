"""A free-floating hub with two flexible appendages (a wing welded on, a rigid mass at its
tip; a boom on a hinge with a spring), spinning and vibrating: the flexible bodies' equations
are Hamel's of one Lagrangian (docs/flexible-bodies.md, eq. (F9)), so the energy and the
momenta are constant to the integrator's accuracy, with stiffening or without, with gravity
(then the energy only); a torque on the hub changes the angular momentum, which stays
constant once it ends."""

import numpy as np
import pytest
from flexible_systems import appendages

from titop_fmu import invariants


def _drift(s, t=2.0):
    tr = s.simulate(t, t / 8, rtol=1e-12, atol=1e-12)
    assert tr.kernel == "c"
    rows = [invariants.summary(s, y) for y in tr.y]
    e = np.array([r["energy"] for r in rows])
    H, p = np.array([r["H"] for r in rows]), np.array([r["p"] for r in rows])
    return (np.max(np.abs(e - e[0])) / abs(e[0]), np.max(np.abs(H - H[0])) / np.max(np.abs(H[0])),
            np.max(np.abs(p - p[0])) / np.max(np.abs(p[0])), tr)


@pytest.mark.parametrize("stiffening", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_energy_and_momenta_are_constant(stiffening):
    de, dH, dp, tr = _drift(appendages(stiffening))
    assert de < 1e-9 and dH < 1e-9 and dp < 1e-9
    assert np.ptp(tr.y[:, 13]) > 1e-4                            # the wing vibrates


def test_with_gravity_the_energy_is_constant():
    de, dH, *_ = _drift(appendages(gravity=(0.0, -9.81, 0.0)))
    assert de < 1e-9 and dH > 1e-3


def test_after_a_torque_on_the_hub_the_angular_momentum_stays_constant():
    s = appendages()
    H0 = invariants.summary(s, s.initial_state())["H"]
    s.set_input("hub.ext.w", [0, 0, 0, 20.0, -10.0, 30.0])        # body frame
    first = s.simulate(0.5, 0.1, rtol=1e-12, atol=1e-12)
    s.set_input("hub.ext.w", np.zeros(6))
    tr = s.simulate(2.0, 0.25, rtol=1e-12, atol=1e-12, y0=first.y[-1])
    H = np.array([invariants.summary(s, y)["H"] for y in tr.y])
    assert np.max(np.abs(H - H[0])) <= 1e-8 * np.linalg.norm(H[0])
    assert np.linalg.norm(H[0] - H0) > 0.1 * np.linalg.norm(H0)     # the torque did change it
