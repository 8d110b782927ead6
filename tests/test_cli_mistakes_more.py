"""More careless input, on what came after the first careless set (tests/test_cli_mistakes.py):
flexible bodies (a beam's table, a modal file), ``[parameters]``, models, the options of
linearize, report and simulate's 3-D view. Each is one line ``titop-fmu: error: ...``, exit
code 2, before any work, and leaves no file."""

import numpy as np
import pytest
from flexible_systems import SIMO

from titop_fmu.blocks.beam import beam_modal_data, section
from titop_fmu.cli import main

SPIN = """links = [["hub.c1", "beam.p"]]
record = ["beam.c1.position", "beam.c1.u"]

[units.hub]
model = "imposed_motion_base_c1"
mass = 1.0
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0, 0, 0]
"c1.r" = [0, 0, 0]

[units.beam]
model = "welded_c1"
gravity = [0, 0, 0]

[units.beam.flexible]
beam = { length = 10.0, EA = 2.8e7, EIy = 1.4e4, EIz = 1.4e4, GJ = 1.4e4, rhoA = 1.2, rhoJ = 6e-4 }
axis = [1, 0, 0]
elements = 4
modes = 3
ports = [10.0]

[inputs]
"beam.c1.w" = [0, 0, 0, 0, 0, 0]
"""
BEAM = 'beam = { length = 10.0, EA = 2.8e7, EIy = 1.4e4, EIz = 1.4e4, GJ = 1.4e4, rhoA = 1.2, rhoJ = 6e-4 }\n' \
       'axis = [1, 0, 0]\nelements = 4\n'
MODAL = SPIN.replace(BEAM, 'modal = "beam.npz"\n').replace("ports = [10.0]", "ports = [1]")

#: (the replacements (old, new, ...) in SPIN, the message's telling part)
FLEXIBLE = {
    "elements by the million": (("elements = 4", "elements = 1000000"),
                                "units.beam.flexible.elements: expected an integer from 1 to 500, got 1000000"),
    "modes by the million": (("modes = 3", "modes = 1000000"), "units.beam.flexible.modes: at most 1000, got 1000000"),
    "an axis in words": (("axis = [1, 0, 0]", 'axis = "x"'), "units.beam.flexible.axis: expected numbers, got 'x'"),
    "a ydir in words": (("axis = [1, 0, 0]", 'axis = [1, 0, 0]\nydir = "up"'),
                        "units.beam.flexible.ydir: expected numbers, got 'up'"),
    "a damping in words": (("modes = 3", 'modes = 3\ndamping = "low"'),
                           "units.beam.flexible.damping: expected numbers, got 'low'"),
    "an initial rate in words": (("modes = 3", 'modes = 3\netad0 = "zero"'),
                                 "units.beam.flexible.etad0: expected numbers, got 'zero'"),
    "masses not a list": (("modes = 3", "modes = 3\nmasses = 5"),
                          "units.beam.flexible.masses: expected a list of {at = s, mass = m, inertia = [[...]]}, got 5"),
    "a lumped inertia in words": (("modes = 3", 'modes = 3\nmasses = [{ at = 5.0, mass = 1.0, inertia = "big" }]'),
                                  "units.beam.flexible.masses[0].inertia: expected numbers, got 'big'"),
}


def _modal_file(path):
    data = beam_modal_data([section(SIMO)], 3, elements=4, ports=[10.0])
    np.savez(path, **data.arrays())


#: (what is at beam.npz, the system's replacements, the message's telling part)
MODAL_FILES = {
    "an empty file": (b"", (), "beam.npz is not a NumPy .npz file (a zip archive of arrays: numpy.savez)"),
    "a text file": (b"eigenvalues\n1 2 3\n", (), "beam.npz is not a NumPy .npz file"),
    "a single array (.npy)": (np.save, (), "beam.npz is not a NumPy .npz file"),
    "a folder": ("folder", (), "beam.npz is a folder, not a modal file"),
    "a number for the path": (_modal_file, ('"beam.npz"', "3"),
                              "units.beam.flexible.modal: expected the path of a .npz or .mat file, got 3"),
}


def edited(text, edits) -> str:
    for old, new in zip(edits[0::2], edits[1::2]):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("titop-fmu: error: "), err
    return err


def refused(argv, folder, capsys) -> str:
    """The one-line error of ``argv``, run in ``folder``, which it leaves as it was."""
    before = sorted(folder.rglob("*"))
    assert main(argv) == 2
    assert sorted(folder.rglob("*")) == before
    return one_line_error(capsys)


@pytest.mark.parametrize("case", list(FLEXIBLE))
def test_a_careless_flexible_table_is_one_line(case, tmp_path, no_run, capsys):
    """Each was a traceback (a ValueError, a TypeError, a MemoryError of 262 TiB)."""
    (tmp_path / "s.toml").write_text(edited(SPIN, FLEXIBLE[case][0]))
    err = refused(["simulate", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o.csv"), "--quiet"], tmp_path, capsys)
    assert FLEXIBLE[case][1] in err


@pytest.mark.parametrize("case", list(MODAL_FILES))
def test_a_modal_file_that_is_not_one_is_one_line(case, tmp_path, no_run, capsys):
    """An empty file was an EOFError traceback, a text file told to load it unsafely
    (``allow_pickle``), a number for the path a TypeError."""
    content, edits, message = MODAL_FILES[case]
    target = tmp_path / "beam.npz"
    if content == "folder":
        target.mkdir()
    elif callable(content):
        content(target) if content is _modal_file else content(target, np.eye(3))
        if target.with_suffix(".npz.npy").exists():
            target.with_suffix(".npz.npy").rename(target)
    else:
        target.write_bytes(content)
    (tmp_path / "s.toml").write_text(edited(MODAL, edits))
    err = refused(["simulate", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o.csv"), "--quiet"], tmp_path, capsys)
    assert message in err


@pytest.mark.parametrize("model", ["welded_c100000", "welded_c1_f100000"])
def test_a_model_too_large_to_describe_is_one_line(model, tmp_path, capsys):
    """``models welded_c100000`` ran for minutes; ``welded_c1_f100000`` asked for 671 GiB."""
    err = refused(["models", model], tmp_path, capsys)
    assert f"model {model!r}: at most 64 child ports (_c<n>) and 1000 flexible modes (_f<m>)" in err


def test_a_revolute_flexible_body_without_its_axis_asks_for_the_axis_alone(tmp_path, no_run, capsys):
    """The message listed the modal data (flex.mass, flex.L, ..., c1.phi) among what to state."""
    (tmp_path / "s.toml").write_text(SPIN.replace('model = "welded_c1"', 'model = "revolute_c1"'))
    err = refused(["simulate", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o.csv")], tmp_path, capsys)
    assert "axis not given; a system file states the physical data of every unit, here axis (titop-fmu" in err


WINGS = """links = [["bus.c1", "wing.p"]]
record = ["wing.joint.q[3]"]

[parameters]
wing_mass = "25 kg"

[units.bus]
model = "floating_base_c1"
mass = 500.0
inertia = [[200.0, 0.0, 0.0], [0.0, 250.0, 0.0], [0.0, 0.0, 180.0]]
com = [0.0, 0.0, 0.0]
"c1.r" = [1.0, 0.0, 0.0]
gravity = [0.0, 0.0, 0.0]

[units.wing]
model = "revolute_c0"
mass = "wing_mass"
inertia = [[75.0, 0, 0], [0, 90.0, 0], [0, 0, 13.0]]
com = [3.0, 0, 0]
axis = [0.0, 0.0, 1.0]
q0 = "10 deg"
k = 500.0
gravity = [0.0, 0.0, 0.0]

[inputs]
"bus.ext.w" = [0, 0, 0, 0, 0, 0]
"""


@pytest.mark.parametrize("name, text, argv, message", [
    ("a ragged parameter", WINGS.replace('wing_mass = "25 kg"', 'wing_mass = "25 kg"\nrows = [[1, 2], [3]]'), [],
     "parameters.rows: a number, a number with its unit, an expression or a list of them (rows of one length) is "
     "expected, got [[1, 2], [3]]"),
    ("a JSON list", "[1, 2]", [], "a system file holds a table, got list"),
    ("a trace without a view", WINGS, ["--trace", "wing.com"], "--trace is an option of the 3-D view: give --animate"),
    ("a title without a view", WINGS, ["--title", "x"], "--title is an option of the 3-D view: give --animate"),
    ("a scale without a view", WINGS, ["--scale", "2"], "--scale is an option of the 3-D view: give --animate"),
])
def test_a_careless_system_or_view_option_is_one_line(name, text, argv, message, tmp_path, no_run, capsys):
    """A ragged list was a numpy ValueError, a JSON list an AttributeError; --trace, --title and
    --scale without --animate were ignored."""
    path = tmp_path / ("s.json" if text.startswith("[") else "s.toml")
    path.write_text(text)
    err = refused(["simulate", str(path), "--out", str(tmp_path / "o.csv"), "--quiet", *argv], tmp_path, capsys)
    assert message in err


@pytest.mark.parametrize("argv, message", [
    (["--animate", "v.html", "--mode", "0"], "--mode 0: the linear model has 1 mode(s) that are not zero, numbered from 1"),
    (["--trace", "wing.com"], "--trace is an option of the 3-D view: give --animate VIEW.html"),
])
def test_linearize_refuses_a_mode_0_and_view_options_without_a_view(argv, message, tmp_path, capsys, monkeypatch):
    """--mode 0 showed mode 1 (``args.mode or 1``); --trace without --animate was ignored."""
    (tmp_path / "s.toml").write_text(WINGS)
    monkeypatch.chdir(tmp_path)
    assert message in refused(["linearize", "s.toml", "--out", "l.mat", "--quiet", *argv], tmp_path, capsys)


def test_a_list_element_in_quotes_is_read_as_a_file_writes_it():
    """``--set "bus.twist0=[0, 0, 0, 0, '3 deg/s', 0]"`` said "cannot read \\"'3 deg/s'\\" (AssertionError)"."""
    from titop_fmu.io import parse_value
    assert np.allclose(parse_value("w", "[0, '3 deg/s', \"1 rpm\"]"), [0, np.pi / 60, np.pi / 30], rtol=1e-15)


@pytest.mark.parametrize("manifest", ["{", "[]", '{"spec": 3}', b"\xff\xfe"])
def test_report_of_a_damaged_store_is_one_line(manifest, tmp_path, capsys):
    """A damaged campaign.json was a JSONDecodeError traceback."""
    (tmp_path / "st" / "samples").mkdir(parents=True)
    path = tmp_path / "st" / "campaign.json"
    path.write_bytes(manifest) if isinstance(manifest, bytes) else path.write_text(manifest)
    err = refused(["report", str(tmp_path / "st"), "--out", str(tmp_path / "rep")], tmp_path, capsys)
    assert f"{path}: not a campaign's manifest" in err


@pytest.mark.parametrize("argv, message", [
    (["--vary", "wing_mass=uniform(20, 30)", "--vary", "wing_mass=uniform(1, 2)"],
     "--vary wing_mass is given twice: one distribution per name"),
    (["--vary", "wing_mass=uniform(20, 30)", "--set", "wing_mass=25"],
     "wing_mass is both varied (--vary) and fixed (--set): one or the other"),
    (["--vary", "wing_mass=uniform(20, 30)", "--engine", "fmu", "--rtol", "1e-9"],
     "--rtol applies to the in-process engine (--engine inprocess); the co-simulation master's tolerance is --tol"),
    (["--vary", "wing_mass=uniform(20, 30)", "--tol", "1e-6"], "--tol applies to the co-simulation master"),
    (["--vary", "wing_mass=uniform(20, 30)", "--report", "st"], "--report st: inside the store --out st"),
])
def test_sweep_refuses_conflicting_options(argv, message, tmp_path, capsys, monkeypatch):
    """Each ran: the last --vary won, --vary won over --set, --rtol was ignored by the master
    and --tol by the in-process engine, and the report was written into the store."""
    (tmp_path / "s.toml").write_text(WINGS)
    monkeypatch.chdir(tmp_path)
    argv = ["sweep", "s.toml", "--samples", "2", "--workers", "0", "--out", "st", "--quiet", *argv]
    assert message in refused(argv, tmp_path, capsys)


def test_ctrl_c_while_a_module_loads_is_an_interrupt(tmp_path, capsys, monkeypatch):
    """Ctrl-C while scipy loads an extension module on first use (scipy.integrate, in the run)
    surfaces as ``ImportError: initialization failed`` raised from the KeyboardInterrupt: it was
    a traceback with exit status 1."""
    def interrupted_import(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise ImportError("initialization failed") from e
    monkeypatch.setattr("titop_fmu.cli.simulate.run", interrupted_import)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(WINGS)
    assert main(["simulate", "s.toml", "--out", "o.csv"], own_process=True) == 130
    assert capsys.readouterr().err == "titop-fmu: interrupted; nothing written\n"
    with pytest.raises(KeyboardInterrupt):
        main(["simulate", "s.toml", "--out", "o.csv"])
    assert sorted(tmp_path.iterdir()) == [tmp_path / "s.toml"]


def test_a_compiler_stopped_by_ctrl_c_is_an_interrupt(tmp_path):
    """Ctrl-C reaches the compiler of a missing FMU too (the same process group): it was
    reported as 'compiling welded_c1 for win64 failed', status 2."""
    from titop_fmu.cbuild import run_compiler
    with pytest.raises(KeyboardInterrupt):
        run_compiler(["sh", "-c", "kill -INT $$"], tmp_path, "a model")


def test_validate_interrupted_during_its_runs_leaves_no_folder(tmp_path, monkeypatch):
    """The report folder was made before the runs: Ctrl-C left it, empty."""
    from titop_fmu import validate

    def interrupted(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(validate, "run_modelica", interrupted)
    with pytest.raises(KeyboardInterrupt):
        validate.validate(tmp_path / "report", stop=0.1)
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("argv, message", [
    (["simulate", "balloon", "--stopp", "3"],
     "unrecognized arguments: --stopp 3 (did you mean '--stop' or '--tol' or '--set'?) (see 'titop-fmu simulate --help')"),
    (["export", "balloon", "--set", "m_P1=2"], "unrecognized arguments: --set m_P1=2 (did you mean '--ssp' or '--out'?)"),
    (["simulate", "balloon", "--stop", "ten"], "argument --stop: invalid float value: 'ten' (see 'titop-fmu simulate --help')"),
    (["simulate", "balloon", "--engine", "fmus"], "argument --engine: invalid choice: 'fmus' (choose from"),
    (["simulat", "balloon"], "argument command: invalid choice: 'simulat' (choose from 'simulate', "),
    (["sweep", "balloon"], "the following arguments are required: --out (see 'titop-fmu sweep --help')"),
])
def test_an_option_argparse_refuses_is_one_line(argv, message, capsys):
    """They printed the command's usage first (up to eleven lines), and a misspelled option
    had no suggestion."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in one_line_error(capsys)


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--set", "wing_mass=3 m"], "parameter 'wing_mass': cannot read the value '3 m': '3 m' is a length, "
                                             "not a mass (the value is in kilogram)"),
    (["sweep", "--vary", "wing_mass=uniform(2 m, 3 m)", "--samples", "2", "--workers", "0"],
     "--vary wing_mass=uniform(2 m, 3 m): '2 m' is a length, not a mass (the value is in kilogram)"),
])
def test_a_named_parameter_takes_a_value_of_its_dimension(argv, message, tmp_path, capsys, monkeypatch, no_run):
    """``wing_mass = "25 kg"`` took ``--set wing_mass="3 m"`` as 3 kg."""
    (tmp_path / "s.toml").write_text(WINGS)
    monkeypatch.chdir(tmp_path)
    assert message in refused([argv[0], "s.toml", "--out", "o", "--quiet", *argv[1:]], tmp_path, capsys)

