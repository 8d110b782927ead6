"""Campaigns over a flexible body's values (docs/campaigns.md, "What can vary"): the spin-up
beam's bending stiffness varied, each run's in-plane tip deflection against the quasi-static
closed form of a cantilever under the angular acceleration's inertial load; its modes and
elements varied; misspelled and invalid values refused in one line before any run."""

from pathlib import Path

import numpy as np
import pytest

from titop_fmu import campaign
from titop_fmu.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPINUP = ROOT / "examples" / "spinup_beam.toml"
#: a short run: the hub's angular acceleration 0.4 (1 - cos(2 pi t / 15)) still growing, the spin slow
STOP = 3.0


def quasi_static_tip(EI, t, L=10.0, rhoA=1.2):
    """In-plane tip deflection of a cantilever of length ``L`` under the inertial load of the hub's
    angular acceleration ``alpha(t)``, ``q(x) = -rhoA alpha x`` (a triangular load):
    ``w(L) = -11 q(L) L^4 / (120 EI)`` (the spin and the beam's own dynamics left out: its first
    bending frequency, 2.7 to 5.4 rad/s here, is well above the load's 0.42 rad/s)."""
    alpha = 0.4 * (1 - np.cos(2 * np.pi * t / 15))
    return -11 * rhoA * alpha * L ** 5 / (120 * EI)


def test_a_stiffer_beam_deflects_less_as_the_closed_form_says(tmp_path, capsys):
    stiffness = [7e3, 1.4e4, 2.8e4]
    assert main(["sweep", str(SPINUP), "--vary", f"beam.flexible.beam.EIz={stiffness}".replace(" ", ""),
                 "--sampling", "grid", "--stop", str(STOP), "--workers", "0", "--quiet",
                 "--out", str(tmp_path / "store")]) == 0
    c = campaign.open(tmp_path / "store")
    assert c.samples["status"].tolist() == ["ok"] * 3
    assert c.samples["beam.flexible.beam.EIz"].tolist() == stiffness
    tips = []
    for i, EI in enumerate(stiffness):
        run = c.trajectory(i)
        assert run["t"].iloc[-1] == pytest.approx(STOP)
        tip = run["beam.c1.u[2]"].iloc[-1]                     # in-plane: along the block's y
        assert tip == pytest.approx(quasi_static_tip(EI, STOP), rel=0.03)
        tips.append(tip)
    assert abs(tips[0]) > abs(tips[1]) > abs(tips[2]) > 0.1


def test_the_modes_kept_and_the_elements_vary_too(tmp_path):
    """The model changes with the modes (``welded_c1_f2``, ``welded_c1_f4``): a tip deflection of
    the first bending mode at this slow load, the same to a percent with 2 modes as with 4."""
    spec = campaign.Sweep(str(SPINUP), vary={"beam.flexible.modes": "[2, 4]", "beam.flexible.elements": "[10, 20]"},
                          sampling="grid", stop=1.0)
    c = campaign.run(spec, tmp_path / "store", workers=0, progress=False)
    assert c.samples["status"].tolist() == ["ok"] * 4
    tips = np.array([c.trajectory(i)["beam.c1.u[2]"].iloc[-1] for i in range(4)])
    assert np.all(tips < -1e-3)
    assert np.max(np.abs(tips / tips[-1] - 1)) < 0.01
    assert len({float(x) for x in tips}) == 4                  # each run its own model


@pytest.mark.parametrize("args, message", [
    (["--vary", "beam.flexible.beam.EIq=[1e4,2e4]"],
     "beam.flexible.beam.EIq: unknown parameter (did you mean 'beam.flexible.beam.EIz'"),
    (["--vary", "beam.flexible.beam.EIz=[1e4,2e4]", "--set", "beam.flexible.modes=300"], "units.beam.flexible.modes"),
    (["--vary", "beam.flexible.beam.EIz=[1e4,2e4]", "--set", "beam.flexible.beam.EA=-1"],
     "units.beam.flexible.beam.EA: must be positive, got -1.0"),
])
def test_bad_flexible_names_and_values_are_one_line(tmp_path, capsys, args, message):
    assert main(["sweep", str(SPINUP), *args, "--sampling", "grid", "--stop", "0.1", "--workers", "0", "--quiet",
                 "--out", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("titop-fmu: error:") and "\n" not in err and message in err, err
    assert not (tmp_path / "store").exists()
