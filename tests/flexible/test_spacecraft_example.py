"""examples/spacecraft_flexible.toml, a bus with two flexible solar-array wings and a flexible
antenna boom slewed by a torque, checked as a user runs it (``titop-fmu linearize``,
``simulate``, ``animate``) against what does not come from the non-linear model:

* at rest, the flexible frequencies of ``linearize`` are those of the free-free eigenproblem
  assembled by hand from each body's clamped modal data (the linear flexible TITOP model: the
  bus's rigid mass plus each appendage's, transported to its port, and each appendage's modal
  participation factors), the wing's clamped frequency is Euler-Bernoulli's, and its
  antisymmetric and symmetric modes, coupled with the bus's yaw and translation, are the
  one-mode closed forms ``w1 sqrt(J / (J - 2 L^2))`` and ``w1 sqrt(m / (m - 2 L^2))``;
* in the run, the angular momentum is the impulse of the torque at every sample (the
  momentum theorem, whatever the bodies' deformation), and zero once the torque has ended."""

import tomllib
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.linalg

from titop_fmu import invariants
from titop_fmu.cli import main
from titop_fmu.io import read_result
from titop_fmu.simulation import read_file
from titop_fmu.spatial import skew
from titop_fmu.titop import monolithic
from titop_fmu.titop.closedloop import ClosedLoop

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spacecraft_flexible.toml"
#: the torque: A sin(2 pi t / T) N m about the bus's z for T s
A, T = 30.0, 20.0


def plant():
    """The in-process system of the example (its time signal aside)."""
    return ClosedLoop(read_file(EXAMPLE).system).plant


def free_free(s):
    """``(frequencies [rad/s], M, port transforms)``: the undamped free-free eigenproblem of the
    bus and its appendages assembled from their modal data, ``M = [[M_rr, M_re], [M_re^T, 1]]``,
    ``K = diag(0, omega^2)``, each appendage's twist at its port ``[v + w x r; w]`` (no mount)."""
    bus = s.blocks["bus"].body
    M_rr, M_re, omega, moved = bus.D_P.copy(), [], [], {}
    for name, r in zip(("wing1", "wing2", "boom"), bus.children):
        assert not np.any(s.blocks[name].mount)
        d = s.blocks[name].body.data
        tau = np.eye(6)
        tau[0:3, 3:6] = -skew(r)
        M_rr += tau.T @ d.mass @ tau
        M_re.append(tau.T @ d.L.T)
        omega.append(d.omega)
        moved[name] = tau.T @ d.L.T
    M_re, omega = np.hstack(M_re), np.concatenate(omega)
    M = np.block([[M_rr, M_re], [M_re.T, np.eye(omega.size)]])
    lam = scipy.linalg.eigh(np.diag(np.concatenate([np.zeros(6), omega ** 2])), M, eigvals_only=True)
    return np.sqrt(lam[6:]), M_rr, moved


def test_linearize_at_rest_gives_the_hand_assembled_free_free_modes(tmp_path):
    assert main(["linearize", str(EXAMPLE), "--out", str(tmp_path / "sc.mat"), "--quiet"]) == 0
    ev = np.linalg.eigvals(scipy.io.loadmat(tmp_path / "sc.mat")["A"])
    assert np.sum(np.abs(ev) <= 1e-7) == 12                      # the free bus: 6 + 6 rigid states
    flexible = np.sort(ev.imag[ev.imag > 1e-6])
    s = plant()
    expected, _, _ = free_free(s)
    assert flexible.size == expected.size == 16                  # 6 + 6 + 4 modes
    np.testing.assert_allclose(flexible, expected, rtol=1e-10)
    assert np.max(np.abs(ev.real)) <= 1e-10 * np.max(np.abs(ev))  # no damping, no instability


def test_the_wing_modes_with_the_bus_are_the_one_mode_closed_forms():
    """The wing's first clamped mode (out of its plane, along x: EIy) is Euler-Bernoulli's
    ``1.8751^2 sqrt(EI / (rhoA l^4))`` to 1e-4; with the bus free it splits: the antisymmetric
    mode turns the bus (yaw inertia ``J``, the wing's yaw participation ``L``), the symmetric one
    moves it along x (mass ``m``). One mode per wing: the symmetric mode to 5e-5 (1.1e-5 here: the
    wings' higher modes move along x a little), the antisymmetric one to 2.5 % (the boom and the wings' higher modes also
    turn with the bus: 1.9 % here), both well above the clamped one."""
    beam = tomllib.loads(EXAMPLE.read_text())["units"]["wing1"]["flexible"]["beam"]
    w1 = 1.8751040687 ** 2 * np.sqrt(beam["EIy"] / (beam["rhoA"] * beam["length"] ** 4))
    s = plant()
    d = s.blocks["wing1"].body.data
    assert abs(d.omega[0] / w1 - 1) < 1e-4
    assert abs(d.phi[0, 0, 0]) > 0.99 * np.abs(d.phi[0, :, 0]).max()     # the tip moves along x
    freqs, M_rr, moved = free_free(s)
    J, m = M_rr[5, 5], M_rr[0, 0]
    Lz, Lx = moved["wing1"][5, 0], moved["wing1"][0, 0]
    assert np.allclose(moved["wing2"][[0, 5], 0], [-Lx, Lz])            # wing2's mode 1: the mirror image
    antisymmetric = d.omega[0] * np.sqrt(J / (J - 2 * Lz ** 2))
    symmetric = d.omega[0] * np.sqrt(m / (m - 2 * Lx ** 2))
    assert abs(freqs[0] / symmetric - 1) < 5e-5
    assert abs(freqs[1] / antisymmetric - 1) < 0.025
    assert freqs[1] > 1.35 * d.omega[0] and freqs[0] > 1.02 * d.omega[0]


@pytest.mark.slow
def test_the_slew_runs_and_the_angular_momentum_is_the_torques_impulse(tmp_path):
    out = tmp_path / "sc.csv"
    assert main(["simulate", str(EXAMPLE), "--out", str(out), "--quiet"]) == 0
    t, columns = read_result(out)
    assert t[-1] == 40.0 and all(np.all(np.isfinite(v)) for v in columns.values())
    assert 0.7 < columns["bus.euler[3]"][-1] < 0.82                      # turned by about 44 deg
    tip = columns["wing1.c1.u[1]"]
    assert 0.03 < np.max(np.abs(tip[t < T])) < 0.1                      # the wing bends during the slew
    # the wings bend the opposite ways, as the bus turns (not to rounding: the boom breaks the symmetry)
    assert np.max(np.abs(columns["wing2.c1.u[1]"] + tip)) < 0.02 * np.max(np.abs(tip))
    assert np.max(np.abs(tip[t > T])) > 1e-3                             # and vibrates after it
    tr, _ = monolithic.run(read_file(EXAMPLE).system, 30.0, 0.5)
    s = tr.system.plant
    k = s.initial_state().size
    H = np.array([invariants.summary(s, y[:k])["H"] for y in tr.y])
    impulse = A * T / (2 * np.pi) * (1 - np.cos(2 * np.pi * np.minimum(tr.t, T) / T))
    peak = A * T / np.pi
    assert np.max(np.abs(H[:, 0:2])) <= 1e-12 * peak
    assert np.max(np.abs(H[:, 2] - impulse)) <= 1e-11 * peak                 # 9e-16 measured
    assert np.max(np.abs(H[tr.t >= T])) <= 1e-12 * peak                   # none left once the torque ends

