"""Flexible bodies in system files, as the issue's contract writes them: a [units.NAME.flexible]
table (the beam generator, or a neutral modal file) turns the unit into the flexible variant of
its model; the runs; and bad data, one line naming the key or field, exit code 2."""

import re
import textwrap

import numpy as np
import pytest
from flexible_systems import simo_beam

from titop_fmu.cli import main
from titop_fmu.simulation import read_file

CONTRACT = textwrap.dedent("""\
    links = [["hub.c1", "beam.p"]]
    record = ["beam.c1.position", "beam.c1.u"]

    [units.hub]
    model = "imposed_motion_base_c1"   # or any other block; its body stays rigid
    mass = 1.0
    inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    com = [0, 0, 0]
    "c1.r" = [0, 0, 0]
    twist0 = [0, 0, 0, 0, 0, 6.0]      # spinning about z at 6 rad/s

    [units.beam]
    model = "welded_c1"                # the block; [units.beam.flexible] replaces its rigid body
    gravity = [0, 0, 0]

    [units.beam.flexible]
    beam = { length = 10.0, EA = 2.8e7, EIy = 1.4e4, EIz = 1.4e4, GJ = 1.4e4, rhoA = 1.2, rhoJ = 6e-4 }
    axis = [1, 0, 0]                   # the beam runs from P along this axis of the block's frame
    elements = 40                      # finite elements of the generator
    modes = 10                         # clamped modes kept
    stiffening = true
    ports = [10.0]                     # c1, c2, ... at these distances from P along the beam

    [inputs]
    "beam.c1.w" = [0, 0, 0, 0, 0, 0]
    """)


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_contract_reads_as_the_flexible_model_and_runs(tmp_path, capsys):
    """welded_c1 with 10 modes is welded_c1_f10, its modal data the generator's; the spinning
    hub carries the beam round unbent (its modes see no load at a steady spin): the tip at
    10 (cos 6t, sin 6t)."""
    path = write(tmp_path, CONTRACT)
    spec = read_file(path).system.units["beam"]
    assert spec.model == "welded_c1_f10"
    d = simo_beam()
    assert spec.parameters["flex.omega[3]"] == d.omega[2] and spec.parameters["c1.r[1]"] == 10.0
    assert spec.parameters["flex.stiffening"] == 1 and "mass" not in spec.parameters
    out = tmp_path / "o.csv"
    assert main(["simulate", str(path), "--stop", "0.3", "--dt", "0.1", "--out", str(out), "--quiet"]) == 0
    rows = np.loadtxt(out, delimiter=",", skiprows=1)
    t = rows[:, 0]
    np.testing.assert_allclose(rows[:, 1:3], 10 * np.column_stack([np.cos(6 * t), np.sin(6 * t)]), atol=1e-9)
    np.testing.assert_allclose(rows[:, 4:10], 0.0, atol=1e-12)


def test_linearize_gives_the_rotating_frequencies(tmp_path, capsys):
    """titop-fmu linearize FILE --set hub.twist0=[0,0,0,0,0,W] --out X.mat: the eigenvalues of A
    hold the rotating cantilever's frequencies (and the hub's kinematic +-W j in the co-rotating
    chart): the first chordwise 5.3026, the first flapwise 11.319 rad/s at 10 rad/s."""
    from scipy.io import loadmat
    path = write(tmp_path, CONTRACT)
    out = tmp_path / "X.mat"
    assert main(["linearize", str(path), "--set", "hub.twist0=[0,0,0,0,0,10]", "--out", str(out)]) == 0
    lam = np.linalg.eigvals(loadmat(out)["A"])
    w = np.sort(np.abs(lam[lam.imag > 1e-6].imag))
    np.testing.assert_allclose(w[[0, 3]], [5.30263516, 11.31891954], rtol=1e-8)
    np.testing.assert_allclose(w[[1, 2]], 10.0, rtol=1e-12)


@pytest.mark.parametrize("suffix", [".npz", ".mat"])
def test_a_neutral_modal_file_gives_the_same_model(tmp_path, suffix):
    """modal = "panel.npz" (relative to the system file), modes = n: the same FMI parameters as the
    generator's model of the same beam (its first n modes)."""
    simo_beam(12).save(tmp_path / f"panel{suffix}")
    text = re.sub(r"beam = \{.*\}\naxis.*\nelements.*\n", f'modal = "panel{suffix}"\n', CONTRACT)
    text = text.replace("ports = [10.0]", "ports = [1]")
    a = read_file(write(tmp_path, CONTRACT, "a.toml")).system.units["beam"].parameters
    b = read_file(write(tmp_path, text, "b.toml")).system.units["beam"].parameters
    assert a.keys() == b.keys()
    np.testing.assert_array_equal(list(a.values()), list(b.values()))


def test_stiffening_false_and_damping(tmp_path):
    text = CONTRACT.replace("stiffening = true", "stiffening = false\ndamping = 0.02")
    p = read_file(write(tmp_path, text)).system.units["beam"].parameters
    assert p["flex.stiffening"] == 0 and p["flex.zeta[10]"] == 0.02


def _bad_panel(tmp_path):
    d = simo_beam(4)
    arrays = {k: v for k, v in d.arrays().items() if k != "format"}
    arrays["omega"] = d.omega * np.array([1, 1, -1, 1])
    np.savez(tmp_path / "bad.npz", **arrays)
    return 'modal = "bad.npz"\nmodes = 4\nports = [1]\n'


CASES = {
    "a negative EA": (("EA = 2.8e7", "EA = -2.8e7"), "units.beam.flexible.beam.EA: must be positive"),
    "a port off the beam": (("ports = [10.0]", "ports = [12.0]"),
                            "units.beam.flexible.ports[0]: 12.0 is off the beam (0 to 10 m from P)"),
    "two ports for one": (("ports = [10.0]", "ports = [5.0, 10.0]"), "units.beam.flexible.ports: the model has 1"),
    "a misspelled key": (("elements = 40", "elemnts = 40"), "units.beam.flexible.elemnts: unknown key (did you mean"),
    "no modes": (("modes = 10", ""), "units.beam.flexible.modes: missing"),
    "a mass given": (('gravity = [0, 0, 0]\n\n[units.beam.flexible]', 'gravity = [0, 0, 0]\nmass = 3.0\n\n'
                      '[units.beam.flexible]'), "units.beam.mass: the flexible body gives its mass properties"),
    "a loop closure": (('model = "welded_c1"', 'model = "loop_closure"'), "replaces the rigid body of a body block"),
    "a negative frequency": (None, "units.beam.flexible.omega: the frequencies of the clamped modes must be positive, "
                                   "got -23.8 at mode 3"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_flexible_data_is_one_line(case, tmp_path, no_run, capsys):
    change, message = CASES[case]
    if change is None:
        text = re.sub(r"beam = \{.*\}\naxis.*\nelements.*\nmodes.*\n", "", CONTRACT)
        text = re.sub(r"ports = \[10.0\].*\n", _bad_panel(tmp_path), text)
    else:
        assert change[0] in CONTRACT
        text = CONTRACT.replace(*change)
    path = write(tmp_path, text)
    assert main(["simulate", str(path), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
