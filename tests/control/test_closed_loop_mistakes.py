"""Careless closed loops, as a new user writes them: one line ``titop-fmu: error: ...``, exit
code 2, before any work, on both engines and in linearize; no file left; an expression that
tries to run code runs nothing."""

import pytest
from scipy.io import savemat

from closed_loops import PLANT
from titop_fmu.cli import main

PENDULUM = """
links = [["base.c1", "link.p"]]
record = ["link.joint.q[3]"]
{top}

""" + PLANT + """{units}

[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
{inputs}
"""
TO_TAU = 'connections = [["link.joint.q[3]", "c.u"], ["c.y", "link.joint.tau"]]'

#: name -> (top-level lines, units, inputs, files {name: content}, the message's telling part)
CASES = {
    "an unknown name": ("", "", '"link.joint.tau" = "3*sin(omega*t)"', {}, "unknown name 'omega'; known: deg, e, pi, t"),
    "bad syntax": ("", "", '"link.joint.tau" = "3*sin(2*t"', {}, "cannot read '3*sin(2*t': '(' was never closed"),
    "code": ("", "", '"link.joint.tau" = "__import__(\'os\').system(\'touch hacked\')"', {},
             "an attribute (a.b) is not allowed"),
    "a missing column": ("", "", '"link.joint.tau" = { table = "d.csv", column = "tau" }', {"d.csv": "t,x\n0,1\n1,2\n"},
                         "d.csv has no column 'tau'; its columns: t, x"),
    "unsorted times": ("", "", '"link.joint.tau" = { table = "d.csv" }', {"d.csv": "t,tau\n0,1\n2,2\n1,3\n"},
                       "the times must increase strictly: t = 2 (line 3) then 1 (line 4)"),
    "a NaN in a table": ("", "", '"link.joint.tau" = { table = "d.csv" }', {"d.csv": "t,tau\n0,1\n1,nan\n"},
                         "line 3: column 'tau' is nan"),
    "no table file": ("", "", '"link.joint.tau" = { table = "nope.csv" }', {}, "no table file"),
    "a misspelled source": ("", "", '"link.joint.tau" = { source = "stpe", time = 1 }', {}, "did you mean 'step'"),
    "a .mat of the wrong sizes": (TO_TAU, '[units.c]\nmodel = "state_space"\nfile = "c.mat"\nsample_time = 0.01',
                                  "", {"c.mat": {"A": [[1.0, 0.0], [0.0, 1.0]], "B": [[1.0], [0.0], [0.0]],
                                                 "C": [[1.0, 0.0]]}},
                                  "parameter 'c.A': expected 3x3 (B has 3 rows), got (2, 2)"),
    "a .mat without the matrices": (TO_TAU, '[units.c]\nmodel = "gain"\nfile = "c.mat"', "", {"c.mat": {"G": [[1.0]]}},
                                    "c.mat holds none of K (it holds: G)"),
    "a sample time of 0": (TO_TAU, '[units.c]\nmodel = "zoh"\nsample_time = 0', "", {},
                           "parameter 'c.sample_time': must be > 0, got 0"),
    "a negative sample time": (TO_TAU, '[units.c]\nmodel = "state_space"\nA = [[0]]\nB = [[1]]\nC = [[1]]\n'
                               'sample_time = -0.1', "", {}, "parameter 'c.sample_time': must be > 0, got -0.1"),
    "an algebraic loop": ('connections = [["link.joint.q[1]", "c.u"], ["c.y", "link.joint.tau"]]',
                          '[units.c]\nmodel = "gain"\nK = [[0.5]]', "", {}, "algebraic loop through control units: c"),
    "a ring of gains": ('connections = [["a.y", "b.u"], ["b.y", "a.u"], ["a.y", "link.joint.tau"]]',
                        '[units.a]\nmodel = "gain"\nK = [[0.5]]\n[units.b]\nmodel = "gain"\nK = [[0.5]]', "", {},
                        "algebraic loop through control units"),
    "a misspelled parameter": (TO_TAU, '[units.c]\nmodel = "pid"\nkpp = 3', "", {}, "did you mean 'kp'"),
    "a dangling controller input": ('connections = [["c.y", "link.joint.tau"]]', '[units.c]\nmodel = "gain"\nK = [[1]]',
                                    "", {}, "dangling required input(s): c.u"),
    "a sensor of nothing": ('connections = [["s.y", "link.joint.tau"]]', '[units.s]\nmodel = "sensor"\nof = "link.com.positon"',
                            "", {}, "did you mean 'com.position'"),
    "noise without a sample time": ('connections = [["s.y", "link.joint.tau"]]',
                                    '[units.s]\nmodel = "sensor"\nof = "link.joint.q[3]"\nnoise = 0.1', "", {},
                                    "noise is drawn at sample instants: give the sensor a sample_time"),
    "PID derivative without its filter": (TO_TAU, '[units.c]\nmodel = "pid"\nkd = 3', "", {},
                                          "a derivative action needs its filter time constant tf > 0"),
}


def write(tmp_path, case):
    top, units, inputs, files, _ = CASES[case]
    for name, content in files.items():
        if isinstance(content, dict):
            savemat(tmp_path / name, content)
        else:
            (tmp_path / name).write_text(content)
    path = tmp_path / "s.toml"
    path.write_text(PENDULUM.format(top=top, units=units, inputs=inputs))
    return path


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("titop-fmu: error: "), err
    return lines[0]


@pytest.mark.parametrize("engine", ["inprocess", "fmu"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_careless_closed_loop_is_one_line(case, engine, tmp_path, monkeypatch, no_run, capsys):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, case)
    assert main(["simulate", str(path), "--engine", engine, "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert CASES[case][4] in one_line(capsys)
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "hacked").exists()


@pytest.mark.parametrize("case", ["an unknown name", "a .mat of the wrong sizes", "an algebraic loop"])
def test_linearize_says_the_same(case, tmp_path, capsys):
    path = write(tmp_path, case)
    assert main(["linearize", str(path), "--out", str(tmp_path / "l.mat"), "--quiet"]) == 2
    assert CASES[case][4] in one_line(capsys)
    assert not (tmp_path / "l.mat").exists()


@pytest.mark.parametrize("name", ["spinup", "discrete"])
def test_an_ssp_package_of_a_closed_loop_is_refused(name, tmp_path, capsys):
    """Time signals and control units have no block FMU to put in an SSP package: one line that
    says to export one FMU (it was a traceback, float() of a signal)."""
    from closed_loops import system
    out = tmp_path / "x.ssp"
    assert main(["export", str(system(tmp_path, name)), "--ssp", str(out)]) == 2
    assert "export it as one FMU (--out NAME.fmu)" in one_line(capsys)
    assert not out.exists()


def test_a_discrete_controller_is_not_linearized(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(PENDULUM.format(top=TO_TAU, units='[units.c]\nmodel = "zoh"\nsample_time = 0.01', inputs=""))
    assert main(["linearize", str(path), "--out", str(tmp_path / "l.mat"), "--quiet"]) == 2
    assert "'c' is a discrete block (sample_time): a linear model here is continuous" in one_line(capsys)


def test_set_gives_an_input_a_signal_or_refuses_it(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(PENDULUM.format(top="", units="", inputs=""))
    out = tmp_path / "o.csv"
    assert main(["simulate", str(path), "--stop", "0.4", "--out", str(out), "--quiet",
                 "--set", "link.joint.tau=where(t < 0.2, 2, 0)"]) == 0
    assert out.exists()
    assert main(["simulate", str(path), "--stop", "0.4", "--out", str(tmp_path / "p.csv"), "--quiet",
                 "--set", "link.joint.tau=where(t < 0.2, 2, x)"]) == 2
    assert "unknown name 'x'" in one_line(capsys)


def test_a_signal_that_is_not_finite_stops_the_run_naming_it(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(PENDULUM.format(top="", units="", inputs='"link.joint.tau" = "sqrt(0.25 - t)"'))
    assert main(["simulate", str(path), "--stop", "0.5", "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = one_line(capsys)
    assert "the signal 'sqrt(0.25 - t)' is nan at t = 0.25" in err, err
    assert not (tmp_path / "o.csv").exists()


def test_models_lists_and_describes_the_control_units(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "Control units" in out and "  pid " in out and "  sensor " in out
    assert main(["models", "state_space"]) == 0
    out = capsys.readouterr().out
    assert "ports: u in, y out" in out and "  A            required" in out and "sample_time" in out
    assert main(["models", "pidd"]) == 2
    assert "unknown model 'pidd' (did you mean 'pid'?)" in one_line(capsys)
