"""Families of linear models along a scheduling parameter (titop_fmu.linear.lpv): every grid
model is the exact model at its own equilibrium (continued along the grid), all in one
basis; the interpolation's error at the mid-points is measured and falls as h^2; files."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io
from scipy.optimize import brentq

from titop_fmu.cli import main
from titop_fmu.cli.linearize import _grid
from titop_fmu.errors import TitopError
from titop_fmu.linear.lpv import Family, family
from titop_fmu.linear.trim import trim
from titop_fmu.scenarios import balloon
from tests.linear.test_trim import spinning_hub

TILTED = {"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)}
HOVER = Path(__file__).resolve().parents[2] / "examples" / "spacecraft_hover.toml"
HELD = ["slider.q", "pendulum2.q", "balloon.attitude", "pendulum1.joint.tau"]
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def test_a_mass_family_is_the_models_at_each_equilibrium():
    grid = [1.0, 2.0, 4.0]
    fam = family(lambda m: balloon.system({**TILTED, "m_P2": m}), "m_P2", grid)
    for m, model in zip(grid, fam.models):
        direct = trim(balloon.system({**TILTED, "m_P2": m})).linearize(outputs=balloon.system().recorded)
        for a, b in ((model.A, direct.A), (model.D, direct.D)):                 # two searches, one equilibrium
            assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max()
        assert model.u0[1] == pytest.approx(9.81 * (13 + m))                 # the buoyancy follows the mass
    assert fam.states == fam.models[-1].states and len(fam.outputs) == 27
    assert fam.errors.shape == (2, 4) and np.all(fam.errors > 0)


def test_a_joint_angle_family_holds_the_joint_with_its_torque():
    """Pendulum 1 held at each angle by its actuator: the torque found balances gravity on
    the whole hanging chain (checked against a trim at that angle), the rest at equilibrium."""
    grid = np.radians([0.0, 5.0, 10.0, 15.0])
    fam = family(balloon.system(TILTED), "pendulum1.q", grid, free=HELD)
    tau = [m.u0[m.inputs.index("pendulum1.joint.tau")] for m in fam.models]
    assert tau[0] == pytest.approx(0.0, abs=1e-12) and np.all(np.diff(tau) > 0)
    for theta, model in zip(grid, fam.models):
        assert model.x0[fam.models[0].x0_names.index("pendulum1.q")] == theta


def test_interpolation_errors_fall_as_h_squared():
    coarse = family(balloon.system(TILTED), "pendulum1.q", np.radians([0.0, 8.0]), free=HELD)
    fine = family(balloon.system(TILTED), "pendulum1.q", np.radians([0.0, 4.0, 8.0]), free=HELD)
    ratio = coarse.errors[0] / fine.errors[0]
    assert np.all((3.5 < ratio) & (ratio < 4.5)), ratio
    mid = fine.at(np.radians(4.0))
    assert np.array_equal(mid.A, fine.models[1].A)                           # at a grid point: the model there
    with pytest.raises(TitopError, match="outside the grid"):
        fine.at(1.0)


def test_a_spin_rate_family_deflects_the_arms_as_the_closed_form():
    """The hub's spin as the parameter (a state held): the relative equilibrium continued
    from rate to rate, ``k theta = m W^2 (a + l sin theta) l cos theta``."""
    rates = [2.0, 4.0, 6.0]
    fam = family(spinning_hub(rates[0]), "hub.w_y", rates)
    for w, model in zip(rates, fam.models):
        exact = brentq(lambda th: 40 * th - 0.5 * w * w * (0.8 + 0.6 * np.sin(th)) * 0.6 * np.cos(th), 0, 1.5)
        assert model.x0[model.x0_names.index("arm1.q")] == pytest.approx(exact, rel=1e-12)
        assert model.x0[model.x0_names.index("hub.w_y")] == w
        assert np.abs(model.xdot0).max() < 1e-10


@pytest.mark.parametrize("suffix", [".mat", ".npz"])
def test_family_files(tmp_path, suffix):
    fam = family(lambda m: balloon.system({**TILTED, "m_P2": m}), "m_P2", [2.0, 3.0, 4.0],
                 inputs=["slider.joint.tau"], outputs=["slider.joint.q[3]"])
    path = tmp_path / f"fam{suffix}"
    fam.save(path)
    back = Family.load(path)
    assert back.parameter == "m_P2" and np.array_equal(back.grid, fam.grid)
    assert np.array_equal(back.errors, fam.errors) and back.states == fam.states
    for a, b in zip(back.models, fam.models):
        assert np.array_equal(a.A, b.A) and np.array_equal(a.B, b.B) and np.array_equal(a.x0, b.x0)
    if suffix == ".mat":
        d = scipy.io.loadmat(path)
        assert d["A"].shape == (18, 18, 3) and d["B"].shape == (18, 1, 3)      # MATLAB's array of models


def test_errors(tmp_path):
    with pytest.raises(TitopError, match="increasing"):
        family(balloon.system(TILTED), "pendulum1.q", [0.2, 0.1])
    with pytest.raises(TitopError, match="cannot be free"):
        family(balloon.system(TILTED), "pendulum1.q", [0.0, 0.1], free=["pendulum1.q"])
    assert main(["linearize", "balloon", "--grid", "m_P2=1:3:3", "--out", str(tmp_path / "f.mat")]) == 2
    assert main(["linearize", "balloon", "--trim", "--grid", "m_P2=1:x:3", "--out", str(tmp_path / "f.mat")]) == 2


def test_a_grid_in_degrees():
    """``--grid NAME=START:STOP:Ndeg`` (its help's example): the values in radians (a NameError
    traceback, before)."""
    name, grid = _grid("pendulum1.q=0:20:5deg")
    assert name == "pendulum1.q" and np.allclose(grid, np.radians([0, 5, 10, 15, 20]))
    assert np.allclose(_grid("pendulum1.q=-5,5deg")[1], np.radians([-5, 5]))


def test_a_system_files_parameter_on_the_command_line(tmp_path):
    """``--set`` and ``--grid`` on a system file's unit parameter (as simulate sets them): the
    hovering spacecraft with link1's mass scheduled, the hover thrust free: the thrust found
    holds the weight at every grid point."""
    out = tmp_path / "fam.npz"
    free = ["slider.q", "panel.q", "link1.q", "link2.q", "link3.q", "bus.attitude", "bus.ext.w[2]"]
    assert main(["linearize", str(HOVER), "--set", "link2.mass=0.9", "--trim", *free,
                 "--grid", "link1.mass=0.5:1.5:3", "--inputs", "bus.ext.w[2]", "--out", str(out), "--quiet"]) == 0
    fam = Family.load(out)
    assert fam.parameter == "link1.mass" and fam.grid.tolist() == [0.5, 1.0, 1.5]
    for m, model in zip(fam.grid, fam.models):
        assert model.u0[0] == pytest.approx(9.81 * (48.8 - 1.0 + m + 0.1), rel=1e-12)
