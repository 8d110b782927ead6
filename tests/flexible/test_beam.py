"""The beam generator against closed forms (clamped-free Euler-Bernoulli bending in both
planes, torsion, stretch, a tip mass), its modal data's own identities, and the neutral
modal file: written, read back, and every bad field one error naming it."""

import numpy as np
import pytest
from flexible_systems import SIMO, simo_beam
from scipy.optimize import brentq

from titop_fmu.blocks import ModalData, ModalError
from titop_fmu.blocks.beam import LumpedMass, beam_modal_data, section

BETA_L = np.array([1.87510407, 4.69409113, 7.85475744, 10.99554073, 14.13716839])


def test_clamped_free_bending_frequencies_in_both_planes_within_1e_4():
    """The first five bending frequencies of each plane, EIy != EIz, against beta_n L
    (omega = (beta_n L)^2 sqrt(EI / (rhoA L^4))); two planes of different stiffness, so the
    modes are told apart by their plane."""
    L, rhoA, EIy, EIz = 4.0, 2.5, 900.0, 400.0
    d = beam_modal_data([section(dict(length=L, EA=1e9, EIy=EIy, EIz=EIz, GJ=1e7, rhoA=rhoA, rhoJ=1e-3))], 12,
                        elements=40, ports=[L])
    tip = d.phi[0]                                               # the tip's translations per mode
    in_z = np.abs(tip[2]) > np.abs(tip[1])                      # bending about y (EIy) deflects along z
    for EI, plane in ((EIy, in_z), (EIz, ~in_z)):
        exact = BETA_L ** 2 * np.sqrt(EI / (rhoA * L ** 4))
        np.testing.assert_allclose(d.omega[plane][:5], exact, rtol=1e-4)
    assert np.max(np.abs(d.omega[in_z][:5] / (BETA_L ** 2 * np.sqrt(EIy / (rhoA * L ** 4))) - 1)) > 1e-9  # FE


def test_equal_planes_give_one_mode_per_plane_in_order():
    """Simo's beam (EIy = EIz): each pair of equal frequencies is a mode along y then one along
    z, not a mixture (each family solved on its own)."""
    d = simo_beam()
    tip = d.phi[0]
    assert np.all(np.abs(tip[1, 0::2]) > 0.5) and np.all(tip[2, 0::2] == 0)
    assert np.all(np.abs(tip[2, 1::2]) > 0.5) and np.all(tip[1, 1::2] == 0)
    np.testing.assert_allclose(d.omega[0::2], d.omega[1::2], rtol=1e-9)


def test_torsion_and_stretch_frequencies():
    """omega_k = (2k - 1) pi / (2 L) sqrt(GJ / rhoJ) and sqrt(EA / rhoA): the first two of each
    (linear elements: their error falls as h^2, hence the finer mesh)."""
    L, GJ, rhoJ, EA, rhoA = 2.0, 50.0, 0.02, 3.0e4, 1.5
    d = beam_modal_data([section(dict(length=L, EA=EA, EIy=1e7, EIz=1e7, GJ=GJ, rhoA=rhoA, rhoJ=rhoJ))], 7,
                        elements=120, ports=[L])
    odd = np.array([1, 3])
    twist, stretch = np.abs(d.psi[0, 0]) > 1e-9, np.abs(d.phi[0, 0]) > 1e-9      # about and along the axis x
    np.testing.assert_allclose(d.omega[twist][:2], odd * np.pi / (2 * L) * np.sqrt(GJ / rhoJ), rtol=1e-4)
    np.testing.assert_allclose(d.omega[stretch][:2], odd * np.pi / (2 * L) * np.sqrt(EA / rhoA), rtol=1e-4)


def test_a_tip_mass_against_its_frequency_equation():
    """A cantilever with a point mass M at its tip: 1 + cos(bL) cosh(bL) + (M / (rhoA L)) bL
    (cos(bL) sinh(bL) - sin(bL) cosh(bL)) = 0, its first three roots; the mass is in D_P."""
    L, EI, rhoA, M = 3.0, 600.0, 2.0, 4.5
    d = beam_modal_data([section(dict(length=L, EA=1e10, EIy=EI, EIz=EI * 7, GJ=1e8, rhoA=rhoA, rhoJ=1e-4))], 6,
                        elements=40, ports=[L], masses=[LumpedMass(L, M)])
    in_z = np.abs(d.phi[0, 2]) > 1e-9                              # the plane of EIy
    r = M / (rhoA * L)

    def f(b):
        return 1 + np.cos(b) * np.cosh(b) + r * b * (np.cos(b) * np.sinh(b) - np.sin(b) * np.cosh(b))

    grid = np.linspace(0.1, 12, 2000)
    roots = [brentq(f, a, b) for a, b in zip(grid[:-1], grid[1:]) if f(a) * f(b) < 0][:3]
    np.testing.assert_allclose(d.omega[in_z][:3], np.array(roots) ** 2 * np.sqrt(EI / (rhoA * L ** 4)), rtol=1e-4)
    assert d.mass[0, 0] == pytest.approx(rhoA * L + M, rel=1e-13)


def test_the_rigid_mass_and_the_modal_identities():
    """D_P of a stepped beam with a lumped mass is its mass, first moment and inertia about P;
    the modes are mass-normalised (translations' share + rotations' = 1); the residual mass
    D_P - L^T L is positive semi-definite; L's rotational part is int x0 x phi dm (eq. (F4))
    for a beam without rotary inertia of bending."""
    s1 = dict(length=2.0, EA=1e6, EIy=300.0, EIz=200.0, GJ=100.0, rhoA=3.0, rhoJ=0.0)
    s2 = dict(length=1.5, EA=1e6, EIy=100.0, EIz=80.0, GJ=100.0, rhoA=1.0, rhoJ=0.0)
    d = beam_modal_data([section(s1), section(s2)], 8, axis=[0, 0, 1], elements=30, ports=[3.5, 2.0],
                        masses=[LumpedMass(2.0, 0.7)])
    m = 3.0 * 2.0 + 1.0 * 1.5 + 0.7
    first = 3.0 * 2.0 ** 2 / 2 + 1.0 * (3.5 ** 2 - 2.0 ** 2) / 2 + 0.7 * 2.0
    second = 3.0 * 2.0 ** 3 / 3 + 1.0 * (3.5 ** 3 - 2.0 ** 3) / 3 + 0.7 * 2.0 ** 2
    D = d.mass
    assert D[0, 0] == pytest.approx(m, rel=1e-13)
    assert D[0, 4] == pytest.approx(first, rel=1e-13)            # -(*c)[x, y] = c_z along the axis z
    assert D[3, 3] == pytest.approx(second, rel=1e-13) and D[5, 5] == pytest.approx(0.0, abs=1e-12)
    F = np.einsum("aaij->ij", d.I_phi_phi)
    np.testing.assert_allclose(F, np.eye(8), atol=1e-12)          # rhoJ = 0: translations only
    assert np.linalg.eigvalsh(D - d.L.T @ d.L)[0] > -1e-10
    E = d.I_phi_x0
    rot = np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])      # int x0 x phi dm
    np.testing.assert_allclose(d.L[:, 3:6].T, rot, atol=1e-12)


def test_southwell_coefficient_of_the_first_flapwise_mode():
    """The centrifugal geometric stiffness of the first bending mode of a uniform cantilever per
    unit Omega^2 is Southwell's coefficient 1.1933 (hub radius zero)."""
    d = simo_beam()
    assert d.K0om[2][0, 0] == pytest.approx(1.19334, rel=2e-5)   # spin about z, bending along y
    assert d.K0om[0][0, 0] == 0.0                                 # spin about the axis: no tension


def test_bad_beams_and_ports_name_what_is_wrong():
    with pytest.raises(ValueError, match="'beam.EA'.*positive"):
        section({**SIMO, "EA": -1.0})
    with pytest.raises(ValueError, match="'beam.GJ': missing"):
        section({k: v for k, v in SIMO.items() if k != "GJ"})
    with pytest.raises(ValueError, match=r"'ports\[0\]': 12.0 is off the beam \(0 to 10 m from P\)"):
        beam_modal_data([section(SIMO)], 4, ports=[12.0])
    with pytest.raises(ValueError, match="'modes': 500 modes asked"):
        beam_modal_data([section(SIMO)], 500, elements=10)


@pytest.mark.parametrize("suffix", [".npz", ".mat"])
def test_the_neutral_file_round_trip(tmp_path, suffix):
    d = simo_beam(6, masses=[LumpedMass(5.0, 1.0, np.diag([0.1, 0.2, 0.3]))])
    back = ModalData.load(d.save(tmp_path / f"panel{suffix}"))
    for name, value in d.arrays().items():
        if name != "format":
            np.testing.assert_array_equal(getattr(back, name), value, err_msg=name)


def _bad(d, **changes):
    arrays = {k: v for k, v in d.arrays().items() if k != "format"}
    arrays.update(changes)
    return ModalData.from_arrays(arrays)


@pytest.mark.parametrize("field, change, message", [
    ("phi", lambda d: d.phi[:, :, :3], r"'phi': expected shape \(1, 3, 4\)"),
    ("omega", lambda d: d.omega * np.array([1, -1, 1, 1]), "'omega': .* positive, got -.* at mode 2"),
    ("mass", lambda d: d.mass + np.triu(np.ones((6, 6)), 1), "'mass': .* symmetric"),
    ("L", lambda d: 3 * d.L, "'L': the residual mass"),
    ("I_phi_phi", lambda d: 2 * d.I_phi_phi, "'I_phi_phi': .*not mass-normalised"),
    ("K0om", lambda d: d.K0om + np.triu(np.ones((4, 4)), 1), "'K0om': .*symmetric"),
    ("zeta", lambda d: -d.omega, "'zeta': damping ratios must be >= 0"),
    ("nodes", lambda d: np.full((1, 3), np.nan), "'nodes': must be finite"),
])
def test_bad_modal_data_is_one_error_naming_the_field(field, change, message):
    d = simo_beam(4)
    with pytest.raises(ModalError, match=message):
        _bad(d, **{field: change(d)})


def test_a_missing_field_and_a_node_off_the_file(tmp_path):
    d = simo_beam(4)
    arrays = {k: v for k, v in d.arrays().items() if k != "K0t"}
    np.savez(tmp_path / "x.npz", **arrays)
    with pytest.raises(ModalError, match="'K0t': missing from .*x.npz"):
        ModalData.load(tmp_path / "x.npz")
    with pytest.raises(ModalError, match="'ports': node 3 is not in the data, which has 1 node"):
        d.with_nodes([2])
    with pytest.raises(ModalError, match="'modes': 5 modes asked, the data has 4"):
        d.first_modes(5)
