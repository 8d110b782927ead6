"""``titop-fmu plot``: chosen columns of a result CSV as a figure, SI units in the labels where
they are known, one-line errors."""

import re
from pathlib import Path

import pytest

from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.plot import describe, select

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
SPACECRAFT = ROOT / "examples" / "spacecraft.toml"


def texts(svg: Path) -> set:
    """The texts of a figure written as SVG (matplotlib writes each as a comment)."""
    return set(re.findall(r"<!-- (.*?) -->", svg.read_text()))


def test_units_come_from_the_system_the_port_or_the_balloon():
    cs = systemfile.read(SPACECRAFT).system
    assert describe("link1.joint.q[3]", cs) == ("rad", "joint motion [qdd, qd, q]: joint position q")
    assert describe("slider.joint.q[2]", cs)[0] == "m/s"                  # a prismatic joint
    assert describe("slider.joint.q[2]")[0] is None                       # rad/s or m/s: not known without it
    assert describe("bus.p.m[13]") == ("m", "position x")
    assert describe("bus.p.m[17]")[0] == "rad"
    assert describe("arm.p.w[5]") == ("N.m", "torque T_y")
    assert describe("theta1") == ("rad", "")
    assert describe("boom.tip.position[2]") == ("m", "position of the point tip in R_i")     # inertial records
    assert describe("bus.com.velocity[4]")[0] == "rad/s" and describe("bus.euler[1]")[0] == "rad"
    assert describe("bus.position[1]") == (None, "")                      # a point's quantity, no point
    assert describe("t") == ("s", "")
    assert describe("system.momentum[4]") == ("kg.m2/s", "system: H_I,x")          # the system's totals
    assert describe("system.energy[2]", cs) == ("J", "system: kinetic T")
    assert describe("system.com[3]")[0] == "m" and describe("system.momentum[7]") == (None, "")


def test_columns_by_name_or_pattern_in_the_order_asked():
    labels = ["t1", "arm.joint.q[1]", "arm.joint.q[3]", "tip.joint.q[3]"]
    assert select(labels, ["*.joint.q[3]", "t1"]) == ["arm.joint.q[3]", "tip.joint.q[3]", "t1"]
    assert select(labels, ["arm.joint.q[*]"]) == ["arm.joint.q[1]", "arm.joint.q[3]"]
    assert select(labels, None) == labels


@pytest.mark.slow
def test_plot_writes_the_figure_with_units(tmp_path, capsys):
    run = tmp_path / "sc.csv"
    assert main(["simulate", str(SPACECRAFT), "--stop", "0.5", "--out", str(run), "--quiet"]) == 0
    svg = tmp_path / "sc.svg"
    assert main(["plot", str(run), "--system", str(SPACECRAFT), "--columns", "bus.p.m[1*]", "slider.joint.q[*]",
                 "--out", str(svg)]) == 0
    found = texts(svg)
    assert {"bus.p.m[13] [m]", "bus.p.m[16] [rad]", "slider.joint.q[3] [m]", "slider.joint.q[2] [m/s]",
            "t [s]"} <= found
    assert "link1.joint.q[3] [rad]" not in found                          # not chosen
    assert main(["plot", str(run), "--by-unit", "--out", str(svg)]) == 0
    found = texts(svg)
    assert {"[m]", "[rad]", "[rad/s]", "bus.p.m[13]", "link3.joint.q[3]"} <= found
    assert main(["plot", str(run), "--columns", "link3.joint.q[3]"]) == 0     # default: beside the CSV
    assert (tmp_path / "sc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(run), "--columns", "link3.joint.q[3]", "--out", str(tmp_path / "f.pdf")]) == 0
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("argv, message", [
    (["run.csv", "--out", "f.jpg"], "--out f.jpg: the figure's format comes from its suffix: .png, .pdf, .svg"),
    (["run.csv", "--columns", "nope"], "--columns nope: no such column; columns: a.joint.q[3], b"),
    (["missing.csv"], "missing.csv: cannot read a result CSV"),
    (["run.csv", "--system", "nope.toml"], "--system nope.toml: not 'balloon' and no such system file"),
    (["bad.csv"], "bad.csv: the times must increase and every value be finite"),
])
def test_plot_errors_are_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.csv").write_text("t,a.joint.q[3],b\n0,1,2\n1,2,3\n")
    (tmp_path / "bad.csv").write_text("t,b\n0,1\n1,nan\n")
    assert main(["plot", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("titop-fmu: error:") and "\n" not in err and message in err, err
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.jpg"))


@pytest.mark.slow
@pytest.mark.filterwarnings("error")
def test_too_many_subplots_are_refused(tmp_path, capsys):
    run = tmp_path / "wide.csv"
    run.write_text("t," + ",".join(f"c{i}" for i in range(30)) + "\n" + "0," + ",".join("0" * 30) + "\n")
    assert main(["plot", str(run)]) == 2
    assert "30 subplots: at most 24" in capsys.readouterr().err
    assert main(["plot", str(run), "--by-unit"]) == 0                       # one group: units unknown
