"""Structural checks of the Modelica model of the balloon system.

No Modelica compiler is needed: the model text is parsed just enough to catch
breakage (unbalanced brackets, renamed or retyped components, connections to
undeclared components or to connectors the MSL 4.x classes do not have,
parameter values that drift from the scenario, missing outputs).  The
3-2-1 Euler-angle extraction written in the model is checked numerically
against the MSL orientation convention.  The OpenModelica runner script is
tested without OpenModelica (clear failure, exit code 2) and against a fake
``omc`` executable.
"""

import importlib.util
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "validation" / "modelica" / "BalloonSystem.mo"
SCRIPT = ROOT / "validation" / "run_openmodelica.py"

MB = "Modelica.Mechanics.MultiBody."
SPRING_DAMPER = "Modelica.Mechanics.Translational.Components.SpringDamper"
ROT_DAMPER = "Modelica.Mechanics.Rotational.Components.Damper"

# (component name, MSL 4.x class)
COMPONENTS = (
    ("world", MB + "World"),
    ("balloon", MB + "Parts.Body"),
    ("chain", MB + "Parts.FixedTranslation"),
    ("prismatic", MB + "Joints.Prismatic"),
    ("springDamper", SPRING_DAMPER),
    ("slider", MB + "Parts.PointMass"),
    ("revolute1", MB + "Joints.Revolute"),
    ("damper1", ROT_DAMPER),
    ("rod1", MB + "Parts.FixedTranslation"),
    ("mass1", MB + "Parts.PointMass"),
    ("revolute2", MB + "Joints.Revolute"),
    ("damper2", ROT_DAMPER),
    ("rod2", MB + "Parts.FixedTranslation"),
    ("mass2", MB + "Parts.PointMass"),
    ("buoyancy", MB + "Forces.WorldForce"),
)

# Connectors of these classes in MSL 4.x (WorldForce.frame_resolve is
# conditional and not used here; the joint flanges exist with useAxisFlange).
CONNECTORS = {
    MB + "World": {"frame_b"},
    MB + "Parts.Body": {"frame_a"},
    MB + "Parts.FixedTranslation": {"frame_a", "frame_b"},
    MB + "Parts.PointMass": {"frame_a"},
    MB + "Joints.Prismatic": {"frame_a", "frame_b", "axis", "support"},
    MB + "Joints.Revolute": {"frame_a", "frame_b", "axis", "support"},
    MB + "Forces.WorldForce": {"frame_b"},
    SPRING_DAMPER: {"flange_a", "flange_b"},
    ROT_DAMPER: {"flange_a", "flange_b"},
}

# The kinematic tree, the 1-D force elements and the buoyancy (world is only
# the inner gravity/reference object and stays unconnected).
CONNECTIONS = {frozenset(pair) for pair in (
    ("balloon.frame_a", "chain.frame_a"),
    ("chain.frame_b", "prismatic.frame_a"),
    ("prismatic.frame_b", "slider.frame_a"),
    ("prismatic.frame_b", "revolute1.frame_a"),
    ("revolute1.frame_b", "rod1.frame_a"),
    ("rod1.frame_b", "mass1.frame_a"),
    ("rod1.frame_b", "revolute2.frame_a"),
    ("revolute2.frame_b", "rod2.frame_a"),
    ("rod2.frame_b", "mass2.frame_a"),
    ("springDamper.flange_a", "prismatic.support"),
    ("springDamper.flange_b", "prismatic.axis"),
    ("damper1.flange_a", "revolute1.support"),
    ("damper1.flange_b", "revolute1.axis"),
    ("damper2.flange_a", "revolute2.support"),
    ("damper2.flange_b", "revolute2.axis"),
    ("buoyancy.frame_b", "balloon.frame_a"),
)}

# Modifiers each component must carry (whitespace removed).  Names are the
# MSL 4.x parameter / variable names read from the library sources.
MODIFIERS = {
    "world": {"g": "g", "n": "{0,-1,0}"},
    "balloon": {"m": "m_B", "r_CM": "{0,0,0}", "I_11": "I_B11", "I_22": "I_B22",
                "I_33": "I_B33", "I_21": "I_B21", "I_31": "I_B31", "I_32": "I_B32",
                "useQuaternions": "true", "r_0": "(start={0,0,0},eachfixed=true)",
                "v_0": "(start={0,0,0},eachfixed=true)", "angles_fixed": "true",
                "angles_start": "{0,0,0}", "w_0_fixed": "true", "w_0_start": "{0,0,0}"},
    "chain": {"r": "r_BC"},
    "prismatic": {"useAxisFlange": "true", "n": "t_axis",
                  "s": "(fixed=true,start=p_0)", "v": "(fixed=true,start=pd_0)"},
    "springDamper": {"c": "k", "d": "d_s", "s_rel0": "0"},
    "slider": {"m": "m_S"},
    "revolute1": {"useAxisFlange": "true", "n": "n_r1",
                  "phi": "(fixed=true,start=theta1_0)", "w": "(fixed=true,start=thetad1_0)"},
    "damper1": {"d": "d_p1"},
    "rod1": {"r": "r_SP1"},
    "mass1": {"m": "m_P1"},
    "revolute2": {"useAxisFlange": "true", "n": "n_r2",
                  "phi": "(fixed=true,start=theta2_0)", "w": "(fixed=true,start=thetad2_0)"},
    "damper2": {"d": "d_p2"},
    "rod2": {"r": "r_P1P2"},
    "mass2": {"m": "m_P2"},
    "buoyancy": {"resolveInFrame": MB + "Types.ResolveInFrameB.world", "force": "F_buoy"},
}

# Scenario numbers (balloon-scenario.md, paper Table 1) and their units.
SCENARIO = {
    "g": (9.81, "m/s2"),
    "m_B": (10, "kg"),
    "I_B11": (5, "kg.m2"), "I_B22": (10, "kg.m2"), "I_B33": (10, "kg.m2"),
    "I_B21": (0, "kg.m2"), "I_B31": (0, "kg.m2"), "I_B32": (-7, "kg.m2"),
    "r_BC": ([0, -2, 0], "m"),
    "m_S": (1, "kg"),
    "t_axis": ([1, 0, -1], "1"),
    "k": (50, "N/m"),
    "d_s": (5, "N.s/m"),
    "p_0": (0, "m"),
    "pd_0": (0, "m/s"),
    "m_P1": (2, "kg"),
    "n_r1": ([0, 0, 1], "1"),
    "r_SP1": ([0, -1.2, 0], "m"),
    "d_p1": (0.5, "N.m.s/rad"),
    "theta1_0_deg": (170, "deg"),
    "thetad1_0": (0, "rad/s"),
    "m_P2": (3, "kg"),
    "n_r2": ([0, 0, 1], "1"),
    "r_P1P2": ([0, -1.6, 0], "m"),
    "d_p2": (0.5, "N.m.s/rad"),
    "theta2_0_deg": (-170, "deg"),
    "thetad2_0": (0, "rad/s"),
}
DERIVED = {
    "theta1_0": "Modelica.Units.Conversions.from_deg(theta1_0_deg)",
    "theta2_0": "Modelica.Units.Conversions.from_deg(theta2_0_deg)",
    "m_G": "m_B+m_S+m_P1+m_P2",
    "F_buoy": "{0,m_G*g,0}",
}

OUTPUTS = {"x": "m", "y": "m", "z": "m", "phi": "rad", "theta": "rad", "psi": "rad",
           "p": "m", "theta1": "rad", "theta2": "rad"}
OUTPUT_EQUATIONS = {
    "x": "balloon.r_0[1]", "y": "balloon.r_0[2]", "z": "balloon.r_0[3]",
    "p": "prismatic.s", "theta1": "revolute1.phi", "theta2": "revolute2.phi",
}

IDENT = r"[A-Za-z_]\w*"


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


@pytest.fixture(scope="module")
def source():
    return split_source(MODEL.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def code(source):
    return source[0]


@pytest.fixture(scope="module")
def bare(source):
    return source[1]


def squash(s):
    return re.sub(r"\s+", "", s)


def balanced_group(text, start):
    """Text of the bracket group opening at text[start] (without the brackets)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = []
    for j in range(start, len(text)):
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in pairs.values():
            assert stack and stack.pop() == c, f"mismatched {c!r} at {j}"
            if not stack:
                return text[start + 1:j]
    raise AssertionError("unbalanced group")


def split_top_level(s, sep=","):
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def declarations(bare):
    """{component name: (class, modifier text)} for Modelica.* component declarations."""
    out = {}
    for m in re.finditer(rf"\b(Modelica(?:\.{IDENT})+)\s+({IDENT})\s*(\(?)", bare):
        cls, name, paren = m.groups()
        assert name not in out, f"component {name} declared twice"
        mods = balanced_group(bare, m.end() - 1) if paren else ""
        out[name] = (cls, mods)
    return out


def modifiers(mod_text):
    """'a=1, b(c=2)' -> {'a': '1', 'b': '(c=2)'} with whitespace removed."""
    out = {}
    for item in split_top_level(mod_text):
        m = re.match(rf"(?:each\s+)?(?:final\s+)?({IDENT})\s*(.*)$", item, re.S)
        key, rest = m.groups()
        rest = squash(rest)
        out[key] = rest[1:] if rest.startswith("=") else rest
    return out


def parameters(bare):
    """{name: value expression} of 'parameter Real name[...](...) = value' (whitespace removed)."""
    out = {}
    pattern = rf"\bparameter\s+Real\s+({IDENT})\s*(?:\[[^\]]*\])?\s*(\()?"
    for m in re.finditer(pattern, bare):
        pos = m.end()
        if m.group(2):
            pos = m.end() - 1 + len(balanced_group(bare, m.end() - 1)) + 2
        rest = re.match(r"\s*=\s*([^;]+);", bare[pos:])
        assert rest, f"parameter {m.group(1)} has no value"
        out[m.group(1)] = squash(rest.group(1))
    return out


def number(expr):
    if expr.startswith("{"):
        return [float(v) for v in split_top_level(expr[1:-1])]
    return float(expr)


def equation_section(bare):
    parts = re.split(r"\bequation\b", bare)
    assert len(parts) == 2, "expected exactly one equation section"
    return parts[1]


# --------------------------------------------------------------------------
# Model text
# --------------------------------------------------------------------------

def test_model_file_exists():
    assert MODEL.is_file(), MODEL


def test_brackets_balanced(bare):
    pairs = {")": "(", "}": "{", "]": "["}
    stack = []
    for lineno, line in enumerate(bare.splitlines(), 1):
        for c in line:
            if c in "({[":
                stack.append((c, lineno))
            elif c in pairs:
                assert stack, f"unmatched {c!r} on line {lineno}"
                opening, where = stack.pop()
                assert opening == pairs[c], f"{opening!r} (line {where}) closed by {c!r} (line {lineno})"
    assert not stack, f"unclosed {stack[-1][0]!r} from line {stack[-1][1]}"


def test_model_begins_and_ends(bare):
    text = bare.strip()
    text = re.sub(r"^within\s*[\w.]*\s*;", "", text).strip()
    assert re.match(r"model\s+BalloonSystem\b", text), "file must start with 'model BalloonSystem'"
    assert re.search(r"\bend\s+BalloonSystem\s*;$", text), "file must end with 'end BalloonSystem;'"
    assert len(re.findall(r"\bmodel\b", text)) == 1, "exactly one model expected"
    assert len(re.findall(r"\bend\s+BalloonSystem\b", text)) == 1


def test_components_declared_with_msl_classes(bare):
    decls = declarations(bare)
    for name, cls in COMPONENTS:
        assert name in decls, f"component {name} ({cls}) not declared"
        assert decls[name][0] == cls, f"{name} is a {decls[name][0]}, expected {cls}"
    extra = set(decls) - {name for name, _ in COMPONENTS}
    assert not extra, f"undeclared in COMPONENTS: {sorted(extra)}"
    assert re.search(r"\binner\s+Modelica\.Mechanics\.MultiBody\.World\s+world\b", bare), \
        "world must be declared 'inner'"


@pytest.mark.parametrize("name", sorted(MODIFIERS))
def test_component_modifiers(bare, name):
    mods = modifiers(declarations(bare)[name][1])
    for key, value in MODIFIERS[name].items():
        assert key in mods, f"{name}: modifier {key} missing"
        assert mods[key] == value, f"{name}.{key} = {mods[key]}, expected {value}"


def test_connections(bare):
    decls = declarations(bare)
    eqs = equation_section(bare)
    found = re.findall(rf"\bconnect\s*\(\s*([\w.\[\]]+)\s*,\s*([\w.\[\]]+)\s*\)\s*;", eqs)
    assert len(found) == len(re.findall(r"\bconnect\b", bare)), "malformed connect statement"
    seen = set()
    for pair in found:
        for end in pair:
            comp, _, connector = end.partition(".")
            assert comp in decls, f"connect to undeclared component {comp!r}"
            cls = decls[comp][0]
            assert connector in CONNECTORS.get(cls, ()), f"{cls} has no connector {connector!r}"
        key = frozenset(pair)
        assert key not in seen, f"duplicate connect{pair}"
        seen.add(key)
    assert seen == CONNECTIONS, (f"missing: {sorted(map(sorted, CONNECTIONS - seen))}, "
                                 f"unexpected: {sorted(map(sorted, seen - CONNECTIONS))}")
    connected = {end.partition(".")[0] for pair in found for end in pair}
    assert connected == {name for name, _ in COMPONENTS} - {"world"}


def test_scenario_parameters(bare, code):
    params = parameters(bare)
    for name, (value, unit) in SCENARIO.items():
        assert name in params, f"parameter {name} missing"
        got = number(params[name])
        assert got == pytest.approx(value, abs=1e-15), f"{name} = {got}, scenario {value}"
        m = re.search(rf"\bparameter\s+Real\s+{name}\b[^;]*?\bunit\s*=\s*\"([^\"]*)\"", code)
        assert m and m.group(1) == unit, f"{name}: unit {m and m.group(1)!r}, expected {unit!r}"
    for name, expr in DERIVED.items():
        assert params.get(name) == expr, f"{name} = {params.get(name)}, expected {expr}"
    unknown = set(params) - set(SCENARIO) - set(DERIVED)
    assert not unknown, f"parameters not checked: {sorted(unknown)}"
    # Buoyancy cancels the total weight: 16 kg * 9.81 m/s2 = 156.96 N.
    m_g = sum(SCENARIO[k][0] for k in ("m_B", "m_S", "m_P1", "m_P2"))
    assert m_g * SCENARIO["g"][0] == pytest.approx(156.96)


def test_outputs_declared_with_units(bare, code):
    decl = dict(re.findall(rf"\boutput\s+Real\s+({IDENT})\s*\(([^)]*)\)", code))
    assert set(decl) == set(OUTPUTS)
    for name, unit in OUTPUTS.items():
        m = re.search(r"\bunit\s*=\s*\"([^\"]*)\"", decl[name])
        assert m and m.group(1) == unit, f"output {name}: unit {m and m.group(1)!r}, expected {unit!r}"
    eqs = equation_section(bare)
    for name in OUTPUTS:
        assert len(re.findall(rf"(?<![\w.]){name}\s*=(?!=)", eqs)) == 1, \
            f"output {name} needs exactly one defining equation"
    for name, expr in OUTPUT_EQUATIONS.items():
        m = re.search(rf"(?<![\w.]){name}\s*=\s*([^;]+);", eqs)
        assert squash(m.group(1)) == expr, f"{name} = {m.group(1)}, expected {expr}"


def test_experiment_annotation(bare):
    m = re.search(r"\bexperiment\s*\(([^)]*)\)", bare)
    assert m, "experiment annotation missing"
    settings = {k: float(v) for k, v in (item.split("=") for item in split_top_level(squash(m.group(1))))}
    assert settings == {"StartTime": 0.0, "StopTime": 20.0, "Interval": 0.01, "Tolerance": 1e-10}


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


def scenario_dcm(phi, theta, psi):
    """P_bi = Rz(psi) Ry(theta) Rx(phi) (balloon axes as columns, in R_i)."""
    cx, sx, cy, sy, cz, sz = (math.cos(phi), math.sin(phi), math.cos(theta), math.sin(theta),
                              math.cos(psi), math.sin(psi))
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def model_euler_formulas(bare):
    """The model's equations for phi, theta, psi as Python callables of P_bi."""
    eqs = equation_section(bare)
    assert squash(re.search(r"\bP_bi\s*=\s*([^;]+);", eqs).group(1)) == \
        "transpose(balloon.frame_a.R.T)"
    funcs = {}
    for name in ("phi", "theta", "psi"):
        expr = squash(re.search(rf"(?<![\w.]){name}\s*=\s*([^;]+);", eqs).group(1))
        py = re.sub(r"P_bi\[(\d),(\d)\]", lambda m: f"P[{int(m[1]) - 1}][{int(m[2]) - 1}]", expr)
        py = py.replace("^", "**")
        assert re.fullmatch(r"[\w\[\]()*+\-/.,]+", py), py
        funcs[name] = (lambda code: lambda P: eval(code, {"atan2": math.atan2, "sqrt": math.sqrt,
                                                          "P": P}))(py)
    return funcs


def test_msl_orientation_matches_scenario_dcm():
    """MSL axesRotations({3,2,1}, {psi, theta, phi}).T is the transpose of P_bi."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        phi, psi = rng.uniform(-math.pi, math.pi, 2)
        theta = rng.uniform(-math.pi / 2, math.pi / 2)
        T = msl_axes_rotations_T((3, 2, 1), (psi, theta, phi))
        assert np.allclose(T.T, scenario_dcm(phi, theta, psi), atol=1e-14)


def test_model_euler_angles_invert_the_dcm(bare):
    funcs = model_euler_formulas(bare)
    rng = np.random.default_rng(1)
    for _ in range(200):
        phi, psi = rng.uniform(-math.pi, math.pi, 2)
        theta = rng.uniform(-math.pi / 2 + 1e-6, math.pi / 2 - 1e-6)
        T = msl_axes_rotations_T((3, 2, 1), (psi, theta, phi))  # what MSL stores in R.T
        P = T.T
        assert funcs["phi"](P) == pytest.approx(phi, abs=1e-9)
        assert funcs["theta"](P) == pytest.approx(theta, abs=1e-9)
        assert funcs["psi"](P) == pytest.approx(psi, abs=1e-9)
    assert all(abs(f(np.eye(3))) == 0.0 for f in funcs.values())  # initial attitude


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


def _env_without_openmodelica(path_dirs):
    env = {k: v for k, v in os.environ.items() if k != "OPENMODELICAHOME"}
    env["PATH"] = os.pathsep.join(str(p) for p in path_dirs)
    return env


@pytest.mark.skipif(importlib.util.find_spec("OMPython") is not None,
                    reason="OMPython is installed in this interpreter")
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


@pytest.mark.skipif(os.name == "nt", reason="fake omc uses a POSIX shebang")
@pytest.mark.skipif(importlib.util.find_spec("OMPython") is not None,
                    reason="OMPython is installed in this interpreter")
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
