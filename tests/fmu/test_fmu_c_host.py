"""Every TITOP FMU in a C host (``tests/fmu/c/fmu_harness.c``, built with the machine's cc).

The harness loads the FMU binary as FMI tools do (``dlopen`` with
``RTLD_NOW | RTLD_LOCAL``, no Python in the process), instantiates,
initializes, sets a parameter and an input, reads every output, steps, asks
for a directional derivative (every output w.r.t. a seed over every input),
tries a step with the vendor function ``titopGetTrialSteps`` (it must give what
the standard calls give), saves and restores the FMU state. Its environment is
the one the FMU documentation asks for: the Python library on the loader path,
numpy on ``PYTHONPATH``; for the standalone FMUs, none at all (started by ``env -i``: no
Python anywhere on any path).
The printed outputs and derivatives must equal the in-process block's, and over one
second those of a standalone FMU equal the pythonfmu FMU's.

A second host (``tests/fmu/c/fmu_threads.c``) calls a pythonfmu FMU from several threads.
"""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from c_host import H, STEPS, harness, host_env, run  # noqa: F401
from fmu_fixtures import (IDS, Host, compile_c, fmu_dir, fmu_paths, kind, kind_paths, random_inputs,  # noqa: F401
                          random_setup, standalone_paths, unzip_fmu)
from marks import pythonfmu_slow, slow
from titop_fmu.fmu import catalog


@pytest.fixture
def kind_env(kind, request):
    """The environment of the C host for the kind: the documented one, or none (``env -i``)."""
    return request.getfixturevalue("host_env") if kind == "pythonfmu" else None


#: every FMU of each kind; of the pythonfmu kind, only revolute_c1 in the plain run
@pytest.mark.parametrize("kind, mid", [("pythonfmu", "revolute_c1"),
                                       *slow(*(("pythonfmu", m) for m in IDS if m != "revolute_c1")),
                                       *(("standalone", m) for m in IDS)], indirect=["kind"])
def test_fmu_loads_and_steps_in_a_c_host(harness, kind_env, kind_paths, tmp_path, mid):
    kind, n = catalog.parse_identifier(mid)
    iface = catalog.interface(kind, n)
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    values = iface.defaults()
    first = iface.param_scalars[0][0]                   # mass, or K[1,1]
    values[0] = 2.0 * values[0]
    inputs = [(vr[iface.input_names[0]], 0.3)] if iface.input_names else []
    outputs = [vr[o] for o in iface.output_names]
    seed = np.random.default_rng(len(outputs)).standard_normal(len(iface.input_names))
    knowns = list(zip([vr[i] for i in iface.input_names], seed.tolist()))
    r = run(harness, kind_env, kind_paths[mid], tmp_path, [(vr[first], values[0])], inputs, outputs,
            unknowns=outputs if knowns else (), knowns=knowns)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "state_roundtrip ok" in r.stdout
    assert "log Error" not in r.stdout and "log Fatal" not in r.stdout
    # the printed outputs are the in-process block's
    ys = [line.split() for line in r.stdout.splitlines() if line.startswith("y ")]
    assert len(ys) == (STEPS + 1) * len(outputs)
    got = np.array([float(v) for *_, v in ys]).reshape(STEPS + 1, len(outputs)) if outputs else None
    unit, _ = iface.make_unit(values)
    u = np.zeros(len(iface.input_names))
    if inputs:
        u[0] = 0.3
    unit.set_inputs(unit.ALL, u)
    for k in range(STEPS + 1):
        if k:
            unit.do_step(unit.t, H)
        if outputs:
            assert np.all(np.isfinite(got[k]))
            np.testing.assert_allclose(got[k], unit.outputs(), rtol=0, atol=1e-12 * max(1, np.abs(got).max()))
    if knowns:
        assert "call fmi2GetDirectionalDerivative OK" in r.stdout
        assert "call titopGetTrialSteps OK" in r.stdout and "trial_steps ok" in r.stdout
        dy = np.array([float(line.split()[2]) for line in r.stdout.splitlines() if line.startswith("dy ")])
        want = unit.directional_derivatives(unit.ALL, unit.ALL, seed[:, None])[:, 0]
        np.testing.assert_allclose(dy, want, rtol=0, atol=1e-12 * max(1, np.abs(want).max()))


@pytest.mark.parametrize("mid", IDS)
def test_standalone_fmu_runs_one_second_in_an_empty_environment(harness, standalone_paths, fmu_paths, tmp_path,
                                                                  mid):
    """At random parameters and inputs, 100 steps of 0.01 s in the C host started by ``env -i``:
    the outputs are the pythonfmu FMU's (through FMPy) to 1e-13."""
    iface, params, _ = random_setup(mid, seed=IDS.index(mid))
    params.pop("ext_frame", None)                 # an Integer, which the harness does not set: the default
    u = random_inputs(iface, np.random.default_rng(500 + IDS.index(mid)))
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    outputs = [vr[o] for o in iface.output_names]
    r = run(harness, None, standalone_paths[mid], tmp_path, [(vr[n], float(v)) for n, v in params.items()],
            list(zip([vr[n] for n in iface.input_names], u.tolist())), outputs, steps=100)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.array([float(line.split()[3]) for line in r.stdout.splitlines() if line.startswith("y ")])
    host = Host(fmu_paths[mid])
    try:
        host.initialize(params, dict(zip(iface.input_names, u)))
        want = [host.get(iface.output_names)]
        for k in range(100):
            host.fmu.doStep(k * H, H)
            want.append(host.get(iface.output_names))
    finally:
        host.free()
    want = np.concatenate(want)
    assert got.shape == want.shape
    assert np.abs(got - want).max(initial=0.0) <= 1e-13 * max(1.0, np.abs(want).max(initial=0.0))


@pythonfmu_slow
def test_bad_directional_derivative_in_a_c_host_is_an_error(harness, kind_env, kind_paths, tmp_path):
    """An input as unknown: an error status and a message, no crash, the instance freed."""
    iface = catalog.interface("revolute", 1)
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    r = run(harness, kind_env, kind_paths["revolute_c1"], tmp_path, unknowns=[vr["p.m[1]"]],
            knowns=[(vr["p.m[1]"], 1.0)])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "call fmi2GetDirectionalDerivative Error" in r.stdout
    assert any(line.startswith("log Error") and "p.m[1] is not an output" in line
               for line in r.stdout.splitlines()), r.stdout
    assert "call fmi2FreeInstance done" in r.stdout


@pythonfmu_slow
@pytest.mark.parametrize("mid,name,value,expect", [
    ("revolute_c1", "mass", -1.0, "parameter 'mass'"),
    ("floating_base_c1", "c1.r[3]", float("nan"), "parameter 'c1.r'"),
])
def test_bad_parameter_in_a_c_host_is_an_error(harness, kind_env, kind_paths, tmp_path, mid, name, value, expect):
    iface = catalog.interface(*catalog.parse_identifier(mid))
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    r = run(harness, kind_env, kind_paths[mid], tmp_path, params=[(vr[name], value)])
    assert r.returncode == 1, r.stdout + r.stderr         # an error status, the instance freed, no crash
    assert "call fmi2ExitInitializationMode Error" in r.stdout
    assert any(line.startswith("log Error") and expect in line for line in r.stdout.splitlines()), r.stdout
    assert "call fmi2FreeInstance done" in r.stdout


@pythonfmu_slow
def test_nan_input_in_a_c_host_is_an_error(harness, kind_env, kind_paths, tmp_path):
    iface = catalog.interface("welded", 1)
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    r = run(harness, kind_env, kind_paths["welded_c1"], tmp_path, inputs=[(vr["c1.w[2]"], float("nan"))])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "call fmi2SetReal(inputs) Error" in r.stdout
    assert any(line.startswith("log Error") and "c1.w[2]" in line for line in r.stdout.splitlines()), r.stdout


def test_missing_python_library_is_reported(harness, host_env, fmu_paths, tmp_path):
    env = dict(host_env, TITOP_FMU_LIBPYTHON="libpython-does-not-exist.so")
    r = run(harness, env, fmu_paths["welded_c0"], tmp_path)
    assert r.returncode == 2 and "call fmi2Instantiate NULL" in r.stdout
    assert "cannot load the Python library libpython-does-not-exist.so" in r.stdout


def test_the_documented_recipe_runs_where_another_python3_comes_first(harness, host_env, fmu_paths, tmp_path):
    """fmus/README.md's recipe, the Python library's folder on LD_LIBRARY_PATH and numpy's on
    PYTHONPATH, in an otherwise empty environment whose PATH finds another python3 first
    (/usr/bin's): the embedded interpreter took that one's standard library, not the library's,
    and failed ("No module named '_struct'"). The FMU gives the interpreter its home, the
    installation the library it loaded belongs to."""
    import shutil
    import sys
    other = shutil.which("python3", path="/usr/bin:/bin")
    if not other or Path(other).resolve().is_relative_to(Path(sys.base_prefix).resolve()):
        pytest.skip("no python3 in /usr/bin other than the Python that built the FMUs")
    env = {"PATH": "/usr/bin:/bin", **{k: host_env[k] for k in ("LD_LIBRARY_PATH", "PYTHONPATH") if k in host_env}}
    iface = catalog.interface("revolute", 1)
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    r = run(harness, env, fmu_paths["revolute_c1"], tmp_path, inputs=[(vr["joint.tau"], 0.3)],
            outputs=[vr["joint.q[3]"]])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "log Error" not in r.stdout and "log Fatal" not in r.stdout
    assert len([line for line in r.stdout.splitlines() if line.startswith("y ")]) == STEPS + 1


THREADS, CALLS = 3, 100


@pytest.fixture(scope="module")
def threads_host(tmp_path_factory):
    return compile_c(Path(__file__).parent / "c" / "fmu_threads.c", tmp_path_factory.mktemp("threads") / "fmu_threads")


@pytest.mark.slow
def test_calls_from_several_host_threads_keep_one_python_thread_state_each(threads_host, host_env, fmu_paths,
                                                                          tmp_path):
    """Three host threads each step their own instance (c/fmu_threads.c): each keeps one Python
    thread state through all its calls (before, a state was made and destroyed at every call),
    the interpreter holds one more state per live thread and none once they have exited, the
    outputs are the in-process block's, and the process exits cleanly (Python finalized)."""
    mid = "revolute_c1"
    iface = catalog.interface(*catalog.parse_identifier(mid))
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    d, _, guid = unzip_fmu(fmu_paths[mid], tmp_path / mid)
    outputs = [vr[o] for o in iface.output_names]
    args = [str(threads_host), str(d), mid, guid, str(THREADS), str(CALLS), "-i", f"{vr['joint.tau']}=0.3",
            "-h", repr(H)] + [a for o in outputs for a in ("-o", str(o))]
    r = subprocess.run(args, capture_output=True, text=True, env=host_env, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "done" in lines and not any(line.startswith(("fail", "log")) for line in lines), r.stdout
    count = {w[1]: int(w[2]) for w in (line.split() for line in lines) if w[0] == "states"}
    assert count["alive"] == count["before"] + THREADS and count["after"] == count["before"], count
    assert sorted(line for line in lines if " kept " in line) == [f"thread {k} kept yes" for k in range(THREADS)]
    unit, _ = iface.make_unit(iface.defaults())
    unit.set_input("joint.tau", 0.3)
    for k in range(CALLS):
        unit.do_step(k * H, H)
    want = unit.outputs()
    for k in range(THREADS):
        got = np.array([float(w[4]) for w in (line.split() for line in lines) if w[:3] == ["thread", str(k), "y"]])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1, np.abs(want).max()))
