"""The balloon system (docs/balloon-scenario.md) in-process: invariants and CLI."""

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from balloon_runs import effective_parameters

from titop_fmu import invariants
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ParameterError
from titop_fmu.io import parse_set
from titop_fmu.scenarios import balloon
from titop_fmu.titop import monolithic

ROOT = Path(__file__).resolve().parents[2]


def test_the_balloon_is_defined_once():
    """examples/balloon.toml, the built-in system of units (FMUs and in-process units run it)
    and the monolithic engine's blocks (its twin) are the same system."""
    built = balloon.system()
    toml = systemfile.read(ROOT / "examples" / "balloon.toml").system
    assert effective_parameters(toml) == effective_parameters(built)
    assert toml.links == built.links and toml.connections == built.connections
    assert toml.inputs.keys() == built.inputs.keys()
    assert all(np.array_equal(toml.inputs[k], built.inputs[k]) for k in built.inputs)
    s = balloon.build()
    assert list(s.blocks) == list(built.units)
    assert [(l.parent, l.child_port, l.child, l.parent_port) for l in s.links] == \
        [(c.split(".")[0], c.split(".")[1], p.split(".")[0], p.split(".")[1]) for c, p in built.links]


def test_the_observer_gives_the_columns_of_the_states(balloon_run):
    """The master's CSV columns come from the units' outputs (the motion vector at the tip C,
    the joints' q), the monolithic run's from its states: both agree on a run, derivatives
    included (finite differences of the columns)."""
    s, tr = balloon_run
    k = slice(0, 2001, 97)
    rec = monolithic.recorded(balloon.system(), s, tr.y[k])
    got = np.array([balloon.observer()(r) for r in rec])           # (n, 3, 9): values, d/dt, d2/dt2
    cols = balloon.columns(s, tr.y)
    assert np.allclose(got[:, 0], cols[k], rtol=0, atol=1e-12)
    i = np.arange(2001)[k][1:-1]
    d1 = (cols[i + 1] - cols[i - 1]) / 0.02
    d2 = (cols[i + 1] - 2 * cols[i] + cols[i - 1]) / 0.01 ** 2
    assert np.allclose(got[1:-1, 1], d1, rtol=0, atol=2e-3 * (1 + np.abs(d1).max()))
    assert np.allclose(got[1:-1, 2], d2, rtol=0, atol=2e-2 * (1 + np.abs(d2).max()))


def test_center_of_mass_stays_put(balloon_run):
    """Buoyancy cancels the total weight: the centre of mass never moves."""
    s, tr = balloon_run
    com = np.array([invariants.center_of_mass(s, y) for y in tr.y[::10]])
    assert np.max(np.abs(com - com[0])) <= 1e-8
    assert np.ptp(tr.y[:, 6:9], axis=0).max() > 0.1          # while the balloon itself moves


@pytest.mark.slow
def test_energy_constant_without_damping(balloon_undamped_run):
    s, tr = balloon_undamped_run
    E = np.array([invariants.energy(s, y) for y in tr.y[::10]])
    assert np.max(np.abs(E - E[0])) / abs(E[0]) <= 1e-8


@pytest.mark.slow
def test_energy_never_increases_with_damping(balloon_run):
    s, tr = balloon_run
    E = np.array([invariants.energy(s, y) for y in tr.y])
    assert np.max(np.diff(E)) <= 1e-9 * abs(E[0])             # integration noise only
    assert E[-1] < E[0] - 50.0                                 # and the dampers do dissipate


def test_columns_and_angles(balloon_run):
    s, tr = balloon_run
    cols = balloon.columns(s, tr.y)
    assert cols.shape == (2001, 9)
    assert np.allclose(cols[0], [0, 0, 0, 0, 0, 0, 0, np.radians(170), np.radians(-170)])


def test_parse_set():
    assert parse_set(["k=60", "theta1_0=170deg", "t=[1,0,0]"], balloon.DEFAULTS) == {
        "k": 60.0, "theta1_0": pytest.approx(np.radians(170)), "t": [1.0, 0.0, 0.0]}
    with pytest.raises(ParameterError, match="'kk'"):
        parse_set(["kk=1"], balloon.DEFAULTS)
    with pytest.raises(ParameterError, match="'k'"):
        parse_set(["k=abc"], balloon.DEFAULTS)
    with pytest.raises(ParameterError, match="'t'"):
        parse_set(["t=1"], balloon.DEFAULTS)


def test_bad_scenario_values_name_the_parameter():
    with pytest.raises(ParameterError, match="'slider.mass'"):
        balloon.build({"m_S": -1.0})
    with pytest.raises(ParameterError, match="'pendulum1.axis'"):
        balloon.build({"r1": [0.0, 0.0, 0.0]})


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float)


def test_cli_simulate_writes_the_csv(tmp_path, balloon_run):
    out = tmp_path / "run.csv"
    assert main(["simulate", "balloon", "--engine", "inprocess", "--stop", "0.5", "--out", str(out),
                 "--quiet"]) == 0
    header, data = read_csv(out)
    assert header == list(balloon.COLUMNS)
    assert data.shape == (51, 10) and np.allclose(np.diff(data[:, 0]), 0.01)
    s, tr = balloon_run
    assert np.allclose(data[:, 1:], balloon.columns(s, tr.y[:51]), atol=1e-10)
    out2 = tmp_path / "k.csv"
    assert main(["simulate", "balloon", "--stop", "0.5", "--out", str(out2), "--quiet", "--set", "k=80"]) == 0
    assert np.max(np.abs(read_csv(out2)[1][:, 7] - data[:, 7])) > 1e-6


@pytest.mark.slow
def test_cli_reports_bad_set_names():
    r = subprocess.run([sys.executable, "-m", "titop_fmu.cli", "simulate", "balloon", "--set", "kk=1",
                        "--stop", "0.1", "--out", "unused.csv"], capture_output=True, text=True)
    assert r.returncode == 2 and "parameter 'kk'" in r.stderr


@pytest.mark.slow
def test_the_cli_starts_without_the_monolithic_integrator():
    """scipy.integrate takes 0.4 s to import and only the in-process engine integrates with it:
    starting titop-fmu (every FMU run) must not import it."""
    r = subprocess.run([sys.executable, "-c", "import sys, titop_fmu.cli, titop_fmu.cosim.workers; "
                        "print('scipy.integrate' in sys.modules)"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr
