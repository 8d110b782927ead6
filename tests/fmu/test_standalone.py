"""What is the standalone FMUs' own (``titop-fmu build --standalone``; their common contract with
the pythonfmu FMUs is checked for both kinds in test_fmus.py, test_fmu_vendor.py,
test_fmu_derivatives.py and test_fmu_c_host.py).

Checked: the command writes the 22 block FMUs, deterministically, each with its C sources;
the binaries need no library beyond libc and libm (linux64) or the C runtime and KERNEL32
(win64); bad parameters and inputs give the pythonfmu FMU's very messages (floats as
Python writes them); the tolerance of fmi2SetupExperiment replaces both rtol and atol; a
serialized state is checked when read back;
calls in the wrong mode are errors that leave the instance usable; under Wine, the win64
binary of every FMU gives the linux64 binary's outputs.
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from c_host import harness, harness_args, under_wine, windows_harness  # noqa: F401
from fmu_fixtures import (IDS, H, Host, compile_c, fmu_dir, fmu_paths, linked_libraries, messages,  # noqa: F401
                          random_inputs, random_setup, standalone_paths, unzipped)
from titop_fmu.fmu import catalog
from titop_fmu.fmu.standalone import mingw_compiler

from fmpy.fmi1 import FMICallException  # noqa: E402  (fmu_fixtures skips the module without FMPy)


@pytest.mark.slow
def test_the_cli_writes_the_22_block_fmus_deterministically(standalone_paths, tmp_path):
    from titop_fmu.cli import main
    assert main(["build", "--standalone", "--out", str(tmp_path)]) == 0
    built = sorted(tmp_path.glob("*.fmu"))
    assert [p.stem for p in built] == sorted(IDS) and len(built) == 22
    for p in built:
        assert p.read_bytes() == standalone_paths[p.stem].read_bytes(), p.name
    with zipfile.ZipFile(tmp_path / "revolute_c1.fmu") as z:
        names = set(z.namelist())
        md = z.read("modelDescription.xml").decode()
    assert {"modelDescription.xml", "binaries/linux64/revolute_c1.so", "sources/kernel.c", "sources/fmi2.c",
            "sources/tree.c", "sources/format.c", "sources/model.h", "sources/fmi2_types.h",
            "sources/model.c"} <= names
    assert ("binaries/win64/revolute_c1.dll" in names) == bool(mingw_compiler())
    assert not any(n.startswith("resources/") and n.endswith(".py") for n in names)     # no Python
    assert 'needsExecutionTool="false"' in md and 'tolerance="1e-10"' in md


def test_the_model_description_is_the_pythonfmu_fmus(standalone_paths, fmu_paths):
    """The same description but for the execution tool, the generation tool (a C-only FMU is not
    made by PythonFMU) and the GUID."""
    for mid in ("floating_base_c2", "revolute_inverse_c1", "loop_closure"):
        texts, tools = [], []
        for path in (standalone_paths[mid], fmu_paths[mid]):
            with zipfile.ZipFile(path) as z:
                md = z.read("modelDescription.xml").decode()
            tools.append(md.split('generationTool="')[1].split('"')[0])
            md = md.replace(f'generationTool="{tools[-1]}"', "")
            texts.append(md.replace('needsExecutionTool="false"', 'needsExecutionTool="true"').split('guid="')[0])
        assert texts[0] == texts[1], mid
        assert tools[0] == "titop-fmu (standalone FMU: C only)" and tools[1].startswith("titop-fmu (PythonFMU "), tools


def test_binaries_need_only_libc_and_libm(standalone_paths, tmp_path):
    for mid, path in standalone_paths.items():
        with zipfile.ZipFile(path) as z:
            z.extractall(tmp_path / mid)
        assert linked_libraries(tmp_path / mid / "binaries" / "linux64" / f"{mid}.so") == {"libc.so.6", "libm.so.6"}
        dll = tmp_path / mid / "binaries" / "win64" / f"{mid}.dll"
        if dll.exists() and shutil.which("x86_64-w64-mingw32-objdump"):
            assert linked_libraries(dll) == {"KERNEL32.dll", "msvcrt.dll"}, mid


# -- the same messages -------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
#: (FMU, parameters, inputs): each one an error of fmi2ExitInitializationMode or fmi2SetReal
BAD = [
    ("revolute_c1", {"mass": -1.0}, {}),
    ("revolute_c1", {"mass": -1.5e-07}, {}),
    ("welded_c0", {"mass": -1e16}, {}),
    ("welded_c0", {"mass": -0.0001}, {}),
    ("welded_c0", {"mass": -123456.789}, {}),
    ("revolute_c1", {"inertia[1,2]": 0.5}, {}),
    ("revolute_c1", {"inertia[1,1]": -1.0}, {}),
    ("revolute_c1", {"inertia[3,3]": NAN}, {}),
    ("welded_c1", {"inertia[1,2]": 2.0, "inertia[2,1]": 2.0}, {}),          # eigenvalues -1, 1, 3
    ("revolute_c0", {"axis[1]": 0.0, "axis[2]": 0.0, "axis[3]": 0.0}, {}),
    ("revolute_c0", {"mass": 0.0, "inertia[1,1]": 0.0, "inertia[2,2]": 0.0, "inertia[3,3]": 0.0}, {}),
    ("revolute_c1", {"q0": INF}, {}),
    ("prismatic_c1", {"k": -3.0}, {}),
    ("prismatic_inverse_c0", {"mass": 0.0}, {}),
    ("welded_c2", {"c2.r[2]": NAN}, {}),
    ("welded_c1", {"mount[3]": -INF}, {}),
    ("floating_base_c0", {"ext_frame": 3}, {}),
    ("floating_base_c1", {"mass": 0.0}, {}),
    ("floating_base_c1", {"inertia[1,1]": 0.0}, {}),
    ("floating_base_c0", {"twist0[5]": NAN}, {}),
    ("imposed_motion_base_c1", {"gravity[2]": INF}, {}),
    ("revolute_inverse_c1", {"rtol": 0.0}, {}),
    ("imposed_motion_base_c0", {"atol": -1.5e-7}, {}),
    ("loop_closure", {"K[1,1]": -5.0}, {}),
    ("loop_closure", {"D[1,2]": 1.0}, {}),
    ("loop_closure", {"K[6,6]": NAN}, {}),
    ("welded_c2", {}, {"c1.w[2]": NAN, "c2.w[1]": INF}),
    ("revolute_c1", {}, {"p.m[17]": -INF}),
]


@pytest.mark.parametrize("mid,params,inputs", BAD)
def test_errors_are_the_pythonfmu_messages(standalone_paths, fmu_paths, mid, params, inputs):
    got = messages(standalone_paths[mid], params, inputs)
    assert len(got) == 1 and got == messages(fmu_paths[mid], params, inputs), got


def test_logging_filters_by_status_and_category_and_escapes_percent(standalone_paths):
    """Messages below fmi2Warning only with logging on and their category enabled; errors always;
    '%' doubled (the host's logger takes the message as a format); a wrong GUID is refused."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    host = Host(standalone_paths["welded_c0"])
    try:
        host.fmu.setDebugLogging(True, ["logStatusError"])
        host.set({"inertia[3,3]": 5.0})
        host.initialize()
        assert host.log == []                                   # the warning's category is off
    finally:
        host.free()
    path = str(standalone_paths["welded_c0"])
    md = read_model_description(path)
    log = []
    fmu = FMU2Slave(guid="{50%d}", unzipDirectory=extract(path), modelIdentifier="welded_c0", instanceName="w")
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, category, message: log.append(message))
    with pytest.raises(Exception):
        fmu.instantiate(callbacks=callbacks)
    assert log == [f"fmi2Instantiate: the GUID {{50%%d}} is not this FMU's ({md.guid}): its model description "
                   "and binary do not match".encode()]


def stepped(path, mid, params, tolerance=None, steps=10):
    host = Host(path)
    try:
        host.fmu.setupExperiment(tolerance=tolerance, startTime=0.0)
        host.set(params)
        host.fmu.enterInitializationMode()
        host.fmu.exitInitializationMode()
        for k in range(steps):
            host.fmu.doStep(k * 0.1, 0.1)
        return host.get(catalog.interface_of(mid).output_names)
    finally:
        host.free()


def test_the_host_tolerance_replaces_rtol_and_atol(standalone_paths):
    """A base far from the origin (rtol sets its position's error scale) spinning fast (atol sets
    its quaternion's): the tolerance 1e-6 of fmi2SetupExperiment gives the run with rtol = atol =
    1e-6, not one with either left at 1e-10."""
    mid = "floating_base_c1"
    _, params, _ = random_setup(mid, seed=3)
    params.update({"twist0[1]": 300.0, "twist0[4]": 6.0, "twist0[5]": -5.0, "twist0[6]": 6.0, "r0[1]": 1e5,
                   "rtol": 1e-10, "atol": 1e-10})
    path, tol = standalone_paths[mid], 1e-6
    host_tol = stepped(path, mid, params, tolerance=tol)
    assert np.array_equal(host_tol, stepped(path, mid, dict(params, rtol=tol, atol=tol)))
    for rtol, atol in ((1e-10, tol), (tol, 1e-10), (1e-10, 1e-10)):
        other = stepped(path, mid, dict(params, rtol=rtol, atol=atol))
        assert 1e-15 < np.abs(host_tol - other).max() / np.abs(other).max() < 1e-3, (rtol, atol)


def test_a_fast_spinning_base_at_a_loose_tolerance_is_the_pythonfmu_fmu(standalone_paths, fmu_paths):
    """A base spinning at 10 rad/s about an oblique axis, its integrator at 1e-4: the quaternion
    drifts off the unit sphere within each step and is brought back after it (the states the
    step control weighs), as in the pythonfmu FMU: the same outputs over 1 s to 1e-13."""
    mid = "floating_base_c1"
    _, params, _ = random_setup(mid, seed=8)
    params.update({"twist0[4]": 6.0, "twist0[5]": -5.0, "twist0[6]": 6.0, "rtol": 1e-4, "atol": 1e-4})
    got, want = (stepped(p[mid], mid, params, steps=10) for p in (standalone_paths, fmu_paths))
    assert np.abs(got - want).max() <= 1e-13 * max(1.0, np.abs(want).max())


def test_a_serialized_state_is_checked(standalone_paths):
    def refused(host, data, expect):
        with pytest.raises(FMICallException):
            host.fmu.deSerializeFMUstate(data)
        assert expect in host.errors()[-1], host.errors()

    a = Host(standalone_paths["revolute_c1"], "a")
    try:
        a.initialize()
        a.fmu.doStep(0.0, H)
        blob = bytes(a.fmu.serializeFMUstate(a.fmu.getFMUstate()))
        assert blob[:8] == b"TITOPFMU"
        refused(a, b"{}", "not a serialized TITOP FMU state")
        refused(a, blob[:8] + (2).to_bytes(4, "little") + blob[12:], "version 2, this FMU reads version 1")
        refused(a, blob[:-8], "bytes")
        y = a.get(["c1.m[1]", "joint.q[3]"])
        a.fmu.doStep(H, H)
        a.fmu.setFMUstate(a.fmu.deSerializeFMUstate(blob))          # a good one still reads back
        assert np.array_equal(a.get(["c1.m[1]", "joint.q[3]"]), y)
    finally:
        a.free()
    b = Host(standalone_paths["floating_base_c1"], "b")      # (FMPy logs to the last instance made)
    try:
        refused(b, blob, "belongs to another FMU")
    finally:
        b.free()


#: a host in a process of its own (a crash must not end the test run): the FMU's state serialized
#: in step mode, its has_unit set to 0 (a blob that says "step mode, no model"), read back, set,
#: then a step; prints each call's outcome and the errors logged
BLOB_WITHOUT_MODEL = """
import sys
from fmu_fixtures import Host
from fmpy.fmi1 import FMICallException
host = Host(sys.argv[1])
host.initialize()
blob = bytearray(host.fmu.serializeFMUstate(host.fmu.getFMUstate()))
at = 16 + len(host.md.guid) + 4                            # mode, then has_unit (int32)
blob[at:at + 4] = (0).to_bytes(4, sys.byteorder)
for name, call in (("deSerialize", lambda: host.fmu.setFMUstate(host.fmu.deSerializeFMUstate(bytes(blob)))),
                   ("doStep", lambda: host.fmu.doStep(0.0, 0.01))):
    try:
        call()
        print(name, "ok")
    except FMICallException:
        print(name, "error")
print(host.errors())
"""


def test_a_state_blob_without_the_model_its_mode_needs_is_refused(standalone_paths):
    """The reference hosts' crash: a blob that reads back cleanly but says "step mode" with no
    model was accepted, and fmi2DoStep then dereferenced NULL (SIGSEGV). It is refused when read
    back, and the instance steps on."""
    support = str(Path(__file__).resolve().parents[1] / "support")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([support, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", BLOB_WITHOUT_MODEL, str(standalone_paths["revolute_c1"])],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[:2] == ["deSerialize error", "doStep ok"], r.stdout
    assert "fmi2DeSerializeFMUstate: the FMU state is inconsistent: a model is needed in this mode, and the state " \
           "has none" in lines[2]


def test_calls_in_the_wrong_mode_are_errors_and_the_instance_stays_usable(standalone_paths):
    host = Host(standalone_paths["revolute_c0"])
    try:
        for call, expect in ((host.fmu.exitInitializationMode, "fmi2ExitInitializationMode: not allowed in mode "
                              "instantiated"), (lambda: host.fmu.doStep(0.0, H), "fmi2DoStep: not allowed in mode "
                              "instantiated"), (host.fmu.terminate, "fmi2Terminate: not allowed in mode instantiated")):
            with pytest.raises(FMICallException):
                call()
            assert host.errors()[-1] == expect
        host.initialize()
        with pytest.raises(FMICallException):
            host.fmu.setupExperiment(startTime=0.0)
        assert host.errors()[-1] == "fmi2SetupExperiment: not allowed in mode step"
        host.fmu.doStep(0.0, H)
        host.fmu.terminate()
        with pytest.raises(FMICallException):
            host.fmu.doStep(H, H)
        assert host.errors()[-1] == "fmi2DoStep: not allowed in mode terminated"
        host.fmu.reset()
        host.initialize()
        host.fmu.doStep(0.0, H)
        assert np.isfinite(host.get(["joint.q[1]"])).all()
    finally:
        host.free()


def test_a_block_fmu_is_co_simulation_only(standalone_paths):
    """Block FMUs declare co-simulation only (as Model Exchange they would leave every host the
    algebraic loop between them to solve at each derivative evaluation; an assembly FMU gives
    Model Exchange with the loop solved inside): instantiated as Model Exchange, NULL and a message."""
    from fmpy import extract
    from fmpy.fmi2 import FMU2Model, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    path = str(standalone_paths["revolute_c1"])
    log = []
    fmu = FMU2Model(guid=unzipped(path)[0].guid, unzipDirectory=extract(path), modelIdentifier="revolute_c1",
                    instanceName="me")
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, category, message: log.append(message))
    with pytest.raises(Exception):
        fmu.instantiate(callbacks=callbacks)
    assert log == [b"fmi2Instantiate: this FMU supports co-simulation only"]


# -- win64 under Wine -------------------------------------------------------------------------

@pytest.mark.slow
def test_win64_binaries_under_wine_give_the_linux64_outputs(harness, standalone_paths, tmp_path):
    """Every FMU, at random parameters and inputs, 100 steps in the C host, its win64 binary in the
    host built with MinGW-w64 under Wine (one launch for all) and its linux64 binary in the host
    built here: the same outputs, directional derivatives (with the states too: the forward-mode
    kernel in C++, compiled by MinGW-w64's g++) and error messages."""
    exe = windows_harness(tmp_path)
    groups = []
    for mid in IDS:
        iface, params, _ = random_setup(mid, seed=IDS.index(mid))
        params.pop("ext_frame", None)
        u = random_inputs(iface, np.random.default_rng(700 + IDS.index(mid)))
        vr = {v.name: k for k, v in enumerate(iface.variables)}
        outputs = [vr[o] for o in iface.output_names]
        ins = [vr[n] for n in iface.input_names]
        groups.append(harness_args(standalone_paths[mid], tmp_path, [(vr[n], float(v)) for n, v in params.items()],
                                   list(zip(ins, u.tolist())), outputs, outputs if ins else (),
                                   list(zip(ins, (0.1 * u).tolist())), steps=100))
        if iface.state_names:       # the states read, derivatives with them (the forward-mode kernel)
            xs, dxs = [vr[x] for x in iface.state_names], [vr[f"der({x})"] for x in iface.state_names]
            seeds = np.random.default_rng(800 + IDS.index(mid)).standard_normal(len(ins) + len(xs))
            groups.append(harness_args(standalone_paths[mid], tmp_path,
                                       [(vr[n], float(v)) for n, v in params.items()], list(zip(ins, u.tolist())),
                                       xs + dxs, outputs + dxs, list(zip(ins + xs, seeds.tolist())), steps=10))
    bad = harness_args(standalone_paths["revolute_c1"], tmp_path, [(0, -1.5e-07)])        # an error message
    # the FMU folders relative to tmp_path, the hosts' working folder (Wine reads no Unix path there)
    args = [a.replace(f"{tmp_path}{os.sep}", "") for g in groups + [bad] for a in [*g, "--"]][:-1]
    (tmp_path / "args.txt").write_text("\n".join(args) + "\n")                 # too long for a command line
    linux = subprocess.run(["env", "-i", str(harness), "@args.txt"], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    win = under_wine(exe, ["@args.txt"], tmp_path)
    assert linux.returncode == win.returncode == 1, win.stdout[-2000:] + win.stderr[-2000:]
    lines = {k: [line.rstrip("\r") for line in r.stdout.splitlines()] for k, r in (("linux", linux), ("win", win))}
    # the values parsed: a value printed with %.17g may end in a 0, which glibc keeps and MinGW drops
    values = {k: np.array([float(line.split()[-1]) for line in v if line.startswith(("y ", "dy "))])
              for k, v in lines.items()}
    other = {k: [line for line in v if not line.startswith(("y ", "dy "))] for k, v in lines.items()}
    assert other["win"] == other["linux"]
    assert values["win"].shape == values["linux"].shape
    diff = np.abs(values["win"] - values["linux"]).max() / max(1.0, np.abs(values["linux"]).max())
    assert diff <= 1e-12, diff      # 2.3e-13 here, 191 values of 66096 differ: the C libraries' sin, cos, ...
    with_states = sum(bool(catalog.interface_of(mid).state_names) for mid in IDS)
    derivative_calls = [line for line in lines["linux"] if line.startswith("call fmi2GetDirectionalDerivative")]
    assert len(derivative_calls) > with_states and all(line.endswith(" OK") for line in derivative_calls)
    assert sum(line.startswith("fmu ") for line in lines["linux"]) == len(IDS) + with_states + 1
    assert any("invalid parameter 'mass': must be >= 0.0, got -1.5e-07" in line for line in lines["linux"])
    assert sum(line.startswith("y ") for line in lines["linux"]) > 100 * len(IDS)


@pytest.mark.slow
def test_the_compiled_objects_are_kept_and_reused(tmp_path, monkeypatch):
    """A standalone build compiles the C sources once per platform and keeps the objects in the
    cache (keyed by the sources, the compiler and the flags): the next build links those, the
    same bytes, and runs no compiler; a changed source compiles again."""
    from titop_fmu.fmu import standalone
    monkeypatch.setattr(standalone, "cache_root", lambda: tmp_path / "cache")
    runs = []
    real = standalone._run
    monkeypatch.setattr(standalone, "_run", lambda cmd, cwd, what: (runs.append(what), real(cmd, cwd, what)))
    platforms = standalone.compilers()
    builds = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        standalone.Compiler(tmp_path / name, platforms)
        builds.append(len(runs))
    assert builds[0] == 2 * len(platforms) and builds[1] == builds[0]          # compiled once, then reused
    for platform in platforms:
        objects = sorted(p.name for p in (tmp_path / "first" / platform).glob("*.o"))
        assert objects == ["control.o", "fmi2.o", "format.o", "kernel_dual.o", "tree.o"]
        for o in objects:
            assert (tmp_path / "first" / platform / o).read_bytes() == (tmp_path / "second" / platform / o).read_bytes()
    sources = standalone.source_files()
    monkeypatch.setattr(standalone, "source_files", lambda: dict(sources, **{"tree.c": sources["tree.c"] + b"\n"}))
    # a changed source: the compilers run again (counted, not run: this build's objects are not looked at)
    monkeypatch.setattr(standalone, "_run", lambda cmd, cwd, what: runs.append(what))
    (tmp_path / "changed").mkdir()
    standalone.Compiler(tmp_path / "changed", platforms)
    assert len(runs) == builds[1] + 2 * len(platforms)
