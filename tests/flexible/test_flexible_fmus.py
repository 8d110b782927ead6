"""Flexible bodies through the FMUs and the co-simulation master: the flexible variant of a
block (``welded_c1_f10``) is built on demand, of either kind (pythonfmu; standalone, C only), the
number of modes fixed at build time, and the spin-up beam (Simo & Vu-Quoc; the issue's contract form) run through the
FMUs and the master follows the in-process run (the C kernel, the loop solved exactly)."""

import re
from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cli import main

#: the spin-up beam in the issue's contract form: the hub's angular acceleration
#: 0.4 (1 - cos(2 pi t/15)) for t < 15 s, the beam L = 10 m, EA = 2.8e7 N, EI = 1.4e4 N m2,
#: rho A = 1.2 kg/m, 10 clamped modes
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spinup_beam.toml"


def spinup(folder, stop, record=None) -> Path:
    """examples/spinup_beam.toml written in ``folder`` with the stop time ``stop`` (and the
    record list ``record``, TOML, in place of its own)."""
    text = EXAMPLE.read_text()
    assert "\nstop = 20.0\n" in text
    text = text.replace("\nstop = 20.0\n", f"\nstop = {stop}\n")
    if record is not None:
        text = re.sub(r"^record = .*$", f"record = {record}", text, count=1, flags=re.M)
    path = Path(folder) / "spinup.toml"
    path.write_text(text)
    return path


def run(tmp_path, stop, *engine):
    path = spinup(tmp_path, stop)
    out = tmp_path / f"out{len(engine)}.csv"
    assert main(["simulate", str(path), "--out", str(out), "--quiet", *engine]) == 0
    return np.loadtxt(out, delimiter=",", skiprows=1)


def check_spinup(tmp_path, stop, kind):
    """The tip's position and elastic displacement through the block FMUs of ``kind`` and the
    master within 1e-3 m of the in-process run at every 0.01 s (measured over 2 s: 9e-9 m with
    the pythonfmu FMUs, 1.3e-8 m with the standalone ones, the in-plane deflection reaching
    0.10 m; over 20 s, standalone: 8.1e-8 m); the deflection is there to be compared."""
    here = run(tmp_path, stop)
    fmus = run(tmp_path, stop, "--engine", "fmu", "--fmu-kind", kind)
    assert fmus.shape == here.shape and here[-1, 0] == pytest.approx(stop)
    assert np.max(np.abs(here[:, 5])) > 0.05                   # beam.c1.u[2]: the in-plane deflection
    np.testing.assert_allclose(fmus[:, 1:], here[:, 1:], rtol=0, atol=1e-3)
    err = np.max(np.abs(fmus[:, 1:] - here[:, 1:]))
    print(f"\n[flexible FMUs] spin-up beam, {kind} block FMUs through the master, {stop:g} s: {err:.2g} m")
    return err


def test_spinup_beam_through_the_fmus_and_the_master(tmp_path):
    assert check_spinup(tmp_path, 2.0, "pythonfmu") < 1e-6


@pytest.mark.slow
def test_spinup_beam_through_the_standalone_fmus_and_the_master(tmp_path):
    """The standalone (C only) variant welded_c1_f10, built on demand, the default kind."""
    assert check_spinup(tmp_path, 2.0, "standalone") < 1e-6


@pytest.mark.slow
def test_spinup_beam_through_the_fmus_20_s(tmp_path):
    """The default kind over 20 s (the pythonfmu kind: 2 s above; 20 s took 90 s)."""
    check_spinup(tmp_path, 20.0, "standalone")


@pytest.mark.parametrize("entry", ["system.momentum", "system.energy[1]", "system.com"])
def test_totals_of_a_flexible_body_are_refused_in_one_line(entry, tmp_path, capsys):
    """Its share of the totals needs its modal states, which no output carries: rather than
    the rigid undeformed body's share (what was summed before), one line naming the entry and
    the unit, exit code 2."""
    path = spinup(tmp_path, 0.1, f'["{entry}"]')
    assert main(["simulate", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and repr(entry) in err[0] and "'beam'" in err[0] and "flexible body" in err[0]
