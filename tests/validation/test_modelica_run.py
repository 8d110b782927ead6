"""The TITOP blocks against Modelica MultiBody (MSL 4.x), an independent engine,
executed: the balloon (BalloonSystem.mo) and the two-branch system
(TwoBranch.mo, twin of examples/two_branch.toml).

The runs skip with the reason (no compiler / no MSL) in pytest's summary; the
committed reference test needs no compiler.
"""

import os
import sys

import numpy as np
import pytest
from fmu_fixtures import standalone_dir, standalone_paths  # noqa: F401  (every TITOP FMU, built once per session)
from modelica_runs import BALLOON_MO, ROOT, TEETH_RTOL, TWO_BRANCH_MO, mutated_copy, need_modelica

from titop_fmu import modelica
from titop_fmu.validate import Series, errors, load_reference
from validation import compare_twin as twin  # the TITOP side (one import place)

REFERENCES = ROOT / "validation" / "reference"
TWO_BRANCH = ROOT / "examples" / "two_branch.toml"
EULER = [c in ("phi", "theta", "psi") for c in ("x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2")]


def balloon_error(mo: modelica.Result, t, cols):
    """Max error per column of a balloon run ``(t, cols)`` against a Modelica run."""
    assert mo.names == twin.balloon_columns()
    assert np.allclose(t, mo.t, rtol=0, atol=1e-9) and len(t) == len(mo.t)
    return twin.column_errors(cols, mo.values, EULER)[0]


# -- the balloon ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_modelica_balloon_run_is_the_scenario(modelica_balloon):
    mo = modelica_balloon
    assert len(mo.t) == 2001 and mo.t[-1] == 20.0
    assert mo.info["compiler"] in ("rumoca", "omc") and mo.info["rtol"] == 1e-12
    assert mo.values[0] == pytest.approx([0, 0, 0, 0, 0, 0, 0, np.radians(170), np.radians(-170)],
                                         abs=1e-14)
    assert np.ptp(mo.values, axis=0).min() > 1e-3                    # every output moves
    print(f"\nModelica balloon: {mo.info['compiler']} {mo.info['compiler_version']}, "
          f"MSL {mo.info['msl_version']}, compile {mo.info['compile_s']:.2f} s, "
          f"simulate {mo.info['simulate_s']:.2f} s")


@pytest.mark.slow
def test_balloon_inprocess_matches_modelica(modelica_balloon, balloon_run):
    """In-process monolithic run vs Modelica MultiBody over [0, 20] s: <= 1e-9 on every column."""
    s, tr = balloon_run
    e = balloon_error(modelica_balloon, tr.t, twin.balloon_columns_of(s, tr.y))
    print("\nin-process vs Modelica:", dict(zip(twin.balloon_columns(), np.round(e, 14).tolist())))
    assert e.max() <= 1e-9, e


@pytest.mark.slow
def test_balloon_fmus_default_settings_match_modelica(modelica_balloon, standalone_dir):
    """The FMUs through the master at its default settings vs Modelica over [0, 20] s: <= 1e-5."""
    t, cols = twin.balloon_fmu(20.0, fmu_dir=standalone_dir)
    e = balloon_error(modelica_balloon, t, cols)
    print("\nFMUs + master vs Modelica:", dict(zip(twin.balloon_columns(), e.tolist())))
    assert e.max() <= 1e-5, e


def test_committed_msl_reference_agrees_with_pinocchio():
    """balloon_msl.csv (Modelica) vs balloon_pinocchio.csv: same grid and columns, <= 1e-9."""
    msl = load_reference(REFERENCES / "balloon_msl.csv")
    pin = load_reference(REFERENCES / "balloon_pinocchio.csv")
    assert len(msl.t) == len(pin.t) == 2001
    t, e, att = errors(msl, pin)
    assert e.max() <= 1e-9 and att.max() <= 1e-9, e.max(axis=0)
    info = msl.info
    assert info["compiler"] == "rumoca" and info["msl_version"].startswith("4.")
    assert info["solver"] == "rk-like" and info["rtol"] == info["atol"] == 1e-12
    assert info["max_difference_vs_balloon_pinocchio"]["max"] == pytest.approx(e.max(), rel=1e-6)
    assert "make_msl_reference.py" in info["command"]


@pytest.mark.slow
def test_modelica_run_reproduces_the_committed_reference(modelica_balloon):
    """The committed reference is what the engine computes today (same tool, same settings)."""
    ref = load_reference(REFERENCES / "balloon_msl.csv")
    _, e, _ = errors(Series("now", modelica_balloon.t, modelica_balloon.values), ref)
    assert e.max() <= 1e-12


@pytest.mark.slow
def test_teeth_one_mass_changed_by_one_percent(tmp_path, balloon_run):
    """A copy of the model with m_P2 = 3.03 kg instead of 3 kg: the comparison must see it, in
    the first 2 s already (the in-process runs differ by 2.6e-2 there, as over 20 s)."""
    need_modelica()
    copy = mutated_copy(BALLOON_MO, 'parameter Real m_P2(unit="kg") = 3 ', 'parameter Real m_P2(unit="kg") = 3.03 ',
                        tmp_path)
    mo = modelica.simulate(copy, twin.balloon_columns(), 2.0, 0.01, rtol=TEETH_RTOL, atol=TEETH_RTOL)
    s, tr = balloon_run
    n = len(mo.t)
    e = balloon_error(mo, tr.t[:n], twin.balloon_columns_of(s, tr.y[:n]))
    print("\n1 % heavier pendulum 2 vs in-process:", e.max())
    assert e.max() > 1e-4                        # five decades above the 1e-9 bound


# -- the two-branch system ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_branch():
    need_modelica()
    return twin.compare_system_file(TWO_BRANCH, TWO_BRANCH_MO, stop=10.0)


@pytest.mark.slow
def test_two_branch_twin_matches_inprocess(two_branch):
    """examples/two_branch.toml in process vs its Modelica twin over [0, 10] s: <= 1e-8
    (absolute up to magnitude 1, relative above)."""
    r = two_branch
    assert r["t"][-1] == 10.0 and len(r["t"]) == 1001
    assert np.ptp(r["titop"], axis=0).min() > 1e-3                  # every recorded output moves
    print("\ntwo_branch vs twin:", dict(zip(r["names"], r["scaled"].tolist())))
    assert r["scaled"].max() <= 1e-8, r["scaled"]


@pytest.mark.slow
def test_two_branch_teeth_wrong_mount(tmp_path):
    """The twin with the mount sequence read the other way (1-2-3 instead of 3-2-1): caught."""
    need_modelica()
    copy = mutated_copy(TWO_BRANCH_MO, "sequence={3, 2, 1}, angles={10, 0, 30}",
                        "sequence={1, 2, 3}, angles={30, 0, 10}", tmp_path)
    r = twin.compare_system_file(TWO_BRANCH, copy, stop=2.0, rtol=TEETH_RTOL)
    assert r["scaled"].max() > 1e-4


@pytest.mark.slow
def test_compare_twin_command(capsys):
    """The one command: exit 0 and a line per recorded output (over 0.2 s: the run's first
    second costs a fifth of its ten)."""
    need_modelica()
    assert twin.main([str(TWO_BRANCH), str(TWO_BRANCH_MO), "--stop", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "hub.c1.m[18]" in out and "worst" in out and ("rumoca" in out or "omc" in out)


# -- the engine's own behaviour ---------------------------------------------------------------------

def test_names_and_angles_of_recorded_entries():
    assert twin.modelica_name("arm.joint.q[3]") == "arm_joint_q_3"
    assert twin.modelica_name("hub.c1.m[16]") == "hub_c1_m_16"
    assert [twin.is_euler_angle(f"hub.c1.m[{k}]") for k in (15, 16, 17, 18)] == [False, True, True, True]
    with pytest.raises(ValueError, match="no Modelica name"):
        twin.modelica_name("3d.q")


def test_find_msl_from_modelicapath(tmp_path, monkeypatch):
    (tmp_path / "b" / "Modelica").mkdir(parents=True)
    (tmp_path / "b" / "Modelica" / "package.mo").write_text('package Modelica annotation(version="9.9.9"); end Modelica;')
    (tmp_path / "a").mkdir()
    monkeypatch.setenv("MODELICAPATH", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    root = modelica.find_msl()
    assert root == (tmp_path / "b").resolve() and modelica.msl_version(root) == "9.9.9"
    assert modelica.find_msl(tmp_path / "b" / "Modelica") == root           # the package itself


def test_missing_msl_is_a_one_line_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELICAPATH", str(tmp_path))
    monkeypatch.setattr(modelica, "find_compiler", lambda: modelica.Compiler("rumoca", "0"))
    reason = modelica.unavailable_reason()
    assert "MODELICAPATH" in reason and "--msl" in reason and "\n" not in reason
    with pytest.raises(modelica.ModelicaError, match="MODELICAPATH"):
        modelica.simulate(BALLOON_MO, ["x"], 1.0)
    with pytest.raises(ValueError, match="no Modelica Standard Library"):
        modelica.unavailable_reason(tmp_path / "nowhere")


def test_missing_compiler_is_a_one_line_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "rumoca", None)                 # import rumoca fails
    monkeypatch.setattr(modelica, "find_omc", lambda: None)
    assert modelica.find_compiler() is None
    reason = modelica.unavailable_reason()
    assert reason.startswith("no Modelica compiler") and "[modelica]" in reason and "\n" not in reason


def test_bad_model_and_missing_output_are_clear_errors(tmp_path):
    need_modelica()
    with pytest.raises(modelica.ModelicaError, match="no Modelica file"):
        modelica.simulate(tmp_path / "none.mo", ["x"], 1.0)
    with pytest.raises(ValueError, match="multiple of dt"):
        modelica.simulate(BALLOON_MO, ["x"], 0.015)
    bad = tmp_path / "Bad.mo"
    bad.write_text("model Bad\n  Real x(start=1, fixed=true);\nequation\n  der(x) = -x\nend Bad;\n")
    with pytest.raises(modelica.ModelicaError, match="could not compile"):
        modelica.simulate(bad, ["x"], 0.1)
    good = tmp_path / "Decay.mo"
    good.write_text("model Decay\n  Real x(start=1, fixed=true);\n  output Real y;\nequation\n"
                    "  der(x) = -x;\n  y = x;\nend Decay;\n")
    with pytest.raises(modelica.ModelicaError, match="no variable"):
        modelica.simulate(good, ["y", "z"], 0.1)
    r = modelica.simulate(good, ["y"], 1.0, 0.1)
    assert np.allclose(r["y"], np.exp(-r.t), rtol=1e-9, atol=0)


FAKE_OMC = """\
#!{python}
import os, re, shutil, sys
if sys.argv[1] == "--version":
    print("OpenModelica v1.99.0 (fake)")
    sys.exit(0)
mos = open(sys.argv[1]).read()
shutil.copy(sys.argv[1], os.environ["FAKE_OMC_LOG"])
stop = float(re.search(r"stopTime=([0-9.eE+-]+)", mos).group(1))
n = int(re.search(r"numberOfIntervals=(\\d+)", mos).group(1))
names = re.search(r'variableFilter="([^"]*)"', mos).group(1).split("|")
prefix = re.search(r'fileNamePrefix="([^"]*)"', mos).group(1)
with open(prefix + "_res.csv", "w") as f:
    f.write(",".join('"%s"' % v for v in ["time"] + names) + ",\\n")
    for k in range(n + 1):
        t = stop * k / n
        f.write(",".join(repr(v) for v in [t] + [(j + 1) * t for j in range(len(names))]) + ",\\n")
"""


@pytest.mark.skipif(os.name == "nt", reason="fake omc uses a POSIX shebang")
def test_omc_backend_with_a_fake_omc(tmp_path, monkeypatch):
    """Without rumoca, OpenModelica's omc on PATH is the compiler: a .mos script loading the MSL of
    MODELICAPATH and the model, DASSL at rtol, a CSV result read back on the grid."""
    bindir, msl = tmp_path / "bin", tmp_path / "msl"
    bindir.mkdir()
    (msl / "Modelica").mkdir(parents=True)
    (msl / "Modelica" / "package.mo").write_text('package Modelica annotation(version="4.0.0"); end Modelica;')
    omc = bindir / "omc"
    omc.write_text(FAKE_OMC.replace("{python}", sys.executable))
    omc.chmod(0o755)
    monkeypatch.setitem(sys.modules, "rumoca", None)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("MODELICAPATH", str(msl))
    monkeypatch.setenv("FAKE_OMC_LOG", str(tmp_path / "run.mos"))
    assert modelica.find_compiler() == modelica.Compiler("omc", "OpenModelica v1.99.0 (fake)", str(omc))
    r = modelica.simulate(BALLOON_MO, ["x", "theta2"], 0.05, 0.01, rtol=1e-9)
    assert np.allclose(r.t, [0, 0.01, 0.02, 0.03, 0.04, 0.05]) and np.allclose(r["theta2"], 2 * r.t)
    assert r.info["compiler"] == "omc" and r.info["msl_version"] == "4.0.0" and r.info["solver"] == "dassl"
    mos = (tmp_path / "run.mos").read_text()
    assert f'loadFile("{(msl / "Modelica" / "package.mo").resolve().as_posix()}");' in mos
    assert f'loadFile("{BALLOON_MO.as_posix()}");' in mos
    assert "simulate(BalloonSystem," in mos and "tolerance=1e-09" in mos and 'method="dassl"' in mos


def test_twin_model_named_in_the_system_file(tmp_path):
    """A ``modelica = "<path relative to the file>"`` key names the twin."""
    f = tmp_path / "sys" / "s.toml"
    f.parent.mkdir()
    f.write_text('modelica = "../models/S.mo"\n[units.a]\nmodel = "revolute_c0"\n')
    assert twin.twin_model_of(f) == (tmp_path / "models" / "S.mo").resolve()
    assert twin.twin_model_of(TWO_BRANCH) == ROOT / "validation" / "modelica" / "TwoBranch.mo"
    alone = tmp_path / "alone.toml"
    alone.write_text('[units.a]\nmodel = "revolute_c0"\n')
    assert twin.twin_model_of(alone) is None
    with pytest.raises(ValueError, match="no Modelica twin given"):
        twin.compare_system_file(alone)
