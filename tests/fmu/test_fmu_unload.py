"""Several TITOP FMUs in one process, freed and unloaded in any order (issue 15, item 4).

All TITOP FMUs of a process share one Python interpreter. In a C host it used
to be finalised when the first-loaded FMU's library was unloaded, so the other
instances crashed at their next call (``PyGILState_Ensure``), and a TITOP FMU
loaded afterwards could not import numpy again. The FMU binaries are now never
unloaded (``-z nodelete``, see ``shim.c``): the interpreter lives until the
process exits, and is released once then.

* a C host (``c/fmu_unload_order.c``): instances of two FMUs, of one FMU from
  one unzipped folder and from two, freed (``fmi2Terminate``,
  ``fmi2FreeInstance``) and unloaded (``dlclose``) in every order, the
  survivors stepped after each event, the FMU loaded again at the end, a clean
  exit; every order in its own process;
* libcosim, a C++ co-simulation library, in a C process
  (``c/fmu_libcosim.c``, with the ``libcosimc`` of the ``libcosimpy`` wheel)
  and through ``libcosimpy`` in a Python process: its own teardown (skipped
  without libcosimpy);
* FMPy in a Python process (where the interpreter is the host's): every order
  of freeing four instances (FMPy's ``freeInstance`` also unloads).
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fmu_fixtures import compile_c, fmu_dir, fmu_paths, host_env, unzip_fmu  # noqa: F401

C_DIR = Path(__file__).parent / "c"
X, Y = "revolute_c1", "welded_c0"          # an FMU with states, one without


@pytest.fixture(scope="module")
def unload_host(tmp_path_factory):
    return compile_c(C_DIR / "fmu_unload_order.c", tmp_path_factory.mktemp("unload") / "fmu_unload_order")


@pytest.fixture(scope="module")
def folders(fmu_paths, tmp_path_factory):
    """Unzipped FMUs: ``x1`` and ``x2`` two folders of FMU X, ``y`` one of FMU Y."""
    d = tmp_path_factory.mktemp("unzipped")
    return {"x1": unzip_fmu(fmu_paths[X], d / "x1"), "x2": unzip_fmu(fmu_paths[X], d / "x2"),
            "y": unzip_fmu(fmu_paths[Y], d / "y")}


def run_orders(exe, env, instances, order="all", timeout=600):
    """Run ``order`` (default: every order) on ``instances`` (``(dir, id, guid)``), the FMU
    loaded again at the end; the results ``{order: "ok" | "FAILED ..."}`` and the output."""
    args = [str(exe), "-r", "-t", "60", order] + [str(a) for inst in instances for a in inst]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    results = dict(line.split(" ", 2)[1:] for line in r.stdout.splitlines() if line.startswith("result "))
    assert results, r.stdout + r.stderr
    assert (r.returncode == 0) == all(v == "ok" for v in results.values()), r.stdout + r.stderr
    return results, r.stdout + r.stderr


def check_all_ok(results, output, n_instances):
    n_orders = {2: 6, 3: 90}[n_instances]       # (2n)! / 2^n: each F<i> before its U<i>
    assert len(results) == n_orders, output
    failed = {o: v for o, v in results.items() if v != "ok"}
    assert not failed, f"{len(failed)} of {n_orders} orders failed: {failed}\n{output[-3000:]}"
    assert output.count("event reload") == n_orders
    for bad in ("fail ", "corrupted", "Fatal Python error"):
        assert bad not in output, output
    errors = [line for line in output.splitlines() if line.startswith("log ") and line.split()[2] in ("Error", "Fatal")]
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.parametrize("pair", [("x1", "y"), ("x1", "x2"), ("x1", "x1")],
                         ids=["two FMUs", "one FMU, two folders", "one FMU, one folder"])
def test_two_instances_freed_in_every_order_in_a_c_host(unload_host, host_env, folders, pair):
    """The first-loaded FMU freed and unloaded first (F0,U0,...) crashed the other (signal 11)."""
    results, output = run_orders(unload_host, host_env, [folders[k] for k in pair])
    check_all_ok(results, output, 2)


@pytest.mark.slow
@pytest.mark.parametrize("trio", [("x1", "x1", "y"), ("x1", "x2", "y")],
                         ids=["one folder twice and another FMU", "two folders and another FMU"])
def test_three_instances_freed_in_every_order_in_a_c_host(unload_host, host_env, folders, trio):
    results, output = run_orders(unload_host, host_env, [folders[k] for k in trio])
    check_all_ok(results, output, 3)


def test_the_c_host_runs_the_order_asked_and_reports_a_failure(unload_host, host_env, folders):
    """The C host runs the order given, and reports a failure as one (a missing FMU here)."""
    missing = (folders["y"][0].parent / "nowhere", Y, folders["y"][2])
    results, output = run_orders(unload_host, host_env, [folders["x1"], missing], order="F0,U0,F1,U1")
    assert list(results) == ["F0,U0,F1,U1"] and results["F0,U0,F1,U1"] == "FAILED exit 1", output
    assert "fail loading instance 1" in output and "nowhere/binaries/linux64/welded_c0.so failed" in output


# ---- libcosim ----

def libcosimc():
    spec = importlib.util.find_spec("libcosimpy")
    lib = spec and Path(spec.submodule_search_locations[0]) / "libcosimc" / "libcosimc.so"
    if not lib or not lib.is_file():
        pytest.skip("libcosimpy (libcosim's C library, on PyPI for Python >= 3.11) is not installed: "
                    "pip install libcosimpy")
    return lib


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["together", "separate", "sequence"])
def test_libcosim_teardown_in_a_c_process(fmu_paths, host_env, tmp_path, scenario):
    """libcosim frees and unloads the FMUs in its own order: with both in one execution, or one
    execution per FMU, the first destroyed while the second still steps (both crashed: signal 11),
    or destroyed before the second is created (the second failed: numpy cannot be imported twice)."""
    lib = libcosimc()
    exe = compile_c(C_DIR / "fmu_libcosim.c", tmp_path / "fmu_libcosim")
    env = dict(host_env, TMPDIR=str(tmp_path))          # where libcosim unzips the FMUs
    r = subprocess.run([str(exe), str(lib), scenario, str(fmu_paths[X]), str(fmu_paths[Y])],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("done") and "fail" not in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_libcosim_teardown_in_a_python_process(fmu_paths, tmp_path):
    libcosimc()
    script = textwrap.dedent("""
        import sys
        from libcosimpy.CosimExecution import CosimExecution
        from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
        from libcosimpy.CosimSlave import CosimLocalSlave
        log_output_level(CosimLogLevel.WARNING)
        e = CosimExecution.from_step_size(step_size=10_000_000)
        slaves = [CosimLocalSlave(fmu_path=p, instance_name=n) for p, n in zip(sys.argv[1:], "ab")]
        assert all(e.add_local_slave(s) >= 0 for s in slaves)
        assert e.simulate_until(100_000_000) and e.status().current_time == 100_000_000
        del e, slaves
        print("done")
    """)
    r = subprocess.run([sys.executable, "-c", script, str(fmu_paths[X]), str(fmu_paths[Y])],
                       capture_output=True, text=True, env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stdout + r.stderr


# ---- FMPy ----

FMPY_ORDERS = """
import itertools, sys
from fmpy.fmi2 import FMU2Slave

folders = [tuple(a.split("|")) for a in sys.argv[1:]]
for order in itertools.permutations(range(len(folders))):
    fmus = []
    for k, (d, mid, guid) in enumerate(folders):
        f = FMU2Slave(guid=guid, unzipDirectory=d, modelIdentifier=mid, instanceName=f"i{k}")
        f.instantiate()
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        f.exitInitializationMode()
        fmus.append([f, 0.0])
    for k in order:
        fmus[k][0].terminate()
        fmus[k][0].freeInstance()             # fmi2FreeInstance, then dlclose
        fmus[k] = None
        for s in filter(None, fmus):
            s[0].doStep(s[1], 0.01)
            s[1] += 0.01
            s[0].getReal([0])
    print("ok", order)
"""


@pytest.mark.slow
def test_every_free_order_in_fmpy(folders):
    """FMPy (a Python host) frees and unloads each instance in one call: every order of four
    instances (FMU X twice from one folder, once from another, FMU Y), the survivors stepped."""
    args = ["|".join(map(str, folders[k])) for k in ("x1", "x1", "x2", "y")]
    r = subprocess.run([sys.executable, "-c", FMPY_ORDERS, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok ") == 24, r.stdout + r.stderr


def _titop_fmu_file(_):
    import titop_fmu
    return titop_fmu.__file__


@pytest.mark.slow
def test_a_process_started_after_an_fmu_imports_the_installed_package():
    """A pythonfmu FMU run in this process leaves its resources folder off ``sys.path``: a
    process started afterwards (multiprocessing's spawn, as Dask's workers are) imports
    ``titop_fmu`` from where this process did, not from the FMU's folder, which is deleted
    with the FMU (a campaign after an in-process FMU run failed so, on an editable install)."""
    import multiprocessing

    import titop_fmu
    from titop_fmu.scenarios import balloon
    from titop_fmu.titop.units import TitopUnits
    before = list(sys.path)
    left = [p for p in before if p and (Path(p) / "titop_fmu").is_dir()
            and (Path(p).parent / "modelDescription.xml").is_file()]
    assert not left, f"FMU folders holding titop_fmu left on sys.path by what ran before: {left}"
    units, cs = TitopUnits("fmu", fmu_kind="pythonfmu"), balloon.system()
    units.unit_types(cs)
    name, spec = next(iter(cs.units.items()))
    unit = units.make_unit(name, spec.model, spec.parameters)
    try:
        assert sys.path == before
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            assert pool.map(_titop_fmu_file, [0]) == [titop_fmu.__file__]
    finally:
        unit.terminate()
