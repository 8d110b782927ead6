"""Linear models at equilibria against an independent engine: Pinocchio's ABA and its
analytic derivatives (computeABADerivatives), on the balloon (its own Pinocchio model,
validation/engines/pinocchio_balloon.py) and on the spacecraft hovering at a non-trivial
equilibrium (the Pinocchio twin of its file, validation/engines/pinocchio_titop.py).
Eigenvalues do not depend on the state basis: the non-zero ones must agree to 1e-6
relative (they agree to about 1e-14), and the number of zero ones must be the same."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from linear_checks import compare_eigenvalues, fd_model
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.linear.coordinates import resolve_inputs, with_inputs
from titop_fmu.linear.trim import trim
from titop_fmu.scenarios import balloon
from titop_fmu.spatial import dcm_from_quat

pin = pytest.importorskip("pinocchio")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from validation.engines import pinocchio_balloon as pb  # noqa: E402
from validation.engines.pinocchio_titop import PinocchioTwin  # noqa: E402

HOVER = ROOT / "examples" / "spacecraft_hover.toml"
TILTED = {"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)}
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def balloon_reference(state, s):
    """Pinocchio's ``A`` of the balloon at the TITOP state ``state`` of the system ``s``."""
    b = state[s.state_slice("balloon")]
    q = np.array([state[s.state_slice(j)][0] for j in ("slider", "pendulum1", "pendulum2")])
    qd = np.array([state[s.state_slice(j)][1] for j in ("slider", "pendulum1", "pendulum2")])
    P = dcm_from_quat(b[9:13])
    assert np.abs(np.concatenate(pb.accelerations(None, b[6:9], P, b[0:3], b[3:6], q, qd))).max() < 1e-11
    return pb.linearization(None, b[6:9], P, b[0:3], b[3:6], q, qd)


def test_the_balloon_trims_to_its_hanging_equilibrium_with_pinocchios_modes():
    cs = balloon.system(TILTED)
    eq = trim(cs)
    s = eq.system
    y = eq.state
    assert np.abs(y[s.state_slice("balloon")][0:9]).max() == 0.0            # at rest, the position held
    assert np.allclose(y[s.state_slice("balloon")][9:13], [1, 0, 0, 0], atol=1e-12)     # level, yaw held
    for j in ("slider", "pendulum1", "pendulum2"):                          # the pendulums down
        assert np.abs(y[s.state_slice(j)]).max() < 1e-12
    model = eq.linearize()
    worst, zeros, ref_zeros = compare_eigenvalues(model.eigenvalues, np.linalg.eigvals(balloon_reference(y, s)))
    assert worst <= 1e-6 and zeros == ref_zeros == 8, (worst, zeros, ref_zeros)
    assert worst <= 1e-10                                                   # as measured: ~1e-14


def hover_twin_eigenvalues(eq):
    s = eq.system
    twin = PinocchioTwin(systemfile.read(HOVER).system)
    q, v = twin.configuration({n: eq.state[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states})
    assert np.abs(twin.accelerations(q, v)).max() < 1e-11                   # Pinocchio's equilibrium too
    return np.linalg.eigvals(twin.linearization(q, v))


@pytest.mark.slow
def test_the_hovering_spacecraft_has_its_pinocchio_twins_modes_and_exact_C_D():
    """Full inertias, offset centres of mass, mount angles, oblique axes, a welded boom, a
    prismatic rail with a spring, the bus tilted by its equilibrium; C, D (the file's record
    list: positions, Euler angles, rates, joint positions and rates) against finite
    differences of the NumPy blocks."""
    cs = systemfile.read(HOVER).system
    eq = trim(cs)
    s = eq.system
    assert eq.iterations >= 3 and np.abs(eq.state[s.state_slice("slider")][0] - 0.9) > 0.05
    model = eq.linearize(outputs=list(cs.recorded))
    worst, zeros, ref_zeros = compare_eigenvalues(model.eigenvalues, hover_twin_eigenvalues(eq))
    assert worst <= 1e-10 and zeros == ref_zeros == 8, (worst, zeros, ref_zeros)
    assert model.C.shape == (17, 22) and model.D.shape == (17, 11)
    inputs = resolve_inputs(s, model.inputs)
    _, _, C, D = fd_model(with_inputs(s, {(b, p) for _, (b, p, _) in inputs}), eq.state, inputs, model.outputs)
    assert np.abs(model.C - C).max() <= 1e-8 * max(1.0, np.abs(C).max())
    assert np.abs(model.D - D).max() <= 1e-8 * max(1.0, np.abs(D).max())


def test_the_command_line_writes_what_matlab_and_scipy_read(tmp_path, capsys):
    """The maintainers' command: the balloon tilted 5 and -5 deg, trimmed, written to .mat."""
    out = tmp_path / "lin.mat"
    assert main(["linearize", "balloon", "--set", "theta1_0=5deg", "--set", "theta2_0=-5deg", "--trim",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "equilibrium:" in printed and "f [Hz]" in printed and "8 zero eigenvalue(s)" in printed
    d = scipy.io.loadmat(out)
    names = [str(c[0]) for c in d["StateName"].ravel()]
    assert names[9:12] == ["balloon.rotvec_x", "balloon.rotvec_y", "balloon.rotvec_z"] and len(names) == 18
    assert [str(c[0]) for c in d["InputName"].ravel()][6] == "slider.joint.tau"
    assert d["C"].shape == (27, 18) and d["D"].shape == (27, 9)
    s = balloon.build(TILTED)
    ref = np.linalg.eigvals(balloon_reference(d["x0"].ravel(), s))
    worst, zeros, ref_zeros = compare_eigenvalues(np.linalg.eigvals(d["A"]), ref)
    assert worst <= 1e-6 and zeros == ref_zeros == 8

    out = tmp_path / "hover.npz"
    assert main(["linearize", str(HOVER), "--trim", "--out", str(out)]) == 0
    with np.load(out) as z:
        assert z["StateName"][0] == "bus.v_x" and z["A"].shape == (22, 22)
