"""The assembly FMU (``titop-fmu export``): a whole TITOP system as one FMU, the loop solved
inside, for FMI hosts without a loop solver.

Checked against the in-process monolithic run of the same system (its own engine, DOP853 at
1e-12): the recorded outputs through FMPy's ``simulate_fmu``; plus the FMU bar of the block
FMUs (FMPy's validator, the declared ModelStructure, exact FMU state, ``fmi2Error`` with a
message, the C host).
"""

import textwrap
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from arm_system import arm
from balloon_runs import effective_parameters, run_balloon
import hosts
from c_host import harness, host_env, run  # noqa: F401
from hosts import controller_fmu, libcosim_complaints, libcosim_run, recorded_names, strict_fmpy_run
from fmu_fixtures import Host, fmu_dir, fmu_paths, run_without_scipy, trial_steps, unzipped  # noqa: F401
from titop_fmu.cli import main
from titop_fmu.cosim import CoSystem, simulate, systemfile
from titop_fmu.cosim.fmpy_unit import VENDOR_TOOL, fmu_unit_type
from titop_fmu.cosim.numerics import wrap
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits, monolithic
from titop_fmu.titop.assembly import assembly_interface

from fmpy import read_model_description, simulate_fmu  # noqa: E402  (fmu_fixtures skips without FMPy)
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

H = 0.01
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def balloon_fmu(tmp_path_factory):
    """``titop-fmu export balloon --out balloon.fmu``."""
    out = tmp_path_factory.mktemp("assembly") / "balloon.fmu"
    assert main(["export", "balloon", "--out", str(out)]) == 0
    return out


@pytest.fixture
def host(balloon_fmu):
    """One instance of the balloon FMU through FMPy, freed after the test."""
    h = Host(balloon_fmu)
    yield h
    h.free()


def fmpy_run(path, stop, names, tolerance=None, **start_values):
    """FMPy's ``simulate_fmu`` as a strict host (any status but fmi2OK fails the test,
    :func:`hosts.strict_fmpy_run`); it passes ``tolerance`` (default: the model description's
    default experiment's, 1e-10) to ``fmi2SetupExperiment``, which sets the FMU's ``rtol``
    and ``atol``."""
    r = strict_fmpy_run(path, stop_time=stop, output_interval=H, step_size=H, output=names,
                        relative_tolerance=tolerance, start_values=start_values)
    return r["time"], np.column_stack([r[n] for n in names])


def test_validates_and_describes_the_system(balloon_fmu):
    pytest.importorskip("lark", reason="FMPy validates structured variable names with lark")
    assert validate_fmu(str(balloon_fmu)) == []
    md = read_model_description(str(balloon_fmu))
    var = {v.name: v for v in md.modelVariables}
    # every unit parameter, start values from the system
    assert float(var["balloon.mass"].start) == 10.0 and var["balloon.mass"].unit == "kg"
    assert float(var["balloon.inertia[2,3]"].start) == -7.0
    assert float(var["pendulum1.q0"].start) == pytest.approx(np.radians(170.0), abs=0)
    assert var["balloon.ext_frame"].type == "Integer" and var["rtol"].causality == "parameter"
    # free inputs with the system's constant inputs as start values; recorded outputs
    assert [v.name for v in md.modelVariables if v.causality == "input"] == \
        [f"balloon.ext.w[{i}]" for i in range(1, 7)] + ["slider.joint.tau", "pendulum1.joint.tau",
                                                          "pendulum2.joint.tau"]
    assert float(var["balloon.ext.w[2]"].start) == pytest.approx(16 * 9.81, rel=1e-15)
    assert var["slider.joint.tau"].unit == "N" and var["pendulum1.joint.tau"].unit == "N.m"
    assert recorded_names(balloon.system()) == [v.name for v in md.modelVariables if v.causality == "output"]
    assert md.defaultExperiment.stopTime == "20.0" and md.defaultExperiment.stepSize == "0.01"
    assert md.defaultExperiment.tolerance == "1e-10"
    assert not md.coSimulation.providesDirectionalDerivative


def test_matches_the_monolithic_run_over_1_s(balloon_fmu):
    cs = balloon.system()
    names = recorded_names(cs)
    t, y = fmpy_run(balloon_fmu, 1.0, names, tolerance=1e-12)
    t_ref, ref = monolithic.simulate(cs, 1.0, H)
    np.testing.assert_allclose(t, t_ref, rtol=0, atol=1e-12)
    assert np.abs(y - ref).max() <= 1e-8          # measured 1.7e-9 (accelerations up to 26 m/s2)


def test_runs_on_its_bundled_package_without_scipy(balloon_fmu, tmp_path):
    """In a process that cannot import scipy, without the repository on its path, the assembly
    FMU runs its in-process system (the recursive loop solve included) to the same values."""
    q, scipy_loaded = run_without_scipy(textwrap.dedent(f"""
        from fmpy import simulate_fmu
        r = simulate_fmu({str(balloon_fmu)!r}, stop_time=0.2, output_interval={H!r},
                         output=["pendulum1.joint.q[3]"])
        print(repr(float(r["pendulum1.joint.q[3]"][-1])), "scipy" in sys.modules)
    """), tmp_path)[-2:]
    ref = simulate_fmu(str(balloon_fmu), stop_time=0.2, output_interval=H, output=["pendulum1.joint.q[3]"])
    assert scipy_loaded == "False"
    assert abs(float(q) - float(ref["pendulum1.joint.q[3]"][-1])) <= 1e-12


@pytest.fixture(scope="module")
def balloon_20_s():
    """``(recorded names, the monolithic run's recorded outputs)`` over 20 s."""
    cs = balloon.system()
    return recorded_names(cs), monolithic.simulate(cs, 20.0, H)[1]


@pytest.mark.slow
def test_matches_the_monolithic_run_over_20_s(balloon_fmu, balloon_20_s):
    """The acceptance run: 20 s at a fixed 0.01 s communication step in FMPy, the host's
    tolerance 1e-12 (rtol = atol = 1e-12; measured 1.7e-9, 9.0e-8 at the default 1e-10)."""
    names, ref = balloon_20_s
    t, y = fmpy_run(balloon_fmu, 20.0, names, tolerance=1e-12)
    assert len(t) == 2001
    assert np.abs(y - ref).max() <= 1e-8


@pytest.mark.slow
def test_matches_the_monolithic_run_over_20_s_in_libcosim(balloon_fmu, balloon_20_s, capfd):
    """The same in libcosim (a C++ host, its fixed-step algorithm): values after each step; no
    warning in libcosim's log, which shows the FMU's messages at their status (libcosim passes
    no tolerance: the parameters rtol and atol hold)."""
    names, ref = balloon_20_s
    t, y = libcosim_run({"balloon": balloon_fmu}, [], {"balloon.rtol": 1e-12, "balloon.atol": 1e-12},
                        [f"balloon.{n}" for n in names], 20.0, H)
    assert len(t) == 2000
    assert np.abs(y - ref[1:]).max() <= 1e-8
    assert libcosim_complaints(capfd) == []


# -- a controller closes a loop through a host with no loop solver ---------------------------------

CONTROL = [("balloon.pendulum1.joint.q[3]", "ctrl.q"), ("balloon.pendulum1.joint.q[2]", "ctrl.qd"),
           ("ctrl.tau", "balloon.pendulum1.joint.tau")]
WATCH = ["balloon.pendulum1.joint.q[3]", "ctrl.tau"]
CONTROL_STOP, Q_REF = 5.0, 2.5


@pytest.fixture(scope="module")
def pd_fmu(tmp_path_factory):
    return controller_fmu(tmp_path_factory.mktemp("controller"))


@pytest.fixture(scope="module")
def controlled_in_the_master(balloon_fmu, pd_fmu):
    """The assembly FMU and the controller FMU in the project's master (default settings):
    the feedthrough tau(q, qd) resolved at every communication point, the coupling error
    controlled to the default tolerance."""
    cs = CoSystem()
    cs.add("balloon", str(balloon_fmu))
    cs.add("ctrl", str(pd_fmu))
    for a, b in CONTROL:
        cs.connect(a, b)
    cs.record(*WATCH)
    res = simulate(cs, CONTROL_STOP, TitopUnits("fmu"), output_interval=H)
    return np.asarray(res.values)


def test_a_controller_holds_a_joint_through_fmpy(balloon_fmu, pd_fmu, controlled_in_the_master):
    """A PD controller FMU (pythonfmu) drives pendulum1.joint.tau from pendulum1.joint.q in a
    plain fixed-step host (FMPy, libcosim's algorithm): the joint settles near the set point,
    and the host's run differs from the master's by its coupling error, which is first order
    in the step (the feedthrough tau acts one step late): measured max |d theta1| over 5 s
    5.2e-2 rad at H = 0.01 s, 2.2e-2 at 0.005 s."""
    master = controlled_in_the_master
    err = {}
    for h in (H, H / 2):
        t, y = hosts.fmpy_run({"balloon": balloon_fmu, "ctrl": pd_fmu}, CONTROL, {}, WATCH, CONTROL_STOP, h)
        k = int(round(H / h))
        err[h] = np.abs(y[k - 1::k, 0] - master[1:, 0]).max()
        assert abs(y[-1, 0] - master[-1, 0]) <= 1e-3                  # the same steady state
    print(f"\n[assembly] PD control, FMPy fixed-step host vs master: {err[H]:.3g} rad (H = 0.01 s), "
          f"{err[H / 2]:.3g} rad (H = 0.005 s)")
    assert abs(master[-1, 0] - Q_REF) <= 0.2                            # held near the set point
    assert err[H] <= 0.1
    assert 1.6 <= err[H] / err[H / 2] <= 3.2                             # first order: 2


def test_a_controller_holds_a_joint_through_libcosim(balloon_fmu, pd_fmu, controlled_in_the_master):
    """The same loop in libcosim equals the FMPy host to round-off (measured 8e-13), so it has
    the same coupling error with respect to the master."""
    args = ({"balloon": balloon_fmu, "ctrl": pd_fmu}, CONTROL, {}, WATCH, CONTROL_STOP, H)
    t, y = libcosim_run(*args)
    _, y_fmpy = hosts.fmpy_run(*args)
    assert np.abs(y - y_fmpy).max() <= 1e-9
    assert np.abs(y[:, 0] - controlled_in_the_master[1:, 0]).max() <= 0.1


def test_parameters_and_inputs_change_the_system(balloon_fmu):
    """Setting ``balloon.mass``, ``pendulum1.c1.r[2]`` and an input of the FMU gives the
    monolithic run of the system changed the same way."""
    cs = balloon.system({"m_B": 12.0})
    cs.units["pendulum1"].parameters["c1.r[2]"] = -1.0
    cs.set_input("pendulum2.joint.tau", 0.7)
    names = recorded_names(cs)
    t, y = fmpy_run(balloon_fmu, 0.5, names, tolerance=1e-12, **{
        "balloon.mass": 12.0, "pendulum1.c1.r[2]": -1.0, "pendulum2.joint.tau": 0.7,
        "balloon.ext.w[2]": 18 * 9.81})
    _, ref = monolithic.simulate(cs, 0.5, H)
    assert np.abs(y - ref).max() <= 1e-8
    _, y0 = fmpy_run(balloon_fmu, 0.5, names, tolerance=1e-12)
    assert np.abs(y - y0).max() > 1e-3


def declared_and_seen(path, host, inputs=None):
    """``(declared, seen)``: ``{output: {inputs}}`` of the FMU's ModelStructure, and of the
    outputs that change through FMI when each input is changed alone (after 0.3 s)."""
    md = read_model_description(str(path))
    declared = {u.variable.name: {d.name for d in u.dependencies} for u in md.outputs}
    host.initialize(inputs=inputs)
    host.fmu.doStep(0.0, 0.3)
    ins, outs = host.names("input"), host.names("output")
    u0 = host.get(ins)
    y0 = host.get(outs)
    seen = {o: set() for o in outs}
    for name, v in zip(ins, u0):
        host.set({name: v + 0.1})
        for o, a, b in zip(outs, host.get(outs), y0):
            if a != b:
                seen[o].add(name)
        host.set({name: v})
    return declared, seen


def test_model_structure_is_true(balloon_fmu, host):
    """Every output that changes when an input does is declared dependent on it, and every
    declared dependency shows at a random state (outputs at positions and velocities depend
    on no input, accelerations on all of them)."""
    declared, seen = declared_and_seen(balloon_fmu, host)
    assert seen == declared
    assert declared["slider.joint.q[3]"] == set() and declared["balloon.c1.m[13]"] == set()
    assert declared["pendulum2.joint.q[1]"] == set(host.names("input"))


def test_fmu_state_is_exact(host):
    host.initialize()
    outs = host.names("output")
    host.fmu.doStep(0.0, 0.05)
    state = host.fmu.getFMUstate()
    data = host.fmu.serializeFMUstate(state)
    host.fmu.doStep(0.05, 0.05)
    host.fmu.doStep(0.10, 0.05)
    y1 = host.get(outs)
    host.fmu.setFMUstate(host.fmu.deSerializeFMUstate(data))
    host.fmu.doStep(0.05, 0.05)
    host.fmu.doStep(0.10, 0.05)
    assert np.array_equal(host.get(outs), y1)
    host.fmu.setFMUstate(state)
    host.fmu.doStep(0.05, 0.1)
    assert not np.array_equal(host.get(outs), y1)         # another step sequence: not bit-equal
    assert host.errors() == []


def test_accepted_property_is_logged_naming_the_unit_with_status_ok(balloon_fmu):
    """The balloon's principal moments (the paper's) violate the triangle inequality: the
    assembly FMU logs that naming the unit, as the block FMU of the balloon does, with status
    fmi2OK in the category logStatusWarning, and fmi2ExitInitializationMode returns fmi2OK."""
    host = Host(balloon_fmu, logging=True)
    try:
        host.fmu.setupExperiment(startTime=0.0)
        host.fmu.enterInitializationMode()
        assert host.fmu.fmi2ExitInitializationMode(host.fmu.component) == 0         # fmi2OK
        said = [(s, c, m) for s, c, m in host.log if "triangle inequality" in m]
        assert len(said) == 1 and said[0][:2] == (0, "logStatusWarning") and "balloon: inertia" in said[0][2]
        assert all(s == 0 for s, _, _ in host.log), host.log
    finally:
        host.free()


def test_non_finite_input_is_an_error_with_a_message(host):
    host.initialize()
    with pytest.raises(FMICallException):
        host.set({"pendulum1.joint.tau": float("nan")})
    assert any("pendulum1.joint.tau" in m and "non-finite" in m for m in host.errors()), host.log


def test_no_directional_derivatives(host):
    """Not declared, and asked for anyway: an error with a message, the instance still usable."""
    host.initialize()
    with pytest.raises(FMICallException):
        host.fmu.getDirectionalDerivative([host.vr["balloon.c1.m[1]"]], [host.vr["slider.joint.tau"]], [1.0])
    assert any("gives no directional derivatives" in m for m in host.errors()), host.log
    host.fmu.doStep(0.0, H)
    assert len(host.errors()) == 1


def test_declares_trial_steps_only(balloon_fmu):
    """Of the vendor functions, trial steps (an assembly is a unit like a block), not the
    directional derivatives it does not give; the trial steps are the standard calls'."""
    _, unzipdir = unzipped(balloon_fmu)
    root = ElementTree.parse(Path(unzipdir) / "modelDescription.xml").getroot()
    assert [e.tag for e in root.find(f"VendorAnnotations/Tool[@name='{VENDOR_TOOL}']/Functions")] == ["TrialSteps"]
    assert fmu_unit_type(balloon_fmu).trial_steps and not fmu_unit_type(balloon_fmu).derivatives
    host = Host(balloon_fmu)
    try:
        host.initialize()
        ins, outs = host.names("input"), host.names("output")
        end = host.get(ins)
        held = end[:, None] + np.array([[0.0], [0.5]]).T
        status, got = trial_steps(host, 0.0, H, ins, held, end, outs)
        assert status == 0
        saved = host.fmu.getFMUstate()
        host.fmu.setReal([host.vr[n] for n in ins], list(held[:, 1]))
        host.fmu.doStep(0.0, H)
        host.fmu.setReal([host.vr[n] for n in ins], list(end))
        assert np.array_equal(host.get(outs), got[:, 1])
        host.fmu.setFMUstate(saved)
        host.fmu.freeFMUstate(saved)
        assert host.errors() == []
    finally:
        host.free()


def test_invalid_parameter_is_an_error_with_a_message(host):
    host.fmu.setupExperiment(startTime=0.0)
    host.set({"pendulum1.mass": -1.0})
    host.fmu.enterInitializationMode()
    with pytest.raises(FMICallException):
        host.fmu.exitInitializationMode()
    assert any("parameter 'pendulum1.mass'" in m for m in host.errors()), host.log


def test_runs_in_the_c_host(harness, host_env, balloon_fmu, tmp_path):
    """Loaded by a C program (no Python in the process), a parameter and an input set, stepped,
    its state saved and restored; the printed outputs are the in-process assembly's."""
    from c_host import H as CH, STEPS
    iface = assembly_interface(systemfile.to_dict(balloon.system()), "balloon")
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    outputs = [vr[o] for o in iface.output_names]
    values = iface.defaults()
    values[vr["pendulum2.mass"]] = 2.5
    r = run(harness, host_env, balloon_fmu, tmp_path, [(vr["pendulum2.mass"], 2.5)],
            [(vr["slider.joint.tau"], 0.3)], outputs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "state_roundtrip ok" in r.stdout and "log Error" not in r.stdout
    got = np.array([float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("y ")])
    got = got.reshape(STEPS + 1, len(outputs))
    unit, _ = iface.make_unit(values)
    unit.set_inputs(unit.ALL, [v.start for v in iface.variables if v.causality == "input"])
    unit.set_input("slider.joint.tau", 0.3)
    for k in range(STEPS + 1):
        if k:
            unit.do_step(unit.t, CH)
        np.testing.assert_allclose(got[k], unit.outputs(), rtol=0, atol=1e-12 * max(1, np.abs(got).max()))


def test_a_system_file_exports(tmp_path):
    """``titop-fmu export examples/two_branch.toml``: a welded body with two branches, the
    file's [simulation] as the default experiment, FMPy's run equal to the monolithic one."""
    out = tmp_path / "two_branch.fmu"
    assert main(["export", str(ROOT / "examples" / "two_branch.toml"), "--out", str(out)]) == 0
    cs = systemfile.read(ROOT / "examples" / "two_branch.toml").system
    md = read_model_description(str(out))
    assert md.coSimulation.modelIdentifier == "two_branch" and md.defaultExperiment.stopTime == "10.0"
    names = recorded_names(cs)
    _, y = fmpy_run(out, 0.5, names, tolerance=1e-12)
    _, ref = monolithic.simulate(cs, 0.5, H)
    assert np.abs(y - ref).max() <= 1e-8


# -- a sub-assembly: an appendage that plugs in like one body -----------------------------------

APPENDAGE = ROOT / "examples" / "balloon_appendage.toml"


def test_the_appendage_file_is_the_balloon_without_its_base():
    """examples/balloon_appendage.toml: the units and links of the balloon below the base."""
    app, full = systemfile.read(APPENDAGE).system, balloon.system()
    below = effective_parameters(full)
    del below["balloon"]
    assert effective_parameters(app) == below
    assert app.links == full.links[1:] and app.inputs == {}


@pytest.fixture(scope="module")
def appendage_fmu(tmp_path_factory):
    """``titop-fmu export examples/balloon_appendage.toml --out appendage.fmu``."""
    out = tmp_path_factory.mktemp("appendage") / "appendage.fmu"
    assert main(["export", str(APPENDAGE), "--out", str(out)]) == 0
    return out


def test_appendage_has_a_block_parent_port(appendage_fmu, fmu_paths):
    pytest.importorskip("lark", reason="FMPy validates structured variable names with lark")
    assert validate_fmu(str(appendage_fmu)) == []
    md = read_model_description(str(appendage_fmu))
    var = {v.name: v for v in md.modelVariables}
    assert [v.name for v in md.modelVariables if v.causality == "input"] == \
        [f"p.m[{k}]" for k in range(1, 19)] + ["slider.joint.tau", "pendulum1.joint.tau", "pendulum2.joint.tau"]
    assert [v.name for v in md.modelVariables if v.causality == "output"][:6] == [f"p.w[{k}]" for k in range(1, 7)]
    block = {v.name: v for v in read_model_description(str(fmu_paths["revolute_c1"])).modelVariables}
    for name in [f"p.m[{k}]" for k in range(1, 19)] + [f"p.w[{k}]" for k in range(1, 7)]:
        assert var[name].unit == block[name].unit, name


def test_appendage_model_structure_is_true(appendage_fmu):
    """p.w feeds through from the parent's acceleration, twist and attitude, not from its
    position; the joint positions from nothing."""
    host = Host(appendage_fmu)
    try:
        p_m = {f"p.m[{k}]": v for k, v in enumerate([0.3, -0.2, 0.1, 0.2, 0.1, -0.3, 0.5, 0.1, -0.2,
                                                      0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 0.2, -0.4, 0.3], 1)}
        declared, seen = declared_and_seen(appendage_fmu, host, inputs=p_m)
    finally:
        host.free()
    assert seen == declared
    assert declared["p.w[1]"] == {f"p.m[{k}]" for k in (*range(1, 13), 16, 17, 18)} | \
        {"slider.joint.tau", "pendulum1.joint.tau", "pendulum2.joint.tau"}
    assert declared["pendulum2.joint.q[3]"] == set()


def balloon_with_appendage(path) -> CoSystem:
    """The balloon as a floating base and the appendage FMU linked under it, recording what
    balloon.system() records (so balloon.options() observes the CSV columns)."""
    full = balloon.system()
    cs = CoSystem()
    cs.add("balloon", "floating_base_c1", full.units["balloon"].parameters)
    cs.add("appendage", str(path))
    cs.link("balloon.c1", "appendage.p")
    cs.set_input("balloon.ext.w", full.inputs["balloon.ext.w"])
    cs.record("balloon.c1.m", "appendage.slider.joint.q", "appendage.pendulum1.joint.q",
              "appendage.pendulum2.joint.q")
    return cs


def master_error(path, stop, **options):
    """Max error of the nine balloon columns of the master's run of the balloon with the
    appendage FMU against the monolithic balloon (angles modulo 2 pi)."""
    res = simulate(balloon_with_appendage(path), stop, TitopUnits("fmu"), output_interval=H,
                   options=balloon.options(**options))
    s, tr = run_balloon(stop=stop)
    assert np.allclose(res.t, tr.t, rtol=0, atol=1e-12)
    d = np.asarray(res.values) - balloon.columns(s, tr.y)
    d[:, balloon.ANGLES] = wrap(d[:, balloon.ANGLES])
    return float(np.abs(d).max()), res


def test_appendage_under_the_balloon_base_in_the_master(appendage_fmu):
    """1 s at the default tolerance shared over 20 s (as the 20 s run shares it): measured 1.2e-7."""
    err, res = master_error(appendage_fmu, 1.0, workers=0, span=20.0)
    print(f"\n[assembly] balloon base + appendage FMU, master, 1 s: error {err:.3g}, "
          f"{res.stats.macro_steps} macro steps")
    assert err <= 1e-5


@pytest.mark.slow
def test_appendage_under_the_balloon_base_in_the_master_20_s(appendage_fmu):
    """The acceptance run: 20 s, default settings, <= 1e-5 on the nine columns."""
    err, res = master_error(appendage_fmu, 20.0)
    print(f"\n[assembly] balloon base + appendage FMU, master, 20 s: error {err:.3g}, "
          f"{res.stats.macro_steps} macro steps")
    assert err <= 1e-5


ARM = arm('["link2.c1.m[13]", "link2.c1.m", "link2.c1.position[2]", "link2.c1.position", "link1.joint.q", '
          '"link1.joint.q[3]", "base.p.position", "link2.euler"]', axis2="[1.0, 0.0, 1.0]")


@pytest.fixture(scope="module")
def arm_fmu(tmp_path_factory):
    """An arm whose record list names its free child port's motion (an output of the FMU
    anyway), a component and then its whole port, and inertial outputs."""
    d = tmp_path_factory.mktemp("arm")
    (d / "arm.toml").write_text(ARM)
    assert main(["export", str(d / "arm.toml"), "--out", str(d / "arm.fmu")]) == 0
    return d / "arm.fmu"


def test_each_recorded_output_is_one_variable(arm_fmu):
    """A recorded output that is already an output (the free child port's motion), or listed twice
    (a component, then its port), is one variable: the FMU validates. It used to have
    link3.c1.m[13] twice: FMPy's validator refused it and export exited 0."""
    pytest.importorskip("lark", reason="FMPy validates structured variable names with lark")
    assert validate_fmu(str(arm_fmu)) == []
    outputs = [v.name for v in read_model_description(str(arm_fmu)).modelVariables if v.causality == "output"]
    assert len(outputs) == len(set(outputs))
    assert set(outputs) == {f"link2.c1.m[{k}]" for k in range(1, 19)} | \
        {f"link2.c1.position[{k}]" for k in (1, 2, 3)} | {f"link1.joint.q[{k}]" for k in (1, 2, 3)} | \
        {f"base.p.position[{k}]" for k in (1, 2, 3)} | {f"link2.euler[{k}]" for k in (1, 2, 3)}


def test_inertial_outputs_of_an_assembly(arm_fmu):
    """An assembly's inertial outputs have their units and are those of the in-process run (the
    oblique second axis turns link2 out of the plane)."""
    md = read_model_description(str(arm_fmu))
    var = {v.name: v for v in md.modelVariables}
    assert var["link2.c1.position[2]"].unit == "m" and var["link2.euler[1]"].unit == "rad"
    assert var["link2.c1.position[1]"].description == "link2: position of the point C1 in R_i"
    cs = systemfile.read(arm_fmu.parent / "arm.toml").system
    names = ["link2.c1.position[1]", "link2.c1.position[2]", "link2.c1.position[3]", "link2.euler[1]",
             "link2.euler[2]", "link2.euler[3]", "base.p.position[2]"]
    t, y = fmpy_run(arm_fmu, 1.0, names, rtol=1e-12, atol=1e-12)
    cs.recorded[:] = ["link2.c1.position", "link2.euler", "base.p.position[2]"]
    ref = monolithic.simulate(cs, 1.0, H)[1]
    assert np.ptp(ref[:, 2]) > 0.1                                    # out of the plane
    assert np.abs(y - ref).max() <= 1e-9


def test_an_invalid_fmu_is_not_written(tmp_path, monkeypatch, capsys):
    """export validates the FMU before it is moved in place: one that FMPy refuses (here a
    description with a variable named twice) is an error, exit code 2, and nothing is written."""
    from titop_fmu.titop import export
    describe = export.describe
    monkeypatch.setattr(export, "describe", lambda *a, **kw: describe(*a, **kw).replace(b'"atol"', b'"rtol"'))
    (tmp_path / "arm.toml").write_text(ARM)
    assert main(["export", str(tmp_path / "arm.toml"), "--out", str(tmp_path / "arm.fmu")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("titop-fmu: error: the FMU would be invalid, nothing written:") and err.count("\n") == 1
    assert 'The variable name "rtol"' in err and list(tmp_path.iterdir()) == [tmp_path / "arm.toml"]
