"""The Modelica models' conventions, checked by behaviour.

The models' data, topology and outputs are checked by running them against
the TITOP blocks (test_modelica_run.py). Here: the 3-2-1 Euler-angle
extraction written in BalloonSystem.mo, TwoBranch.mo and Spacecraft.mo, evaluated in Python
against a transcription of MSL's orientation convention (no compiler needed)
and compiled together with the real ``Frames.axesRotations`` of the MSL
against the project's ``dcm_from_euler`` (with a compiler); the OpenModelica
runner script without OpenModelica (clear failure, exit code 2) and against a
fake ``omc`` executable.
"""

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from modelica_runs import BALLOON_MO, SPACECRAFT_MO, TWO_BRANCH_MO, need_modelica
from titop_fmu import modelica
from validation.compare_twin import dcm_from_euler   # the TITOP side (one import place)

ROOT = Path(__file__).resolve().parents[2]
MODEL, TWO_BRANCH_MODEL = BALLOON_MO, TWO_BRANCH_MO
# (file, DCM definition, {Euler angle: output variable})
EULER_OUTPUTS = [
    (MODEL, "transpose(balloon.frame_a.R.T)", {"phi": "phi", "theta": "theta", "psi": "psi"}),
    (TWO_BRANCH_MODEL, "transpose(hub.frame_a.R.T)",
     {"phi": "hub_c1_m_16", "theta": "hub_c1_m_17", "psi": "hub_c1_m_18"}),
    (SPACECRAFT_MO, "transpose(bus.frame_a.R.T)",
     {"phi": "bus_p_m_16", "theta": "bus_p_m_17", "psi": "bus_p_m_18"}),
]
SCRIPT = ROOT / "validation" / "run_openmodelica.py"

# --------------------------------------------------------------------------
# Parsing helpers
# --------------------------------------------------------------------------

def split_source(text):
    """Return (code, bare): comments removed, and comments plus strings removed.

    Handles // and /* */ comments and "..." strings with backslash escapes;
    fails on an unterminated comment or string.
    """
    code, bare = [], []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            assert j >= 0, "unterminated /* comment"
            code.append(" ")
            bare.append(" ")
            i = j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            assert j < n, "unterminated string"
            code.append(text[i:j + 1])
            i = j + 1
        else:
            code.append(text[i])
            bare.append(text[i])
            i += 1
    return "".join(code), "".join(bare)


def bare_text(path):
    return split_source(path.read_text(encoding="utf-8"))[1]


def squash(s):
    return re.sub(r"\s+", "", s)


def equation_section(bare):
    parts = re.split(r"\bequation\b", bare)
    assert len(parts) == 2, "expected exactly one equation section"
    return parts[1]


# --------------------------------------------------------------------------
# Euler angles: the model's formulas against the MSL orientation convention
# --------------------------------------------------------------------------

def msl_axis_rotation(axis, angle):
    """Frames.TransformationMatrices.axisRotation of MSL 4.x (maps frame-1 to frame-2 coordinates)."""
    c, s = math.cos(angle), math.sin(angle)
    if axis == 1:
        return np.array([[1, 0, 0], [0, c, s], [0, -s, c]])
    if axis == 2:
        return np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])
    return np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])


def msl_axes_rotations_T(sequence, angles):
    """R.T of Frames.axesRotations(sequence, angles, ...) in MSL 4.x."""
    return (msl_axis_rotation(sequence[2], angles[2]) @ msl_axis_rotation(sequence[1], angles[1])
            @ msl_axis_rotation(sequence[0], angles[0]))


def model_euler_formulas(path, dcm, names):
    """``{angle: (Modelica expression of P_bi, Python callable of P)}`` from the model's equations."""
    eqs = equation_section(bare_text(path))
    assert squash(re.search(r"\bP_bi\s*=\s*([^;]+);", eqs).group(1)) == dcm
    funcs = {}
    for angle, var in names.items():
        expr = squash(re.search(rf"(?<![\w.]){var}\s*=\s*([^;]+);", eqs).group(1))
        py = re.sub(r"P_bi\[(\d),(\d)\]", lambda m: f"P[{int(m[1]) - 1}][{int(m[2]) - 1}]", expr)
        py = py.replace("^", "**")
        assert re.fullmatch(r"[\w\[\]()*+\-/.,]+", py), py
        funcs[angle] = (expr, (lambda code: lambda P: eval(code, {"atan2": math.atan2, "sqrt": math.sqrt,
                                                                   "P": P}))(py))
    return funcs


def random_angles(rng, n):
    out = []
    for _ in range(n):
        phi, psi = rng.uniform(-math.pi, math.pi, 2)
        theta = rng.uniform(-math.pi / 2 + 1e-6, math.pi / 2 - 1e-6)
        out.append((phi, theta, psi))
    return out


@pytest.mark.parametrize("path, dcm, names", EULER_OUTPUTS, ids=["balloon", "two_branch", "spacecraft"])
def test_model_euler_angles_invert_the_dcm(path, dcm, names):
    funcs = model_euler_formulas(path, dcm, names)
    for phi, theta, psi in random_angles(np.random.default_rng(1), 200):
        P = msl_axes_rotations_T((3, 2, 1), (psi, theta, phi)).T  # MSL stores P_bi^T in R.T
        assert np.allclose(P, dcm_from_euler([phi, theta, psi]), rtol=0, atol=1e-14)
        got = [funcs[a][1](P) for a in ("phi", "theta", "psi")]
        assert got == pytest.approx([phi, theta, psi], abs=1e-9)
    assert all(abs(f(np.eye(3))) == 0.0 for _, f in funcs.values())  # initial attitude


EULER_CHECK = """model EulerCheck
  parameter Real phi = 0;
  parameter Real theta = 0;
  parameter Real psi = 0;
  Modelica.Mechanics.MultiBody.Frames.Orientation R =
    Modelica.Mechanics.MultiBody.Frames.axesRotations({{3, 2, 1}}, {{psi, theta, phi}}, zeros(3));
  Real P_bi[3, 3];
  output Real P11, P12, P13, P21, P22, P23, P31, P32, P33, phi_out, theta_out, psi_out;
equation
  P_bi = transpose(R.T);
  P11 = P_bi[1, 1]; P12 = P_bi[1, 2]; P13 = P_bi[1, 3];
  P21 = P_bi[2, 1]; P22 = P_bi[2, 2]; P23 = P_bi[2, 3];
  P31 = P_bi[3, 1]; P32 = P_bi[3, 2]; P33 = P_bi[3, 3];
  phi_out = {phi};
  theta_out = {theta};
  psi_out = {psi};
end EulerCheck;
"""


@pytest.mark.slow
@pytest.mark.parametrize("path, dcm, names", EULER_OUTPUTS, ids=["balloon", "two_branch", "spacecraft"])
def test_model_euler_formulas_with_the_msl_compiled(path, dcm, names, tmp_path):
    """The model's Euler formulas and the MSL's own Frames.axesRotations({3,2,1}, {psi, theta, phi}),
    compiled, against the project's dcm_from_euler at random attitudes."""
    need_modelica()
    if modelica.find_compiler().name != "rumoca":
        pytest.skip("parameter sweeps use rumoca's API")
    import rumoca
    funcs = model_euler_formulas(path, dcm, names)
    check = tmp_path / "EulerCheck.mo"
    check.write_text(EULER_CHECK.format(**{a: e for a, (e, _) in funcs.items()}))
    m = rumoca.Session(roots=[str(modelica.find_msl())]).load(str(check), model="EulerCheck")
    for phi, theta, psi in random_angles(np.random.default_rng(2), 12):
        r = m.simulate((0.0, 0.01), dt=0.01, params={"phi": phi, "theta": theta, "psi": psi})
        P = np.array([[r[f"P{i}{j}"][-1] for j in (1, 2, 3)] for i in (1, 2, 3)])
        assert np.allclose(P, dcm_from_euler([phi, theta, psi]), rtol=0, atol=1e-14)
        got = [r[f"{a}_out"][-1] for a in ("phi", "theta", "psi")]
        assert got == pytest.approx([phi, theta, psi], abs=1e-12)


# --------------------------------------------------------------------------
# OpenModelica runner script (without OpenModelica)
# --------------------------------------------------------------------------

def load_script():
    spec = importlib.util.spec_from_file_location("run_openmodelica", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_exit_2_without_openmodelica(monkeypatch, tmp_path, capsys):
    mod = load_script()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == "OMPython" else real_find_spec(name, *a))
    monkeypatch.setattr(mod.shutil, "which", lambda *a, **k: None)
    monkeypatch.delenv("OPENMODELICAHOME", raising=False)
    out = tmp_path / "balloon.csv"
    assert mod.main(["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "OpenModelica not found" in err and "omc" in err and "OMPython" in err
    assert not out.exists()


#: these tests drive the script's omc path, which it takes only without OMPython
no_ompython = pytest.mark.skipif(importlib.util.find_spec("OMPython") is not None,
                                 reason="OMPython is installed in this interpreter")


def _env_without_openmodelica(path_dirs):
    env = {k: v for k, v in os.environ.items() if k != "OPENMODELICAHOME"}
    env["PATH"] = os.pathsep.join(str(p) for p in path_dirs)
    return env


@no_ompython
def test_script_subprocess_exit_2(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "balloon.csv"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)],
                          env=_env_without_openmodelica([empty]), capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "OpenModelica not found" in proc.stderr
    assert not out.exists()


FAKE_OMC = """\
#!{python}
import os, re, shutil, sys
mos = open(sys.argv[1]).read()
shutil.copy(sys.argv[1], os.environ["FAKE_OMC_LOG"])
stop = float(re.search(r"stopTime=([0-9.eE+-]+)", mos).group(1))
names = ["time", "x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2"]
times = [0.0, 0.004] + [k * 0.01 for k in range(1, int(round(stop / 0.01)) + 1)]
times.insert(3, times[2])  # a duplicated time, as written at an event
del times[5]  # no sample at t = 0.03: the runner must interpolate
with open("BalloonSystem_res.csv", "w") as f:
    f.write(",".join('"%s"' % n for n in names) + ",\\n")
    for i, t in enumerate(times):
        vals = [t] + [(j + 1) * t for j in range(9)]
        if i == 3:
            vals = [t] + [v + 1.0 for v in vals[1:]]  # value after the event
        f.write(",".join(repr(v) for v in vals) + ",\\n")
print("record SimulationResult end SimulationResult;")
"""


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="fake omc uses a POSIX shebang")
@no_ompython
def test_script_with_fake_omc(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    omc = bindir / "omc"
    omc.write_text(FAKE_OMC.replace("{python}", sys.executable))
    omc.chmod(0o755)
    log = tmp_path / "script.mos"
    out = tmp_path / "ref" / "balloon.csv"
    env = _env_without_openmodelica([bindir])
    env["FAKE_OMC_LOG"] = str(log)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--stop", "0.05"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    mos = log.read_text()
    assert 'loadModel(Modelica, {"4.0.0"});' in mos
    assert f'loadFile("{MODEL.as_posix()}");' in mos
    sim = re.search(r"simulate\(BalloonSystem,[^;]*\);", mos).group(0)
    for part in ("stopTime=0.05", "numberOfIntervals=5", "tolerance=1e-10",
                 'outputFormat="csv"', 'variableFilter="x|y|z|phi|theta|psi|p|theta1|theta2"'):
        assert part in sim, part

    lines = out.read_text().splitlines()
    assert lines[0] == "t,x,y,z,phi,theta,psi,p,theta1,theta2"
    rows = [[float(v) for v in line.split(",")] for line in lines[1:]]
    assert [r[0] for r in rows] == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04, 0.05])
    for r in rows:
        shift = 1.0 if r[0] == pytest.approx(0.01) else 0.0  # last sample at the event
        assert r[1:] == pytest.approx([(j + 1) * r[0] + shift for j in range(9)])
