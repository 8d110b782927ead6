"""``titop-fmu simulate ... --animate`` on both engines, built-in balloon and system files;
``titop-fmu animate`` from a CSV or by running the system; the CSV left as it is."""

from pathlib import Path

import numpy as np
import pytest

from browser import scene_of
from fmu_fixtures import standalone_dir, standalone_paths  # noqa: F401  (every TITOP FMU of the default kind, built once)
from test_poses import decoded
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.io import read_result
from titop_fmu.viewer import Animation

ROOT = Path(__file__).resolve().parents[2]
TWO_BRANCH = ROOT / "examples" / "two_branch.toml"


def read(path):
    """``(header, values)`` of a result CSV."""
    t, columns = read_result(path)
    return ["t", *columns], np.column_stack([t, *columns.values()])


def frames_of(path) -> dict:
    data = scene_of(path)
    return {b["name"]: decoded(b, data) for b in data["bodies"]}


def worst(a: dict, b: dict) -> float:
    """Largest difference of position between two views' bodies (same sample times)."""
    assert a.keys() == b.keys()
    out = 0.0
    for name in a:
        assert np.allclose(a[name][0], b[name][0], atol=1e-6)
        out = max(out, float(np.max(np.abs(a[name][1] - b[name][1]))))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("system", ["balloon", str(ROOT / "examples" / "balloon.toml")])
def test_both_engines_animate_the_same_motion_and_leave_the_csv_as_it_was(system, tmp_path,
                                                                        standalone_dir):  # noqa: F811
    common = ["--stop", "0.6", "--quiet"]
    fmu = ["--engine", "fmu", "--workers", "0", "--fmu-dir", str(standalone_dir)]
    assert main(["simulate", system, *common, "--out", str(tmp_path / "in.csv"),
                 "--animate", str(tmp_path / "in.html")]) == 0
    assert main(["simulate", system, *common, *fmu, "--out", str(tmp_path / "fmu.csv"),
                 "--animate", str(tmp_path / "fmu.html")]) == 0
    assert main(["simulate", system, *common, *fmu, "--out", str(tmp_path / "plain.csv")]) == 0
    h1, d1 = read(tmp_path / "fmu.csv")
    h0, d0 = read(tmp_path / "plain.csv")
    assert h1 == h0 and np.array_equal(d1, d0)               # the outputs added for the view are not written
    if system != "balloon":                                  # the file lacks the balloon's position: added
        assert Animation("v.html", systemfile.read(system).system, "").extra()
    a, b = frames_of(tmp_path / "in.html"), frames_of(tmp_path / "fmu.html")
    assert len(next(iter(a.values()))[0]) == 31              # 0.6 s at 50 samples per second
    assert worst(a, b) <= 2 * scene_of(tmp_path / "in.html")["p_quantum"]
    assert max(np.ptp(p[:, 1]) for _, p, _ in a.values()) > 0.05          # something moves


def test_animate_shows_a_csv_or_runs_the_system(tmp_path, capsys):
    run = tmp_path / "run.csv"
    assert main(["simulate", str(TWO_BRANCH), "--stop", "1", "--out", str(run), "--quiet"]) == 0
    # the file records hub.c1.m[13..18] and every joint: enough to place every body
    assert main(["animate", str(TWO_BRANCH), str(run), "--out", str(tmp_path / "from_csv.html")]) == 0
    assert "wrote" in capsys.readouterr().err
    assert main(["animate", str(TWO_BRANCH), "--stop", "1", "--out", str(tmp_path / "ran.html"), "--quiet"]) == 0
    assert worst(frames_of(tmp_path / "from_csv.html"), frames_of(tmp_path / "ran.html")) \
        <= scene_of(tmp_path / "ran.html")["p_quantum"]
    balloon_csv = tmp_path / "balloon.csv"
    assert main(["simulate", "balloon", "--stop", "1", "--out", str(balloon_csv), "--quiet"]) == 0
    assert main(["animate", "balloon", str(balloon_csv), "--out", str(tmp_path / "b.html"), "--quiet"]) == 0
    assert main(["animate", "balloon", "--stop", "1", "--out", str(tmp_path / "b2.html"), "--quiet"]) == 0
    assert worst(frames_of(tmp_path / "b.html"), frames_of(tmp_path / "b2.html")) <= 1e-12


@pytest.mark.parametrize("argv, message", [
    (["animate", "balloon", "RUN", "--out", "v.html"], "RUN: cannot read a result CSV"),
    (["animate", "balloon", "two.csv", "--out", "v.html"], "two.csv: not a run of the balloon"),
    (["animate", "nothing.toml", "--out", "v.html"], "unknown system 'nothing.toml'"),
    (["animate", "balloon", "--out", "no/such/v.html"], "--out no/such/v.html: no folder no/such"),
    (["animate", "balloon", "two.csv", "--stop", "3"], "--stop and --dt apply to a run"),
    (["simulate", "balloon", "--animate", "no/such/v.html"], "--animate no/such/v.html: no folder"),
    (["simulate", "two.toml", "--animate", "v.html", "--trace", "hub.c3"], "hub has no point 'c3'"),
    (["animate", "pkg.ssp", "two.csv"], "pkg.ssp: the units of an SSP package are FMU files"),
    (["simulate", "balloon", "--out", "v.csv", "--animate", "./v.csv"], "--animate ./v.csv: the same file as --out"),
    (["animate", "balloon", "--out", "v.png"], "--out v.png: the 3-D view is an HTML page: name it VIEW.html"),
    (["animate", "balloon", "two.csv", "--out", "v"], "--out v: the 3-D view is an HTML page"),
    (["simulate", "balloon", "--animate", "v.csv"], "--animate v.csv: the 3-D view is an HTML page"),
])
def test_animate_errors_are_one_line_before_any_work(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.toml").write_text(TWO_BRANCH.read_text().replace('modelica = "', '# '))
    (tmp_path / "two.csv").write_text("t,arm.joint.q[3]\n0,0\n")
    monkeypatch.setattr("titop_fmu.system.System.simulate", lambda *a, **k: pytest.fail("a run started"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("titop-fmu: error:") and "\n" not in err and message in err, err
    assert not list(tmp_path.glob("*.html"))


def test_the_in_process_csv_names_a_whole_port_s_columns_as_the_master_does(tmp_path):
    """A ``record`` entry naming a whole port (``hub.c2.m``) is 18 columns with 18 names (it was
    one name over 18 columns: a CSV that no reader, ``animate`` included, could take back)."""
    text = TWO_BRANCH.read_text().replace('modelica = "', '# ')
    text = text.replace('record = [', 'record = ["hub.c2.m", ', 1)
    path = tmp_path / "two.toml"
    path.write_text(text)
    assert main(["simulate", str(path), "--stop", "0.2", "--out", str(tmp_path / "in.csv"), "--quiet"]) == 0
    assert main(["simulate", str(path), "--stop", "0.2", "--inprocess-units", "--workers", "0",
                 "--out", str(tmp_path / "master.csv"), "--quiet", "--no-stats"]) == 0
    header, data = read(tmp_path / "in.csv")
    assert header == read(tmp_path / "master.csv")[0] and len(header) == data.shape[1] == 1 + 18 + 10 + 21   # + inertial
    assert header[1:3] == ["hub.c2.m[1]", "hub.c2.m[2]"]
    assert main(["animate", str(path), str(tmp_path / "in.csv"), "--out", str(tmp_path / "v.html"), "--quiet"]) == 0


def test_results_are_written_with_the_usual_permissions(tmp_path):
    """As a file opened for writing would be (the temporary file they are moved from is 0600)."""
    import os
    umask = os.umask(0o022)
    try:
        assert main(["simulate", "balloon", "--stop", "0.1", "--out", str(tmp_path / "r.csv"), "--quiet",
                     "--animate", str(tmp_path / "v.html")]) == 0
    finally:
        os.umask(umask)
    assert (tmp_path / "r.csv").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "v.html").stat().st_mode & 0o777 == 0o644



@pytest.mark.parametrize("example, stop, turned", [pytest.param("spacecraft_flexible.toml", 10, 0.3, marks=pytest.mark.slow),
                                                    ("slew.toml", 15, 0.1)])
def test_a_closed_loop_run_is_drawn(example, stop, turned, tmp_path):
    """A torque given as a time signal (examples/spacecraft_flexible.toml), and the slew's
    controller, sensors and table (examples/slew.toml): the run is a closed loop, which
    ``simulate --animate`` drew not (a traceback; the slew's control units an unknown model);
    ``animate`` draws the same, and the bus turns in the view as the CSV says."""
    path, csv, view = ROOT / "examples" / example, tmp_path / "run.csv", tmp_path / "run.html"
    assert main(["simulate", str(path), "--stop", str(stop), "--out", str(csv), "--animate", str(view),
                 "--quiet"]) == 0
    assert main(["animate", str(path), "--stop", str(stop), "--out", str(tmp_path / "v.html"), "--quiet"]) == 0
    assert view.read_text() == (tmp_path / "v.html").read_text()
    t, _, R = frames_of(view)["bus"]
    t_csv, columns = read_result(csv)
    yaw = np.interp(t, t_csv, columns["bus.euler[3]"])
    assert yaw[-1] > turned
    np.testing.assert_allclose(np.arctan2(R[:, 1, 0], R[:, 0, 0]), yaw, atol=1e-3)
