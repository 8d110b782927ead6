"""The TITOP FMUs through FMPy, against the in-process blocks.

Every FMU is built fresh for the session (``fmu_fixtures``), in both kinds (pythonfmu and
standalone: ``kind_paths``) for the checks of their common contract. Checked: FMPy's
validator finds no problem and ``simulate_fmu`` runs with the default
parameters; the FMU's outputs equal the in-process :class:`BlockUnit` of the
same block to 1e-12 for random parameters, states and inputs, before and after
steps and across a state save/restore; the declared ModelStructure holds;
instances are independent; every misuse is an ``fmi2Error`` with a message.
"""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from fmu_fixtures import (IDS, H, Host, fmu_dir, fmu_paths, kind, kind_paths, random_inputs,  # noqa: F401
                          random_setup, run_without_scipy, scalar_parameters, standalone_paths, unzipped)
from marks import by_kind
from titop_fmu.fmu import catalog

from fmpy import simulate_fmu  # noqa: E402  (fmu_fixtures skips the module without FMPy)
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

TOL = 1e-12


def close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.max(np.abs(a - b), initial=0.0) <= TOL * max(1.0, np.max(np.abs(b), initial=0.0))


# -- the standard tools' view --------------------------------------------------------------

@pytest.mark.parametrize("kind, mid", by_kind(IDS), indirect=["kind"])
def test_fmpy_validates(kind_paths, mid):
    pytest.importorskip("lark", reason="FMPy validates structured variable names with lark")
    assert validate_fmu(str(kind_paths[mid])) == []


@pytest.mark.parametrize("kind, mid", by_kind(IDS), indirect=["kind"])
def test_simulates_with_default_parameters(kind_paths, mid):
    r = simulate_fmu(str(kind_paths[mid]))
    assert len(r) > 10 and r["time"][-1] == pytest.approx(1.0)
    for name in r.dtype.names:
        assert np.all(np.isfinite(r[name])), name


def test_default_simulation_is_physical(kind_paths):
    """A free base falls: its child point, 1 m below P, is at -1 - g t^2 / 2 after 1 s."""
    r = simulate_fmu(str(kind_paths["floating_base_c1"]), output=["c1.m[14]", "c1.m[8]"])
    assert r["c1.m[14]"][-1] == pytest.approx(-1.0 - 0.5 * 9.81, abs=1e-9)
    assert r["c1.m[8]"][-1] == pytest.approx(-9.81, abs=1e-9)


def test_every_variable_has_a_declared_unit(kind_paths):
    for mid in ("revolute_c2", "prismatic_inverse_c1", "floating_base_c1", "loop_closure"):
        md, _ = unzipped(kind_paths[mid])
        units = {u.name for u in md.unitDefinitions}
        for v in md.modelVariables:
            if v.type == "Real":
                assert v.unit in units, (mid, v.name)
    md, _ = unzipped(kind_paths["revolute_c1"])
    unit = {v.name: v.unit for v in md.modelVariables}
    assert unit["joint.tau"] == "N.m" and unit["k"] == "N.m/rad" and unit["q0"] == "rad"
    assert [unit[f"p.m[{i}]"] for i in (1, 4, 7, 10, 13, 16)] == ["m/s2", "rad/s2", "m/s", "rad/s", "m", "rad"]
    assert [unit[f"p.w[{i}]"] for i in (1, 4)] == ["N", "N.m"]
    md, _ = unzipped(kind_paths["prismatic_c0"])
    unit = {v.name: v.unit for v in md.modelVariables}
    assert unit["joint.tau"] == "N" and unit["d"] == "N.s/m" and unit["joint.q[3]"] == "m"


# -- equal to the in-process block ---------------------------------------------------------

@pytest.mark.parametrize("mid", IDS)
def test_outputs_equal_the_in_process_unit(kind_paths, mid):
    iface, params, ref = random_setup(mid, seed=IDS.index(mid))
    rng = np.random.default_rng(100 + IDS.index(mid))
    host = Host(kind_paths[mid])
    ins, outs = list(iface.input_names), list(iface.output_names)
    try:
        u = random_inputs(iface, rng)
        host.initialize(params, dict(zip(ins, u)))
        ref.set_inputs(ref.ALL, u)
        assert close(host.get(outs), ref.outputs())
        reals = [n for n in params if host.var[n].type == "Real"]
        assert close(host.get(reals), [params[n] for n in reals])
        t = 0.0

        def steps(k):
            nonlocal t
            for _ in range(k):
                u = random_inputs(iface, rng)
                host.set(dict(zip(ins, u)))
                ref.set_inputs(ref.ALL, u)
                assert close(host.get(outs), ref.outputs())        # direct feedthrough, no doStep
                host.fmu.doStep(t, H)
                ref.do_step(ref.t, H)
                t += H
                assert close(host.get(outs), ref.outputs())

        steps(3)
        state, ref_state, t_saved = host.fmu.getFMUstate(), ref.get_state(), t
        steps(2)
        host.fmu.setFMUstate(state)
        ref.set_state(ref_state)
        t = t_saved
        assert close(host.get(outs), ref.outputs())
        steps(2)
        host.fmu.freeFMUstate(state)
        assert host.errors() == []
    finally:
        host.free()


def test_runs_in_libcosim(kind_paths):
    """A pendulum (revolute_c1 at random parameters, its parent's motion and its child's wrench
    held at random values) in libcosim, a C++ host: its outputs after each step are the
    in-process unit's."""
    pytest.importorskip("libcosimpy", reason="libcosim runs need libcosimpy (pip install -e '.[hosts]')")
    from hosts import libcosim_run
    mid = "revolute_c1"
    iface, params, ref = random_setup(mid, seed=11)
    u = random_inputs(iface, np.random.default_rng(12))
    start = {f"b.{n}": v for n, v in {**params, **dict(zip(iface.input_names, u))}.items()}
    outs = ["joint.q[1]", "joint.q[3]", "p.w[4]", "c1.m[16]"]
    _, y = libcosim_run({"b": kind_paths[mid]}, [], start, [f"b.{o}" for o in outs], 0.5, H)
    ref.set_inputs(ref.ALL, u)
    idx = [ref.output_names.index(o) for o in outs]
    want = []
    for k in range(len(y)):
        ref.do_step(k * H, H)
        want.append(ref.outputs()[idx])
    assert len(y) == 50 and close(y, np.array(want))


def test_state_restore_is_exact_and_serializes(kind_paths, kind):
    """Save, step, restore, step again: bit-identical outputs; the serialized state
    restored into another instance gives the same future."""
    mid = "floating_base_c2"
    iface, params, _ = random_setup(mid, seed=5)
    rng = np.random.default_rng(6)
    a, b = Host(kind_paths[mid], "a"), Host(kind_paths[mid], "b")
    outs, ins = list(iface.output_names), list(iface.input_names)
    try:
        a.initialize(params, dict(zip(ins, random_inputs(iface, rng))))
        b.initialize()
        for k in range(3):
            a.fmu.doStep(k * H, H)
        state = a.fmu.getFMUstate()
        blob = a.fmu.serializeFMUstate(state)
        u = random_inputs(iface, rng)
        a.set(dict(zip(ins, u)))
        a.fmu.doStep(3 * H, 0.05)
        y1 = a.get(outs)
        a.fmu.setFMUstate(state)
        a.set(dict(zip(ins, u)))
        a.fmu.doStep(3 * H, 0.05)
        assert np.array_equal(a.get(outs), y1)
        b.fmu.setFMUstate(b.fmu.deSerializeFMUstate(blob))
        assert np.array_equal(b.get(list(params)[:5]), a.get(list(params)[:5]))
        b.set(dict(zip(ins, u)))
        b.fmu.doStep(3 * H, 0.05)
        assert np.array_equal(b.get(outs), y1)
        a.fmu.freeFMUstate(state)
        if kind == "pythonfmu":
            assert json.loads(bytes(blob))["model"] == mid          # its JSON
    finally:
        a.free()
        b.free()


def test_four_instances_in_one_process_are_independent(kind_paths):
    mid = "revolute_c1"
    setups = [random_setup(mid, seed=40 + i) for i in range(4)]
    hosts = [Host(kind_paths[mid], f"pendulum{i}") for i in range(4)]
    rng = np.random.default_rng(44)
    try:
        for host, (iface, params, ref) in zip(hosts, setups):
            u = random_inputs(iface, rng)
            host.initialize(params, dict(zip(iface.input_names, u)))
            ref.set_inputs(ref.ALL, u)
        for k in range(4):
            for host, (iface, params, ref) in zip(hosts, setups):     # interleaved calls
                u = random_inputs(iface, rng)
                host.set(dict(zip(iface.input_names, u)))
                ref.set_inputs(ref.ALL, u)
            for host, (iface, params, ref) in zip(hosts, setups):
                host.fmu.doStep(k * H, H)
                ref.do_step(ref.t, H)
            for host, (iface, params, ref) in zip(hosts, setups):
                assert close(host.get(iface.output_names), ref.outputs())
        ys = [h.get(setups[0][0].output_names) for h in hosts]
        assert all(not np.allclose(ys[0], y) for y in ys[1:])
    finally:
        for h in hosts:
            h.free()


THREADS_SCRIPT = textwrap.dedent("""
    import ctypes, os, sys, threading
    from pathlib import Path
    from fmpy import calloc, extract, free, read_model_description
    from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                           fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
    sys.setswitchinterval(1e-6)
    path, n = sys.argv[1], int(sys.argv[2])
    md = read_model_description(path)
    d = extract(path)
    mid = md.coSimulation.modelIdentifier

    def released():                 # FMPy: ctypes.CDLL, the GIL released during each FMI call
        for i in range(n):
            f = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=mid, instanceName=f"a{i}")
            f.instantiate()
            f.reset()
            f.freeInstance()

    def held():                     # ctypes.PyDLL: the GIL held during each FMI call
        lib = ctypes.PyDLL(os.path.join(d, "binaries", "linux64", mid + ".so"))
        lib.fmi2Instantiate.restype = ctypes.c_void_p
        lib.fmi2Instantiate.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.fmi2Reset.argtypes = lib.fmi2FreeInstance.argtypes = [ctypes.c_void_p]
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(lambda *a: None)
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        uri = Path(d, "resources").as_uri().encode()
        for i in range(n):
            c = lib.fmi2Instantiate(f"b{i}".encode(), 1, md.guid.encode(), uri, ctypes.addressof(cb), 0, 0)
            assert c and lib.fmi2Reset(c) == 0
            lib.fmi2FreeInstance(c)

    threads = [threading.Thread(target=released), threading.Thread(target=held)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ok")
""")


@pytest.mark.slow
def test_instances_made_from_two_threads_one_holding_the_gil(fmu_paths, tmp_path):
    """A host thread that calls with the GIL held (ctypes.PyDLL) instantiates and resets while
    another (FMPy, the GIL released) does the same: no deadlock. The entry points serialise the
    slave's binding (``shim.c``, point 5); a thread waiting for that with the GIL held blocked
    the one inside, which waited for the GIL, at the first pair of instantiations."""
    script = tmp_path / "threads.py"
    script.write_text(THREADS_SCRIPT)
    try:
        r = subprocess.run([sys.executable, str(script), str(fmu_paths["revolute_c1"]), "200"],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: the two host threads did not finish within 120 s")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


AFTER_THE_MASTER = textwrap.dedent("""
    import gc, sys
    import numpy as np
    from fmpy import simulate_fmu
    from titop_fmu.cosim import CoSystem, Options, simulate
    from titop_fmu.titop import TitopUnits
    fmu_dir = sys.argv[1]
    s = CoSystem()
    s.add("body", "floating_base_c0", gravity=[0.0, 0.0, 0.0], inertia=np.diag([3.0, 5.0, 17.0]))
    s.set_input("body.ext.w", np.zeros(6))
    s.record("body.p.m")
    simulate(s, 0.05, TitopUnits("fmu", fmu_dir, fmu_kind="pythonfmu"), options=Options(workers=0))
    gc.collect()
    r = simulate_fmu(f"{fmu_dir}/welded_c0.fmu", stop_time=0.05, debug_logging=True,
                     start_values={"inertia[1,1]": 3.0, "inertia[2,2]": 5.0, "inertia[3,3]": 17.0})
    print("ok", len(r))
""")


@pytest.mark.slow
def test_fmpy_logs_after_the_master_has_run(fmu_dir, tmp_path):
    """The master's FMU units log through FMPy's native logger proxy, which keeps one global
    pointer to a Python logger; a logger per unit, freed with it, made FMPy's own runs in the
    same process crash at their first message (segmentation fault, reproduced: a warned-of
    inertia after a master run). FMPy's run logs the accepted-property message of an unusual
    inertia here (debug logging on)."""
    script = tmp_path / "after.py"
    script.write_text(AFTER_THE_MASTER)
    r = subprocess.run([sys.executable, str(script), str(fmu_dir)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stdout}{r.stderr}"
    assert "triangle inequality" in r.stdout and r.stdout.strip().endswith("ok 6"), r.stdout


# -- model structure ------------------------------------------------------------------------

ACCELERATION_INPUTS = ("p.a", "ext.w", "joint.tau", "joint.qdd")


def is_acceleration_level(name):
    """Inputs that enter the acceleration stage only: spatial accelerations, wrenches, efforts."""
    port, _, idx = name.partition("[")
    k = int(idx[:-1]) if idx else 1
    return port in ACCELERATION_INPUTS or port.endswith(".w") or (port.endswith(".m") and k <= 6)


@pytest.mark.parametrize("mid", IDS)
def test_model_structure_declares_the_true_dependencies(kind_paths, mid):
    md, _ = unzipped(kind_paths[mid])
    kind, n = catalog.parse_identifier(mid)
    declared = {u.variable.name: {d.name for d in u.dependencies} for u in md.outputs}
    initial = {u.variable.name: {d.name for d in u.dependencies or ()} for u in md.initialUnknowns}
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    states = list(catalog.interface(kind, n).state_names)              # exposed by both kinds
    assert sorted(declared) == sorted(outputs)
    assert sorted(initial) == sorted(outputs + states + [f"der({x})" for x in states])   # the exposed states too
    assert [u.variable.name for u in md.derivatives] == [f"der({x})" for x in states]
    # what the block really does, at parameters the build never saw
    for seed in (101, 102):
        _, _, unit = random_setup(mid, seed)
        if outputs:
            for o, deps in unit.dependencies(seed=seed).items():
                assert set(deps) <= declared[o], (o, set(deps) - declared[o])
    for o in outputs:
        assert declared[o] <= initial[o]
        port, _, idx = o.partition("[")
        if port.endswith(".m") and int(idx[:-1]) > 6:
            # twist and pose outputs: no acceleration-level input, no input at all for a base
            assert not any(is_acceleration_level(d) for d in declared[o]), (o, declared[o])
            if kind in ("floating_base", "imposed_motion_base"):
                assert declared[o] == set(), (o, declared[o])
        if o in ("joint.q[2]", "joint.q[3]"):
            assert declared[o] == set()
    if kind == "loop_closure":
        assert all(not any(is_acceleration_level(d) for d in declared[o]) for o in outputs)
    if kind == "revolute":
        # the joint acceleration uses the joint torque, the child wrenches, the parent motion
        # (acceleration, twist, attitude for gravity) and not the parent position
        assert "joint.tau" in declared["joint.q[1]"]
        assert not declared["joint.q[1]"] & {"p.m[13]", "p.m[14]", "p.m[15]"}


# -- errors --------------------------------------------------------------------------------

BAD_PARAMETERS = [
    ("revolute_c1", {"mass": -1.0}, "mass"),
    ("revolute_c1", {"inertia[1,2]": 0.5}, "inertia"),
    ("revolute_c0", {"axis[1]": 0.0, "axis[2]": 0.0, "axis[3]": 0.0}, "axis"),
    ("welded_c2", {"c2.r[2]": float("nan")}, "c2.r"),
    ("prismatic_c1", {"k": -3.0}, "k"),
    ("floating_base_c0", {"ext_frame": 3}, "ext_frame"),
    ("floating_base_c1", {"inertia[1,1]": 0.0, "inertia[2,2]": 0.0, "inertia[3,3]": 0.0}, "inertia"),
    ("imposed_motion_base_c1", {"gravity[2]": float("inf")}, "gravity"),
    ("revolute_inverse_c1", {"rtol": 0.0}, "rtol"),
    ("loop_closure", {"K[1,1]": -5.0}, "K"),
]


@pytest.mark.parametrize("mid,params,name", BAD_PARAMETERS)
def test_bad_parameter_is_an_error_naming_it(kind_paths, mid, params, name):
    host = Host(kind_paths[mid])
    try:
        host.fmu.setupExperiment(startTime=0.0)
        host.set(params)
        host.fmu.enterInitializationMode()
        with pytest.raises(FMICallException) as e:
            host.fmu.exitInitializationMode()
        assert e.value.status == 3                                  # fmi2Error, not fmi2Fatal
        assert any(f"parameter '{name}'" in m for m in host.errors()), host.log
    finally:
        host.free()


def test_nan_input_is_an_error_and_changes_nothing(kind_paths):
    mid = "revolute_c2"
    iface, params, ref = random_setup(mid, seed=7)
    host = Host(kind_paths[mid])
    try:
        host.initialize(params)
        y0 = host.get(iface.output_names)
        with pytest.raises(FMICallException) as e:
            host.set({"c2.w[4]": float("nan")})
        assert e.value.status == 3
        assert any("c2.w[4]" in m and "non-finite" in m for m in host.errors()), host.log
        assert np.array_equal(host.get(iface.output_names), y0)     # the unit is unchanged
        host.set({"c2.w[4]": 1.0})                                  # and still usable
        host.fmu.doStep(0.0, H)
        assert np.all(np.isfinite(host.get(iface.output_names)))
    finally:
        host.free()


def test_misuse_is_an_error_never_a_crash(kind_paths):
    host = Host(kind_paths["prismatic_c1"])
    vr = host.vr

    def error(call, *args):
        n = len(host.errors())
        with pytest.raises(FMICallException) as e:
            call(*args)
        assert e.value.status == 3
        assert len(host.errors()) > n, f"no message for {call.__name__}"
        return host.errors()[-1]

    try:
        error(host.fmu.getReal, [vr["p.w[1]"]])                     # outputs before initialization
        host.fmu.setupExperiment(startTime=0.0)
        host.fmu.enterInitializationMode()
        error(host.fmu.doStep, 0.0, H)                              # doStep in initialization mode
        host.fmu.exitInitializationMode()
        assert "fixed" in error(host.fmu.setReal, [vr["mass"]], [2.0])      # parameter after init
        assert "output" in error(host.fmu.setReal, [vr["joint.q[1]"]], [1.0])
        assert "value reference" in error(host.fmu.getReal, [10_000])
        error(host.fmu.getInteger, [vr["mass"]])                    # wrong type
        error(host.fmu.getBoolean, [0])
        error(host.fmu.doStep, 0.0, -1.0)
        host.fmu.doStep(0.0, H)                                     # still works after all that
        assert np.all(np.isfinite(host.get(host.names("output"))))
        host.fmu.terminate()
    finally:
        host.free()


def test_accepted_property_is_logged_with_status_ok(kind_paths):
    """Principal moments violating the triangle inequality: accepted, logged with status fmi2OK
    in the FMU's category logParameters (when logging is on), and the call returns fmi2OK: a host
    that stops on any other status runs it."""
    unusual = {"inertia[1,1]": 1.0, "inertia[2,2]": 1.0, "inertia[3,3]": 5.0}
    said = (0, "logParameters", "parameter warning: inertia: principal moments [1.0, 1.0, 5.0] violate the "
            "triangle inequality (no real mass distribution has them); accepted as given")
    for logging in (True, False):
        host = Host(kind_paths["welded_c0"], logging=logging)
        assert "logParameters" in [c.name for c in host.md.logCategories]      # declared
        try:
            host.fmu.setupExperiment(startTime=0.0)
            host.set(unusual)
            host.fmu.enterInitializationMode()
            assert host.fmu.fmi2ExitInitializationMode(host.fmu.component) == 0     # fmi2OK
            assert host.log == ([said] if logging else []), host.log
        finally:
            host.free()


# -- the host's tolerance ------------------------------------------------------------------

@pytest.mark.parametrize("mid", IDS)
def test_default_experiment_gives_the_default_tolerance(kind_paths, mid):
    md, _ = unzipped(kind_paths[mid])
    rtol = next(p for p in catalog.TOLERANCES if p.name == "rtol").default
    assert md.defaultExperiment.tolerance == "1e-10" and float(md.defaultExperiment.tolerance) == rtol


#: long communication steps, over which the integrator's tolerance shows in the outputs
LONG = 0.5


def run_with_tolerance(path, params, u, tolerance=None):
    """The outputs after 5 steps of ``LONG`` of one instance, ``tolerance`` given to
    ``fmi2SetupExperiment`` (None: not defined)."""
    host = Host(path)
    try:
        host.initialize(params, dict(zip(host.names("input"), u)), tolerance=tolerance)
        for k in range(5):
            host.fmu.doStep(k * LONG, LONG)
        assert host.errors() == []
        return host.get(host.names("output"))
    finally:
        host.free()


@pytest.mark.parametrize("mid", ["floating_base_c1", "revolute_c1", "prismatic_c1"])
def test_host_tolerance_sets_the_integrator_tolerances(kind_paths, mid):
    """A tolerance given to fmi2SetupExperiment is the integrator's rtol and atol, in place of
    the parameters'; none given: the parameters' (the in-process unit at the same tolerances)."""
    iface, params, ref = random_setup(mid, seed=11)
    u = random_inputs(iface, np.random.default_rng(12))

    def unit_run(tol):
        unit, _ = iface.make_unit([{**params, "rtol": tol, "atol": tol}[s[0]] for s in iface.param_scalars])
        unit.set_inputs(unit.ALL, u)
        for k in range(5):
            unit.do_step(k * LONG, LONG)
        return unit.outputs()

    loose, tight = unit_run(1e-4), unit_run(1e-10)
    assert np.abs(loose - tight).max() > 1e-7              # the tolerance matters here
    path = kind_paths[mid]
    assert close(run_with_tolerance(path, params, u, tolerance=1e-4), loose)
    assert close(run_with_tolerance(path, {**params, "rtol": 1e-8, "atol": 1e-8}, u, tolerance=1e-4), loose)
    assert close(run_with_tolerance(path, {**params, "rtol": 1e-4, "atol": 1e-4}, u), loose)
    assert close(run_with_tolerance(path, params, u), tight)


@pytest.mark.parametrize("tolerance", [0.0, -1e-6, float("nan"), float("inf")])
def test_bad_host_tolerance_is_an_error(kind_paths, tolerance):
    host = Host(kind_paths["revolute_c1"])
    try:
        with pytest.raises(FMICallException) as e:
            host.fmu.setupExperiment(tolerance=tolerance, startTime=0.0)
        assert e.value.status == 3
        assert host.errors() == [f"fmi2SetupExperiment: tolerance must be a finite positive number, got {tolerance!r}"]
        host.initialize(tolerance=1e-6)                     # still usable
        host.fmu.doStep(0.0, H)
    finally:
        host.free()


def test_setup_experiment_only_before_initialization(kind_paths):
    """Given later, a tolerance could not reach the integrator: an error, not ignored."""
    host = Host(kind_paths["revolute_c1"])
    try:
        host.initialize()
        with pytest.raises(FMICallException):
            host.fmu.setupExperiment(tolerance=1e-6, startTime=0.0)
        assert host.errors() == ["fmi2SetupExperiment: not allowed in mode step"]
    finally:
        host.free()


def with_mass(blob: bytes, kind: str, guid: str, mass: float) -> bytes:
    """A serialized FMU state with the parameter ``mass`` (the first) changed: JSON (pythonfmu)
    or the standalone kind's binary blob (its parameters after the header and four doubles)."""
    if kind == "pythonfmu":
        d = json.loads(blob)
        d["params"][0] = mass
        return json.dumps(d).encode()
    at = 16 + len(guid) + 5 * 4 + 4 * 8
    return blob[:at] + np.float64(mass).tobytes() + blob[at + 8:]


def test_a_failed_set_state_leaves_the_instance_as_it_was(kind_paths, kind):
    """A state whose parameters cannot build the model (read back whole: parameters are checked
    when the model is built) fails in fmi2SetFMUstate, and the instance keeps its parameters,
    time, states and mode: its own state serializes to the same bytes before and after (both
    kinds overwrote the parameters before the model failed)."""
    host = Host(kind_paths["revolute_c1"])
    try:
        host.initialize()
        host.fmu.doStep(0.0, H)
        bad = with_mass(bytes(host.fmu.serializeFMUstate(host.fmu.getFMUstate())), kind, host.md.guid, -1.0)
        host.fmu.doStep(H, H)
        before = bytes(host.fmu.serializeFMUstate(host.fmu.getFMUstate()))
        state = host.fmu.deSerializeFMUstate(bad)
        with pytest.raises(FMICallException):
            host.fmu.setFMUstate(state)
        assert "invalid parameter 'mass': must be >= 0.0, got -1.0" in host.errors()[-1], host.errors()
        assert bytes(host.fmu.serializeFMUstate(host.fmu.getFMUstate())) == before
        assert host.get(["mass"])[0] == 1.0
        host.fmu.doStep(2 * H, H)                                     # and steps on
    finally:
        host.free()


def test_fmu_state_holds_the_host_tolerance(kind, kind_paths):
    """A state saved by an instance given a tolerance, restored into one given none: the same
    future, bit for bit."""
    mid = "revolute_c2"
    iface, params, _ = random_setup(mid, seed=13)
    inputs = dict(zip(iface.input_names, random_inputs(iface, np.random.default_rng(14))))
    a, b = Host(kind_paths[mid], "a"), Host(kind_paths[mid], "b")
    try:
        a.initialize(params, inputs, tolerance=1e-4)
        b.initialize(params, inputs)
        a.fmu.doStep(0.0, H)
        blob = a.fmu.serializeFMUstate(a.fmu.getFMUstate())
        b.fmu.setFMUstate(b.fmu.deSerializeFMUstate(blob))
        for host in (a, b):
            host.fmu.doStep(H, 0.1)
        assert np.array_equal(a.get(iface.output_names), b.get(iface.output_names))
        if kind == "pythonfmu":
            assert json.loads(bytes(blob))["tolerance"] == 1e-4
    finally:
        a.free()
        b.free()


# -- packaging ------------------------------------------------------------------------------

@pytest.mark.slow
def test_fmu_runs_on_its_bundled_package_without_scipy(fmu_paths, tmp_path):
    """In a fresh process that cannot import scipy and does not have the repository on
    its path, the FMU runs on the titop_fmu copy in its resources."""
    path, scipy_loaded = run_without_scipy(textwrap.dedent(f"""
        from fmpy import simulate_fmu
        for f in {[str(fmu_paths[m]) for m in ("floating_base_c1", "revolute_c1", "loop_closure")]!r}:
            r = simulate_fmu(f, stop_time=0.1)
        import titop_fmu
        print(titop_fmu.__file__)
        print("scipy" in sys.modules)
    """), tmp_path)[-2:]
    assert f"{os.sep}resources{os.sep}titop_fmu{os.sep}" in path
    assert scipy_loaded == "False"


@pytest.mark.slow
def test_fmu_runs_on_its_own_c_kernel_without_a_compiler(fmu_paths, tmp_path):
    """In a host process without a C compiler (and an empty cache), the FMUs run their blocks
    on the kernel compiled into them when they were built (never compiling at load), to the
    same values as the in-process unit on the kernel."""
    fmus = [str(fmu_paths[m]) for m in ("floating_base_c1", "revolute_c1", "prismatic_c0")]
    script = textwrap.dedent(f"""
        import sys
        sys.path = [p for p in sys.path if p not in ("", {os.getcwd()!r})]
        from fmpy import simulate_fmu
        for f in {fmus!r}:
            r = simulate_fmu(f, stop_time=0.1, output_interval=0.01)
            print(repr(float(r[r.dtype.names[1]][-1])))
        k = sys.modules["titop_fmu.kernel"]
        print(k.BUNDLED is not None and k.BUNDLED.name == k.KERNEL_LIBRARY, int(k._LOADED[0] is not None))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CC=str(tmp_path / "no-such-cc"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    *values, bundled, loaded = r.stdout.split()
    assert (bundled, loaded) == ("True", "1")
    assert not (tmp_path / "cache").exists()                 # nothing compiled
    for f, v in zip(fmus, values):
        ref = simulate_fmu(f, stop_time=0.1, output_interval=0.01)
        assert float(v) == float(ref[ref.dtype.names[1]][-1])


@pytest.mark.slow
def test_fmus_build_in_a_process_that_has_run_one(fmu_paths, tmp_path):
    """A process that has run a TITOP FMU before importing pythonfmu imports the FMU's copy of
    pythonfmu (in its resources, without the export library); building FMUs afterwards must
    still find the installed one's library (a benchmark of chains, then trees, failed so)."""
    script = textwrap.dedent(f"""
        from fmpy import simulate_fmu
        from titop_fmu.fmu.build import build_all
        simulate_fmu({str(fmu_paths["revolute_c0"])!r}, stop_time=0.01)
        import pythonfmu
        print("resources" in pythonfmu.__file__)
        print(len(build_all({str(tmp_path)!r}, children=[3])))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", str(len(catalog.all_identifiers([3])))]


def test_fmu_contents(fmu_paths):
    with zipfile.ZipFile(fmu_paths["revolute_c2"]) as z:
        names = set(z.namelist())
        module = z.read("resources/revolute_c2.py").decode()
    assert {"modelDescription.xml", "binaries/linux64/revolute_c2.so", "binaries/linux64/libpythonfmu-export.so",
            "resources/slavemodule.txt", "resources/titop_fmu/unit.py", "resources/pythonfmu/fmi2slave.py",
            "resources/titop_fmu/libtitop_kernel.so"} <= names
    assert "KIND = 'revolute'" in module and "CHILDREN = 2" in module
    md, _ = unzipped(fmu_paths["revolute_c2"])
    assert md.coSimulation.canGetAndSetFMUstate and md.coSimulation.canSerializeFMUstate


@pytest.mark.slow
def test_archives_written_at_once_by_several_writers_all_complete(tmp_path):
    """Writers of the same archive at once (threads here; processes filling the FMU cache
    on their first runs) each write a temporary file of their own and move it into place:
    every one completes, and the archive is whole. With one shared temporary name, they
    failed (FileNotFoundError at the move) or interleaved their bytes."""
    from concurrent.futures import ThreadPoolExecutor

    from titop_fmu.archive import write_zip
    rng = np.random.default_rng(0)
    entries = {f"resources/{i}.bin": rng.integers(0, 4, 400_000, dtype=np.uint8).tobytes() for i in range(4)}
    out = tmp_path / "same.fmu"
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda _: write_zip(out, entries), range(16)))
    assert done == [out] * 16
    with zipfile.ZipFile(out) as z:
        assert z.testzip() is None and {n: z.read(n) for n in z.namelist()} == entries
    assert [p.name for p in tmp_path.iterdir()] == ["same.fmu"]      # no temporary file left


@pytest.mark.slow
def test_two_processes_building_the_fmus_into_one_folder_both_succeed(tmp_path):
    """Two first runs at once fill the same FMU cache: both builds succeed and give the
    FMUs one build gives alone (the build is deterministic)."""
    code = "import sys; from titop_fmu.fmu.build import build_all; build_all(sys.argv[1], children=[0])"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "both")], stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    from titop_fmu.fmu.build import build_all
    alone = build_all(tmp_path / "alone", children=[0])
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == sorted(p.name for p in alone)
    for p in alone:
        assert p.read_bytes() == (tmp_path / "both" / p.name).read_bytes(), p.name


@pytest.mark.slow
def test_build_is_deterministic_and_the_cli_builds_other_counts(tmp_path):
    from titop_fmu.cli import main
    from titop_fmu.fmu.build import build_all
    a = build_all(tmp_path / "a", children=[3])
    assert main(["build", "--out", str(tmp_path / "b"), "--children", "3"]) == 0
    b = sorted((tmp_path / "b").glob("*.fmu"))
    assert sorted(p.name for p in a) == [p.name for p in b]
    assert "revolute_c3.fmu" in [p.name for p in b] and "loop_closure.fmu" in [p.name for p in b]
    for p in a:
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes(), p.name
    pytest.importorskip("lark")
    assert validate_fmu(str(tmp_path / "b" / "revolute_c3.fmu")) == []
