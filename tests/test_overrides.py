"""``--set NAME=VALUE`` on a system file: unit parameters (elements, vectors, matrices, degrees),
initial states and free constant inputs, on both engines, the same as the file edited; bad
names and values in one line."""

import json

import numpy as np
import pytest
from marks import slow

from titop_fmu.cli import main
from titop_fmu.cosim import systemfile

from test_cli import ROOT, read

SPACECRAFT = ROOT / "examples" / "spacecraft.toml"
SETS = ["link1.mass=1.3", "link1.inertia[1,1]=0.06", "link1.com=[0,-0.35,0.02]", "link2.q0=10deg",
        "link3.q0=0.4", "bus.twist0[5]=0.2", "bus.ext.w=[0,0,0,0.05,1.2,-0.04]", "slider.axis=[1,0.3,-0.3]"]


def edited(tmp_path):
    """The spacecraft file with the same values written in (as JSON)."""
    d = systemfile._load(SPACECRAFT)
    u = d["units"]
    u["link1"]["mass"] = 1.3
    u["link1"]["inertia"][0][0] = 0.06
    u["link1"]["com"] = [0, -0.35, 0.02]
    u["link2"]["q0"] = "10 deg"
    u["link3"]["q0"] = 0.4                      # not in the file: the model's default before
    u["bus"]["twist0"][4] = 0.2
    u["slider"]["axis"] = [1, 0.3, -0.3]
    d["inputs"]["bus.ext.w"] = [0, 0, 0, 0.05, 1.2, -0.04]
    d.pop("modelica")
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("engine, stop", [("inprocess", "1.0"), *slow(("fmu", "0.3"))])
def test_set_equals_the_file_edited(tmp_path, engine, stop):
    common = ["--engine", engine, "--stop", stop, "--quiet"]
    args = [a for s in SETS for a in ("--set", s)]
    assert main(["simulate", str(SPACECRAFT), *common, *args, "--out", str(tmp_path / "set.csv")]) == 0
    assert main(["simulate", str(edited(tmp_path)), *common, "--out", str(tmp_path / "file.csv")]) == 0
    assert main(["simulate", str(SPACECRAFT), *common, "--out", str(tmp_path / "plain.csv")]) == 0
    head, a = read(tmp_path / "set.csv")
    _, b = read(tmp_path / "file.csv")
    _, c = read(tmp_path / "plain.csv")
    assert np.array_equal(a, b)
    assert np.abs(a - c).max() > 1e-2                  # the overrides changed the run


@pytest.mark.parametrize("engine", ["inprocess", "fmu"])
@pytest.mark.parametrize("item, message", [
    ("link1.mas=2", "parameter 'link1.mas': unknown parameter (did you mean 'link1.mass'"),
    ("lnk1.q0=2", "parameter 'lnk1.q0': unknown parameter (did you mean 'link1.q0'"),
    ("boom.p.m=[0]", "parameter 'boom.p.m': unknown parameter"),           # a linked input: not free
    ("link1.inertia[4,1]=2", "parameter 'link1.inertia[4,1]': no such element: link1.inertia has shape (3, 3)"),
    ("link1.com=[0,-1]", "parameter 'link1.com': expected shape (3,), got (2,)"),
    ("link1.mass=-2", "parameter 'link1.mass': must be >= 0.0, got -2.0"),
    ("link1.axis=[0,0,0]", "parameter 'link1.axis': joint axis must be a non-zero vector"),
    ("bus.ext.w=[0,0,0]", "parameter 'bus.ext.w': expected shape (6,), got (3,)"),
    ("link1.q0=abc", "parameter 'link1.q0': cannot read the value 'abc'"),
])
def test_bad_names_and_values_in_one_line(tmp_path, capsys, engine, item, message):
    out = tmp_path / "x.csv"
    assert main(["simulate", str(SPACECRAFT), "--engine", engine, "--stop", "0.1", "--set", item, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"titop-fmu: error: {message}") and err.count("\n") == 1, err
    assert not out.exists()
