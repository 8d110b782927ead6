"""Numbers with their units everywhere a number goes: in a system file (parameters, inputs,
list elements, sources), in --set (list elements too), --vary and --grid; converted by pint
to the unit each value is declared in (the catalog's, an FMU's), a wrong dimension one line
naming the field."""

import json

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.cli.linearize import _grid
from titop_fmu.cosim import systemfile
from titop_fmu.fmu import catalog
from titop_fmu.quantities import UnitError, pint_unit, quantity, registry
from titop_fmu.simulation import read_file

from test_cli import ROOT

ARM = ROOT / "examples" / "arm.toml"


@pytest.mark.parametrize("text, unit, si", [
    ("30 deg", "rad", np.pi / 6), ("30deg", "rad", np.pi / 6), ("90 degrees", "rad", np.pi / 2),
    ("3 deg/s", "rad/s", np.radians(3)), ("60 rpm", "rad/s", 2 * np.pi), ("5 mm", "m", 0.005),
    ("25 g", "kg", 0.025), ("3 N", "N", 3.0), ("2 kN m", "N.m", 2000.0), ("2 kN*m", "N.m/rad", 2000.0),
    ("1500 g cm^2", "kg.m2", 1.5e-4), ("9.81 m/s^2", "m/s2", 9.81), ("200 N m s", "N.m.s/rad", 200.0),
    ("3", "kg", 3.0), ("-0.5", None, -0.5), ("2 km", None, 2000.0), ("10 deg", None, np.radians(10)),
])
def test_a_number_with_its_unit_is_converted_to_the_declared_unit(text, unit, si):
    assert quantity(text, unit) == pytest.approx(si, rel=1e-15, abs=0)


@pytest.mark.parametrize("text, unit, message", [
    ("3 m", "rad", "'3 m' is a length, not a number or an angle (the value is in rad)"),
    ("3 deg", "kg", "'3 deg' is a number or an angle, not a mass (the value is in kg)"),
    ("3 N", "N.m", "'3 N' is a force, not a torque (the value is in N.m)"),
    ("3 foo", "m", "cannot read '3 foo' ('foo' is not defined"),
    ("nan m", "m", "'nan m' is not a finite number"),
    ("", "m", "an empty text is not a number"),
])
def test_a_wrong_unit_is_one_line_naming_the_field(text, unit, message):
    with pytest.raises(UnitError) as e:
        quantity(text, unit, "units.link.q0")
    assert str(e.value).startswith("units.link.q0: ") and message in str(e.value) and "\n" not in str(e.value)


def test_every_unit_the_catalog_declares_is_one_pint_reads():
    """Every parameter and port unit of every model (``kg.m2``, ``N.m.s/rad``, ``m/s2``...)."""
    units = {v.unit for kind in catalog.KINDS for v in catalog.interface(kind, 2 if catalog.KINDS[kind].has_children
                                                                           else 0).variables if v.unit}
    assert {"kg.m2", "N.m.s/rad", "m/s2", "rad/s", "N/rad", "1"} <= units
    for unit in units:
        registry().parse_units(pint_unit(unit))


def test_a_file_written_with_units_is_the_file_in_si(tmp_path):
    """The arm with its values in grams, millimetres, degrees, rpm, N m, list elements included,
    in [inputs] and in a source's parameters: the same system as in SI, to the last bit or one."""
    text = ARM.read_text()
    for si, with_units in (("mass = 2.0", 'mass = "2000 g"'), ('com = [0.0, -0.5, 0.0]', 'com = [0.0, "-500 mm", 0.0]'),
                           ("d = 12.0", 'd = "12 N m s"'),
                           ('"link1.joint.tau" = 25.0', '"link1.joint.tau" = "0.025 kN m"'),
                           ('"link3.c1.w" = [0, 0, 0, 0, 0, 0]', '"link3.c1.w" = [0, "0 N", 0, "0 mN m", 0, 0]')):
        assert si in text
        text = text.replace(si, with_units, 1)
    text = text.replace('[units.link1]\n', '[units.link1]\nq0 = "10 deg"\nqd0 = "6 rpm"\nmount = ["3 deg", 0, 0]\n')
    path = tmp_path / "arm_units.toml"
    path.write_text(text)
    a, b = read_file(path).system, read_file(ARM).system
    b.units["link1"].parameters.update({"q0": np.radians(10), "qd0": 0.2 * np.pi, "mount[1]": np.radians(3),
                                        "mount[2]": 0.0, "mount[3]": 0.0})
    for name in b.units:
        pa, pb = a.units[name].parameters, b.units[name].parameters
        assert pa.keys() == pb.keys()
        assert all(pa[k] == pytest.approx(pb[k], rel=2e-16, abs=0) for k in pb), name
    assert np.allclose(a.inputs["link3.c1.w"], 0.0) and a.inputs["link1.joint.tau"] == pytest.approx(25.0, rel=1e-15)


@pytest.mark.parametrize("old, new, message", [
    ("q0 = 0.3", 'q0 = "0.3 m"', "units.link1.q0: '0.3 m' is a length"),
    ('"link1.joint.tau" = 25.0', '"link1.joint.tau" = "25 N"', "inputs.link1.joint.tau: '25 N' is a force, not a torque"),
    ('"link3.c1.w" = [0, 0, 0, 0, 0, 0]', '"link3.c1.w" = [0, 0, 0, "1 N", 0, 0]',
     "inputs.link3.c1.w[4]: '1 N' is a force, not a torque (the value is in N.m)"),
    ("d = 12.0", 'd = "12 kg"', "units.link1.d: '12 kg' is a mass"),
])
def test_a_unit_of_the_wrong_dimension_in_a_file_is_one_line(tmp_path, capsys, old, new, message):
    text = ARM.read_text().replace("[units.link1]\n", "[units.link1]\nq0 = 0.3\n")
    assert old in text
    path = tmp_path / "arm.toml"
    path.write_text(text.replace(old, new, 1))
    assert main(["simulate", str(path), "--stop", "0.1", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.csv").exists()


def test_set_takes_units_in_list_elements_as_a_file_does(tmp_path):
    """``--set "link1.mount=[3 deg, 0, 0]"``, ``--set "link2.com=[0, -400 mm, 0]"``, a scalar in
    grams and an input in kN m: the same run as those values written in SI."""
    common = ["simulate", str(ARM), "--stop", "0.5", "--quiet"]
    units = ["link1.mount=[3 deg, 0, 0]", "link2.com=[0, -400 mm, 0]", "link3.mass=1000 g",
             "link1.joint.tau=0.02 kN m", "link2.q0=5deg"]
    si = ["link1.mount=[0.05235987755982988,0,0]", "link2.com=[0,-0.4,0]", "link3.mass=1.0",
          "link1.joint.tau=20", f"link2.q0={float(np.radians(5))!r}"]
    for name, items in (("units", units), ("si", si)):
        assert main([*common, *[a for s in items for a in ("--set", s)], "--out", str(tmp_path / f"{name}.csv")]) == 0
    a, b = (np.loadtxt(tmp_path / f"{n}.csv", delimiter=",", skiprows=1) for n in ("units", "si"))
    assert np.abs(a - b).max() <= 1e-12


@pytest.mark.parametrize("item, message", [
    ("link1.q0=10 mm", "parameter 'link1.q0': cannot read the value '10 mm': '10 mm' is a length"),
    ("link1.mount=[3 deg, 0 m, 0]", "'0 m' is a length, not a number or an angle (the value is in rad)"),
    ("link1.joint.tau=3 N", "'3 N' is a force, not a torque"),
    ("link1.mass=2 kgg", "cannot read '2 kgg' ('kgg' is not defined"),
    ("link1.com=[0, -1 m", "cannot read the value '[0, -1 m'"),
])
def test_set_with_a_wrong_unit_is_one_line(tmp_path, capsys, item, message):
    assert main(["simulate", str(ARM), "--set", item, "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_vary_and_grid_take_units(tmp_path):
    from titop_fmu.campaign import Sweep
    from titop_fmu.campaign.distributions import SweepError
    s = Sweep(system=str(ARM), vary={"link1.q0": "uniform(10 deg, 20 deg)", "link2.mass": "[1500 g, 2 kg]"},
              samples=4).resolved()
    d = s.distributions(s.vary)
    assert d[0].args == pytest.approx((np.radians(10), np.radians(20)), rel=1e-15)
    assert d[1].args == pytest.approx((1.5, 2.0), rel=1e-15)
    with pytest.raises(SweepError, match=r"--vary link1.q0=uniform\(1 mm, 2 mm\): '1 mm' is a length"):
        Sweep(system=str(ARM), vary={"link1.q0": "uniform(1 mm, 2 mm)"}, samples=2).resolved()
    assert _grid("link1.q=0 deg:20 deg:3")[1] == pytest.approx(np.radians([0, 10, 20]), rel=1e-15)
    assert _grid("link1.q=0:20:3deg")[1] == pytest.approx(np.radians([0, 10, 20]), rel=1e-15)
    assert _grid("link1.mass=500 g, 1 kg")[1] == pytest.approx([0.5, 1.0], rel=1e-15)


def test_a_sources_parameters_take_units(tmp_path):
    d = systemfile._load(ARM)
    d["inputs"]["link1.joint.tau"] = {"source": "step", "height": "0.02 kN m", "time": "500 ms"}
    path = tmp_path / "arm.json"
    path.write_text(json.dumps(d))
    signal = read_file(path).system.inputs["link1.joint.tau"]
    assert signal.value(0.4) == 0.0 and signal.value(0.6) == pytest.approx(20.0, rel=1e-15)
