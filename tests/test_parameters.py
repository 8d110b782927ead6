"""A system file's [parameters]: named values (numbers, numbers with their units, expressions
of each other, lists) that unit fields and inputs use in expressions; --set and sweep --vary of
a name move every value tied to it; a cycle, an unknown name, a wrong value in one line."""

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.control.signals import ExpressionSignal
from titop_fmu.simulation import read_file

from test_cli import ROOT

SATELLITE = (ROOT / "examples" / "satellite.toml").read_text()
PARAMETERS = '''
[parameters]
panel_mass = "20 kg"
panel_inertia = "panel_mass * [[0.085, 0, 0], [0, 0.605, 0], [0, 0, 0.52]]"   # kg m^2 per kg
hinge = "1.25 m"
spin = "0.5 rad/s"
hinge_k = 200
kick = "2 * spin"
'''


def tied(tmp_path, edit=lambda text: text):
    """The satellite with its panels' masses, inertias, centres of mass, springs, its spin and a
    torque pulse written with named parameters."""
    text = SATELLITE.replace("\n[simulation]", PARAMETERS + "\n[simulation]")
    for unit, sign in (("panel1", ""), ("panel2", "-")):
        block = text[text.index(f"[units.{unit}]"):]
        block = block[:block.index("\n\n")]
        new = (block.replace("mass = 20.0", 'mass = "panel_mass"')
               .replace("inertia = [[1.7, 0.0, 0.0], [0.0, 12.1, 0.0], [0.0, 0.0, 10.4]]", 'inertia = "panel_inertia"')
               .replace(f"com = [{sign}1.25, 0.0, 0.0]", f'com = ["{sign}hinge", 0, 0]')
               .replace("k = 200.0", 'k = "hinge_k"'))
        assert new.count('"panel_mass"') == 1 and new.count('"hinge_k"') == 1 and "hinge\"" in new
        text = text.replace(block, new)
    text = text.replace("twist0 = [0.0, 0.0, 0.0, 0.0, 0.5, 0.0]", 'twist0 = [0, 0, 0, 0, "spin", 0]')
    text = text.replace('"bus.ext.w" = [0, 0, 0, 0, 0, 0]', '"bus.ext.w" = [0, 0, 0, 0, "where(t < 1, kick, 0)", 0]')
    path = tmp_path / "tied.toml"
    path.write_text(edit(text))
    return path


def plain(tmp_path, mass=20.0, mass2=None, spin=0.5):
    """The same satellite with the values written in."""
    text = SATELLITE
    for unit, m in (("panel1", mass), ("panel2", mass if mass2 is None else mass2)):
        block = text[text.index(f"[units.{unit}]"):]
        block = block[:block.index("\n\n")]
        inertia = [[0.085 * mass, 0, 0], [0, 0.605 * mass, 0], [0, 0, 0.52 * mass]]
        text = text.replace(block, block.replace("mass = 20.0", f"mass = {m!r}").replace(
            "inertia = [[1.7, 0.0, 0.0], [0.0, 12.1, 0.0], [0.0, 0.0, 10.4]]", f"inertia = {inertia!r}"))
    text = text.replace("twist0 = [0.0, 0.0, 0.0, 0.0, 0.5, 0.0]", f"twist0 = [0, 0, 0, 0, {spin!r}, 0]")
    text = text.replace('"bus.ext.w" = [0, 0, 0, 0, 0, 0]', f'"bus.ext.w" = [0, 0, 0, 0, "where(t < 1, {2 * spin!r}, 0)", 0]')
    path = tmp_path / f"plain_{mass}_{mass2}_{spin}.toml"
    path.write_text(text)
    return path


def run(tmp_path, path, *sets, name="run"):
    out = tmp_path / f"{name}.csv"
    assert main(["simulate", str(path), "--stop", "2", "--quiet", "--out", str(out),
                 *[a for s in sets for a in ("--set", s)]]) == 0
    return np.loadtxt(out, delimiter=",", skiprows=1)


def test_fields_written_with_parameters_are_the_values_written_in(tmp_path):
    a, b = read_file(tied(tmp_path)).system, read_file(plain(tmp_path)).system
    assert a.units.keys() == b.units.keys()
    for name in a.units:
        pa, pb = a.units[name].parameters, b.units[name].parameters
        assert pa.keys() == pb.keys() and all(pa[k] == pytest.approx(pb[k], rel=1e-15, abs=0) for k in pb), name
    signal = a.inputs["bus.ext.w"][4]
    assert isinstance(signal, ExpressionSignal) and signal.value(0.5) == 1.0 and signal.value(1.5) == 0.0
    assert sorted(a.bindings) == ["bus.ext.w", "bus.twist0", "panel1.com", "panel1.inertia", "panel1.k",
                                  "panel1.mass", "panel2.com", "panel2.inertia", "panel2.k", "panel2.mass"]


def test_set_of_a_name_moves_every_value_tied_to_it(tmp_path):
    """--set panel_mass=30 sets both panels' masses and inertias; --set spin=0.8 the bus's
    initial spin and the torque pulse (a time signal); a field set by its own name wins."""
    path = tied(tmp_path)
    assert np.array_equal(run(tmp_path, path, "panel_mass=30 kg", "spin=0.8", name="a"),
                          run(tmp_path, plain(tmp_path, 30.0, spin=0.8), name="b"))
    assert np.array_equal(run(tmp_path, path, "panel_mass=30", "panel2.mass=28", name="c"),
                          run(tmp_path, plain(tmp_path, 30.0, 28.0), name="d"))
    assert not np.array_equal(run(tmp_path, path, name="e"), run(tmp_path, path, "panel_mass=30", name="f"))


def test_sweep_varies_a_name_and_every_value_tied_to_it(tmp_path):
    from titop_fmu import campaign
    path = tied(tmp_path)
    assert main(["sweep", str(path), "--vary", "panel_mass=[15 kg, 25 kg]", "--sampling", "grid", "--stop", "2",
                 "--workers", "0", "--quiet", "--out", str(tmp_path / "store")]) == 0
    c = campaign.open(tmp_path / "store")
    assert set(c.samples.status) == {"ok"}
    for i, mass in enumerate((15.0, 25.0)):
        assert np.array_equal(c.trajectory(i).to_numpy(), run(tmp_path, plain(tmp_path, mass), name=f"m{i}"))


def test_an_exported_system_takes_the_values_of_its_parameters(tmp_path):
    """A time signal written with a parameter is written back with its value in (the system
    travels without its [parameters]): -1.5 as (-1.5) where a power follows."""
    s = ExpressionSignal("where(t < 1, kick * x ** 2, -x)", {"kick": 2.0, "x": -1.5})
    text = s.to_input()
    assert "kick" not in text and "(-1.5) ** 2" in text
    again = ExpressionSignal(text)
    assert [again.value(t) for t in (0.5, 2.0)] == [s.value(t) for t in (0.5, 2.0)] == [4.5, 1.5]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('kick = "2 * spin"', 'kick = "2 * spin"\nspin2 = "kick + spin3"\nspin3 = "spin2"'),
     "parameters: the parameters depend on each other in a cycle: spin2 -> spin3 -> spin2"),
    (lambda t: t.replace('kick = "2 * spin"', 'kick = "2 * kick"'), "a cycle: kick -> kick"),
    (lambda t: t.replace('mass = "panel_mass"', 'mass = "panel_mas"', 1),
     "units.panel1.mass: 'panel_mas': unknown name 'panel_mas' (did you mean 'panel_mass'"),
    (lambda t: t.replace('hinge = "1.25 m"', 'hinge = "1.25 meterz"'), "parameters.hinge: cannot read"),
    (lambda t: t.replace('hinge_k = 200', 'bus = 200'), "parameters.bus: a parameter's name is an identifier, "
                                                        "not a unit's name"),
    (lambda t: t.replace('hinge_k = 200', 'pi = 3'), "parameters.pi: a parameter's name is an identifier, not a "
                                                      "constant"),
    (lambda t: t.replace('hinge_k = 200', 'hinge_k = true'), "parameters.hinge_k: a number"),
])
def test_a_mistake_in_the_parameters_is_one_line(tmp_path, capsys, edit, message):
    assert main(["simulate", str(tied(tmp_path, edit)), "--stop", "0.1", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "o.csv").exists()


def test_set_of_an_unknown_name_is_one_line(tmp_path, capsys):
    assert main(["simulate", str(tied(tmp_path)), "--set", "panel_mas=3", "--out", str(tmp_path / "o.csv")]) == 2
    assert "parameter 'panel_mas': unknown parameter (did you mean 'panel_mass'" in capsys.readouterr().err
