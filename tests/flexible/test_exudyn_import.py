"""The importer of Exudyn's finite-element interface (titop_fmu.fe.exudyn) on a real Exudyn
file: a solid cantilever of 20-node bricks, read by Exudyn from an Abaqus input file and its
matrices, saved with FEMinterface.SaveToFile, reduced to its clamped modes. Checked against
Exudyn's own eigen-solution and rigid-body inertia, Euler-Bernoulli's closed form, and
``titop-fmu linearize`` of the body in a system file."""

import textwrap
import warnings

import numpy as np
import pytest

from titop_fmu.blocks.modal import ModalData, ModalError
from titop_fmu.errors import ParameterWarning
from titop_fmu.fe.solid import box, matrices, write_abaqus
from titop_fmu.spatial import skew

FEM = pytest.importorskip("exudyn.FEM", reason="Exudyn (the crosscheck extra) reads and writes the FEMinterface files")

#: the cantilever: steel, 1 m along x, 60 mm wide (y), 40 mm high (z); 20 x 2 x 2 bricks
L, B, H = 1.0, 0.06, 0.04
E, NU, RHO = 2.1e11, 0.3, 7800.0
BETA = np.array([1.87510407, 4.69409113])              # clamped-free beta_n L


@pytest.fixture(scope="module")
def beam_file(tmp_path_factory):
    """The Exudyn file of the cantilever: ``(path, FEMinterface)``."""
    return exudyn_file(tmp_path_factory.mktemp("exudyn"), 20, 2, 2)


def exudyn_file(folder, nx, ny, nz):
    """Exudyn's FEMinterface of the cantilever in ``nx ny nz`` bricks and its file."""
    nodes, elements = box(L, B, H, nx, ny, nz)
    M, K = matrices(nodes, elements, E, NU, RHO)
    inp, mass, stiffness = write_abaqus(folder, nodes, elements, M, K)
    fem = FEM.FEMinterface()
    fem.ImportFromAbaqusInputFile(str(inp))
    fem.ReadMassMatrixFromAbaqus(str(mass))
    fem.ReadStiffnessMatrixFromAbaqus(str(stiffness))
    path = folder / "beam.npz"
    fem.SaveToFile(str(path))
    return path, fem


def imported(source, fem, modes=6, ports=([L, 0.0, 0.0],), **kw):
    """The modal data of ``source`` (the file or the object) clamped at the face x = 0."""
    from titop_fmu.fe.exudyn import modal_data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        return modal_data(source, clamp_nodes(fem), list(ports), modes, **kw)


def clamp_nodes(fem):
    return fem.GetNodesInPlane([0, 0, 0], [1, 0, 0])


def test_the_clamped_frequencies_are_exudyns(tmp_path):
    """Exudyn's own eigen-solution with the same clamp (ComputeEigenModesWithBoundaryNodes,
    dense, so on a coarser mesh of 10 x 1 x 1 bricks): the same 8 frequencies to 1e-8 relative."""
    path, fem = exudyn_file(tmp_path, 10, 1, 1)
    data = imported(path, fem, modes=8, ports=())
    fem.ComputeEigenModesWithBoundaryNodes(clamp_nodes(fem), 8, useSparseSolver=False)
    np.testing.assert_allclose(data.omega, np.sqrt(fem.eigenValues[:8]), rtol=1e-8)


def test_bending_frequencies_and_tip_slope_near_euler_bernoulli(beam_file):
    """The first two bending frequencies in each plane: the mesh gives the first within 0.5 %,
    the second within 2 % of Euler-Bernoulli (shear and the 3-D clamp, L/h = 17 and 25); and the
    tip's rotation over its deflection, phi'(L)/phi(L) of the first mode, within 1 %."""
    data = imported(*beam_file, modes=6)
    tip_z = np.abs(data.phi[0, 2])                       # bending in x-z (about y): EI_y = E B H^3/12
    z = np.flatnonzero(tip_z > 0.1)[:2]
    y = np.flatnonzero(np.abs(data.phi[0, 1]) > 0.1)[:2]
    for modes, inertia in ((z, B * H ** 3 / 12), (y, H * B ** 3 / 12)):
        exact = BETA ** 2 / L ** 2 * np.sqrt(E * inertia / (RHO * B * H))
        np.testing.assert_allclose(data.omega[modes[0]], exact[0], rtol=5e-3)
        np.testing.assert_allclose(data.omega[modes[1]], exact[1], rtol=2e-2)
    b = BETA[0]
    sigma = (np.cosh(b) + np.cos(b)) / (np.sinh(b) + np.sin(b))
    slope = b * (np.sinh(b) + np.sin(b) - sigma * (np.cosh(b) - np.cos(b))) / (
        np.cosh(b) - np.cos(b) - sigma * (np.sinh(b) - np.sin(b)))
    m = z[0]
    np.testing.assert_allclose(-data.psi[0, 1, m] / data.phi[0, 2, m], slope / L, rtol=1e-2)    # theta_y = -w'


def test_the_first_bending_modes_are_the_beam_generators(beam_file):
    """The solid bar against the beam generator's Euler-Bernoulli beam of the same section
    (40 elements): in each plane the first mode's participation factors L, tip translation
    phi and rotation psi within 0.5 % of their largest term, I_phi_x0 and I_phi_phi within
    0.2 %, the rigid mass within 0.05 % (the solid's sections have rotary inertia, the beam's
    none but torsion's). Independent of Exudyn and of the importer's code: an error in the
    integrals, the port's rotation or the rigid modes shows. The mesh is moved off the origin
    (the data are those of the body about P, wherever the mesh is)."""
    import copy

    from titop_fmu.blocks.beam import beam_modal_data, section
    fem = beam_file[1]
    offset = np.array([0.3, -0.2, 0.5])
    moved = copy.copy(fem)
    moved.nodes = {"Position": fem.GetNodePositionsAsArray() + offset}
    data = imported(moved, fem, modes=2, ports=[[L, 0.0, 0.0] + offset])
    Iy, Iz = B * H ** 3 / 12, H * B ** 3 / 12
    bar = {"length": L, "EA": E * B * H, "EIy": E * Iy, "EIz": E * Iz, "GJ": E / 2.6 * 0.2 * B * H ** 3,
           "rhoA": RHO * B * H, "rhoJ": RHO * (Iy + Iz)}
    beam = beam_modal_data([section(bar)], 2, elements=40, ports=[L])
    sign = np.sign(np.einsum("aj,aj->j", data.phi[0], beam.phi[0]))
    for name, value, tol in (("L", data.L * sign[:, None], 5e-3), ("phi", data.phi[0] * sign, 5e-3),
                             ("psi", data.psi[0] * sign, 5e-3), ("I_phi_x0", data.I_phi_x0 * sign, 2e-3),
                             ("I_phi_phi", data.I_phi_phi * np.outer(sign, sign), 2e-3)):
        ref = beam.L if name == "L" else beam.phi[0] if name == "phi" else beam.psi[0] if name == "psi" \
            else getattr(beam, name)
        np.testing.assert_allclose(value, ref, atol=tol * np.abs(ref).max(), err_msg=name)
    np.testing.assert_allclose(data.mass, beam.mass, atol=5e-4 * np.abs(beam.mass).max())


def test_the_rigid_mass_is_exudyns_rigid_body_inertia(beam_file):
    """D_P about the origin against FEMinterface.GetRigidBodyInertia: mass, first moment and
    inertia to 1e-12 relative (with zero modes too); and the modal identities: D_P - L^T L positive semi-definite,
    sum_a I_phi_phi[a, a] = 1 (mass-normalised)."""
    path, fem = beam_file
    data = imported(path, fem, origin=[0.0, 0.0, 0.0])
    ref = fem.GetRigidBodyInertia()
    m = ref.Mass()
    np.testing.assert_allclose(data.mass[0, 0], m, rtol=1e-12)
    np.testing.assert_allclose(data.mass[3:6, 0:3], m * skew(ref.COM()), atol=1e-12 * m)
    np.testing.assert_allclose(data.mass[3:6, 3:6], ref.Inertia(), rtol=1e-12, atol=1e-12 * np.abs(ref.Inertia()).max())
    np.testing.assert_allclose(m, RHO * L * B * H, rtol=1e-12)
    rigid = imported(path, fem, modes=0, origin=[0.0, 0.0, 0.0])      # no mode: the rigid body, its port
    np.testing.assert_array_equal(rigid.mass, data.mass)
    assert rigid.phi.shape == rigid.psi.shape == (1, 3, 0) and rigid.L.shape == (0, 6)
    np.testing.assert_allclose(np.einsum("aaij->ij", data.I_phi_phi), np.eye(data.n_modes), atol=1e-10)
    assert np.linalg.eigvalsh(data.mass - data.L.T @ data.L)[0] > -1e-10


def test_the_file_and_the_object_give_the_same_data_and_the_neutral_file(beam_file, tmp_path):
    """modal_file writes the neutral file: read back, it is the data of the in-memory object,
    the import warns that the body has no stiffening (K0 zero), the mode shapes drawn are the
    surface nodes'."""
    from titop_fmu.fe.exudyn import modal_file
    path, fem = beam_file
    with pytest.warns(ParameterWarning, match="no stiffening"):
        modal_file(path, clamp_nodes(fem), [[L, 0.0, 0.0]], 4, tmp_path / "beam_modes.npz")
    back = ModalData.load(tmp_path / "beam_modes.npz")
    direct = imported(fem, fem, modes=4)
    for name, value in direct.arrays().items():
        if name != "format":
            np.testing.assert_array_equal(getattr(back, name), value, err_msg=name)
    assert not np.any(back.K0om) and not np.any(back.K0t)
    x = fem.GetNodePositionsAsArray()                  # the drawn shapes: those of Exudyn's surface
    drawn = np.unique(np.concatenate([np.ravel(g["Trigs"]) for g in fem.surface]))
    np.testing.assert_allclose(back.shape_nodes, x[drawn], atol=1e-15)          # P = 0 to rounding
    assert 0 < len(drawn) < len(x)
    assert np.all((np.abs(x[drawn, 0] - L / 2) > L / 2 - 1e-9) | (np.abs(x[drawn, 1]) > B / 2 - 1e-9) |
                  (np.abs(x[drawn, 2]) > H / 2 - 1e-9))


def test_linearize_gives_the_clamped_frequencies(beam_file, tmp_path):
    """The imported body welded to a base at rest (no gravity): the eigenvalues of
    ``titop-fmu linearize`` are +-j omega_i of the file, to 1e-8 relative."""
    from scipy.io import loadmat

    from titop_fmu.cli import main
    data = imported(*beam_file, modes=6)
    data.save(tmp_path / "beam_modes.npz")
    (tmp_path / "s.toml").write_text(textwrap.dedent("""\
        links = [["base.c1", "beam.p"]]

        [units.base]
        model = "imposed_motion_base_c1"
        mass = 1.0
        inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
        com = [0, 0, 0]
        "c1.r" = [0, 0, 0]

        [units.beam]
        model = "welded_c1"
        gravity = [0, 0, 0]

        [units.beam.flexible]
        modal = "beam_modes.npz"
        modes = 6
        ports = [1]

        [inputs]
        "beam.c1.w" = [0, 0, 0, 0, 0, 0]
        """))
    out = tmp_path / "X.mat"
    assert main(["linearize", str(tmp_path / "s.toml"), "--out", str(out)]) == 0
    lam = np.linalg.eigvals(loadmat(out)["A"])
    w = np.sort(lam[lam.imag > 1e-6].imag)
    np.testing.assert_allclose(w, data.omega, rtol=1e-8)
    np.testing.assert_allclose(lam.real, 0.0, atol=1e-8 * data.omega.max())


@pytest.mark.parametrize("case, message", [
    ("line", "lie on a line"),
    ("one node", "lie on a line"),
    ("port off", r"ports\[0\]: no node at \[1.0, 0.0, 0.005\]"),
    ("port number", "ports[0]: node 99999 is not in the mesh"),
    ("too many modes", "modes asked"),
    ("beam nodes", "only solid meshes of 'Position' nodes"),
])
def test_bad_input_is_one_error_naming_it(beam_file, case, message):
    """A clamp that leaves a rigid-body mode (its nodes on a line: an edge of the beam, or one
    node), a port where no node is, too many modes, a mesh of beam nodes: one ModalError."""
    import copy
    fem = beam_file[1]
    x = fem.GetNodePositionsAsArray()
    clamp, ports, modes, mesh = clamp_nodes(fem), [[L, 0.0, 0.0]], 4, fem
    if case == "line":
        clamp = [i for i in clamp if abs(x[i, 1] + B / 2) < 1e-9 and abs(x[i, 2] + H / 2) < 1e-9] + \
            [i for i in range(len(x)) if abs(x[i, 1] + B / 2) < 1e-9 and abs(x[i, 2] + H / 2) < 1e-9]
    elif case == "one node":
        clamp = clamp[:1]
    elif case == "port off":
        ports = [[L, 0.0, 0.005]]
    elif case == "port number":
        ports = [99999]
    elif case == "too many modes":
        modes = 3 * len(x)
    else:
        mesh = copy.copy(fem)
        mesh.nodes = {"RigidBodyRxyz": np.zeros((3, 6))}
    from titop_fmu.fe.exudyn import modal_data
    with pytest.raises(ModalError, match=message.replace("[", r"\[").replace("]", r"\]")
                       if case == "port number" else message) as e:
        modal_data(mesh, clamp, ports, modes)
    assert "\n" not in str(e.value)


def test_a_clamp_that_holds_nothing_is_found_by_its_modes(beam_file):
    """Clamp nodes that span a face but hold only part of a mesh in two pieces: the free piece's
    rigid-body modes are found (omega^2 ~ 0) and named, not returned as modes."""
    import copy

    from scipy import sparse
    fem = beam_file[1]
    two = copy.copy(fem)
    x = fem.GetNodePositionsAsArray()
    n = len(x)
    two.nodes = {"Position": np.vstack([x, x + [2 * L, 0, 0]])}
    two.massMatrix = sparse.block_diag([fem.massMatrix, fem.massMatrix]).tocsr()
    two.stiffnessMatrix = sparse.block_diag([fem.stiffnessMatrix, fem.stiffnessMatrix]).tocsr()
    two.elements = [{"Name": "e", "Hex20": np.vstack([g["Hex20"], g["Hex20"] + n])} for g in fem.elements]
    from titop_fmu.fe.exudyn import modal_data
    with pytest.raises(ModalError, match="has a rigid-body mode"):
        modal_data(two, clamp_nodes(fem), [[L, 0.0, 0.0]], 4)
