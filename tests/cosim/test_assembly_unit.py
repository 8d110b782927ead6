"""The assembly unit in process (what the assembly FMU computes, without FMI): its ports for
free parent and child ports, and its run against the monolithic one."""

import copy
import json

import numpy as np
import pytest

import closed_loops
from titop_fmu.cosim import CoSystem, systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.scenarios import balloon
from titop_fmu.titop import monolithic
from titop_fmu.titop.assembly import assembly_interface


def unit_of(cs, **params):
    iface = assembly_interface(systemfile.to_dict(cs), "test")
    values = dict(zip((s[0] for s in iface.param_scalars), iface.defaults()))
    values.update(params)
    unit, _ = iface.make_unit([values[s[0]] for s in iface.param_scalars])
    unit.set_inputs(unit.ALL, [v.start for v in iface.variables if v.causality == "input"])
    return iface, unit


@pytest.mark.slow
def test_the_balloon_unit_steps_as_the_monolithic_run():
    cs = balloon.system()
    iface, unit = unit_of(cs, rtol=1e-12, atol=1e-12)
    _, ref = monolithic.simulate(cs, 0.5, 0.01)
    rows = [unit.outputs().copy()]
    for k in range(50):
        unit.do_step(k * 0.01, 0.01)
        rows.append(unit.outputs().copy())
    assert np.abs(np.array(rows) - ref).max() <= 1e-8


def test_each_instance_gets_its_own_system():
    """An assembly's instances are built from its system file's content, which they leave as
    it is: a parameter changed for one instance is not seen by the next."""
    iface = assembly_interface(systemfile.to_dict(balloon.system()), "test")
    content = copy.deepcopy(iface.system)
    names = [s[0] for s in iface.param_scalars]
    heavier = list(iface.defaults())
    heavier[names.index("balloon.mass")] = 99.0
    assert iface.cosystem(heavier).units["balloon"].parameters["mass"] == 99.0
    assert iface.cosystem(iface.defaults()).units["balloon"].parameters["mass"] == 10.0
    assert iface.system == content


def test_a_free_child_port_is_an_input_wrench_and_an_output_motion():
    """The balloon without pendulum2: pendulum1.c1 is free; its wrench comes in (start value
    from the system's inputs), its motion goes out, as the twin computes them."""
    full = balloon.system()
    cs = CoSystem()
    for n in ("balloon", "slider", "pendulum1"):
        cs.add(n, full.units[n].model, full.units[n].parameters)
    cs.link("balloon.c1", "slider.p")
    cs.link("slider.c1", "pendulum1.p")
    w = [0.0, -3 * 9.81, 0.0, 0.0, 0.0, 0.0]                 # pendulum2's weight, hung at P1
    cs.set_input("pendulum1.c1.w", w)
    cs.set_input("balloon.ext.w", full.inputs["balloon.ext.w"])
    iface, unit = unit_of(cs)
    assert [n for n in iface.input_names if n.startswith("pendulum1.c1.w")] == \
        [f"pendulum1.c1.w[{k}]" for k in range(1, 7)]
    assert [v.start for v in iface.variables if v.name.startswith("pendulum1.c1.w")] == w
    assert [n for n in iface.output_names if n.startswith("pendulum1.")] == \
        [f"pendulum1.c1.m[{k}]" for k in range(1, 19)]
    s = monolithic.twin(cs)
    y0 = s.initial_state()
    unit.set_input("pendulum1.c1.w[1]", 2.0)
    s.set_input("pendulum1.c1.w", [2.0] + w[1:])
    np.testing.assert_array_equal(unit.output("pendulum1.c1.m"), s.outputs(y0)["pendulum1"]["c1.m"])


def test_what_has_no_assembly_is_an_error():
    cs = balloon.system()
    cs.set_input("slider.p.m", np.zeros(18))                   # a linked port given a value
    with pytest.raises(ConnectionError_, match="slider.p.m"):
        assembly_interface(systemfile.to_dict(cs), "x")
    cs = balloon.system()
    cs.record("slider.joint.qq")
    with pytest.raises(ConnectionError_, match="slider.joint.qq"):
        assembly_interface(systemfile.to_dict(cs), "x")


MIXED = """
links = [["base.c1", "link.p"]]
record = ["link.joint.q[3]", "ctrl.y"]
connections = [["link.joint.q[3]", "ctrl.u[1]"], ["link.joint.q[2]", "ctrl.u[2]"], ["ctrl.y", "sat.u"]]

""" + closed_loops.PLANT + """q0 = "40 deg"

[units.ctrl]
model = "state_space"
file = "ctrl.mat"
sample_time = 0.01

[units.sat]
model = "saturation"
lower = -2
upper = 2

[inputs]
"base.p.a" = [0, 0, 0, 0, 0, {source = "pulse", amplitude = 0.5, period = 0.4, width = 0.1}]
"link.joint.tau" = {table = "torque.csv", column = "w[5]", interpolation = "hold"}
"""


def test_a_closed_loop_writes_back_as_a_system_file(tmp_path):
    """Signals and control units written as a system file has them (an expression as its text, a
    source as its table, a table and a .mat file as their data: the file of the FMU travels
    alone), read back as the same system: the same run, to the bit."""
    from scipy.io import savemat
    savemat(tmp_path / "ctrl.mat", {"A": [[1.0]], "B": [[0.01, 0.0]], "C": [[-3.0]], "D": [[-12.0, -2.5]]})
    (tmp_path / "torque.csv").write_text((closed_loops.SYSTEMS / "torque.csv").read_text())
    (tmp_path / "s.toml").write_text(MIXED)
    cs = systemfile.read(tmp_path / "s.toml").system
    d = systemfile.to_dict(cs)
    text = json.dumps(d)
    assert "ctrl.mat" not in text and "torque.csv" not in text and d["units"]["ctrl"]["D[1,2]"] == -2.5
    assert d["inputs"]["link.joint.tau"]["table"]["w[5]"] == [0.0, -0.3, 0.6, 0.1, 0.0]
    back, _ = systemfile.from_dict(json.loads(text))
    assert systemfile.to_dict(back) == d
    _, ref = monolithic.run(cs, 1.0, 0.01)
    for path in tmp_path.iterdir():
        path.unlink()
    _, again = monolithic.run(back, 1.0, 0.01)
    assert np.array_equal(ref, again) and np.ptp(ref[:, 1]) > 0


def loop_unit(path, **params):
    cs = systemfile.read(path).system
    iface, unit = unit_of(cs, **params)
    return cs, iface, unit


def steps(unit, n, h=0.01):
    rows = [unit.outputs().copy()]
    for k in range(n):
        unit.do_step(k * h, h)
        rows.append(unit.outputs().copy())
    return np.array(rows)


@pytest.mark.parametrize("name,stop,h", [("spinup", 3.0, 0.01), ("table_hold", 3.0, 0.01), ("discrete", 1.0, 0.01),
                                         ("sensors", 1.0, 0.01), ("pid", 2.0, 0.01), ("multirate", 1.0, 0.1)])
def test_a_closed_loop_unit_steps_as_the_in_process_run(tmp_path, name, stop, h):
    """The unit of a closed loop (what its pythonfmu FMU computes) stepped by ``h``: its
    outputs are the recorded outputs of the in-process run at every row (an event's right
    limits: a hold table's new row, a discrete controller's new sample, the last row too; two
    blocks' instants one ulp apart each met), its own integrator (Dormand-Prince 5(4), split at
    the events) at 1e-12 against DOP853."""
    cs, iface, unit = loop_unit(closed_loops.system(tmp_path, name), rtol=1e-12, atol=1e-12)
    rows = steps(unit, int(round(stop / h)), h)
    _, ref = monolithic.run(cs, stop, h)
    assert rows.shape == ref.shape                   # the outputs are the recorded ones (no free port here)
    err = np.abs(rows - ref).max()
    print(f"\n[closed-loop unit] {name}, {stop:g} s: {err:.2g}")
    assert err <= 1e-8


def test_a_closed_loop_s_free_inputs_are_the_unit_s(tmp_path):
    """Ports no signal or connection feeds are inputs, start values the file's: the plant's
    (base.p.a), a control unit's (the PID's setpoint err.u1); those signals and controllers feed
    are not (link.joint.tau, ctrl.u, err.u2). Set to 20 deg, the setpoint drives the loop as
    the file with 20 deg does."""
    path = closed_loops.system(tmp_path, "pid")
    cs, iface, unit = loop_unit(path)
    assert iface.input_names == tuple(f"base.p.a[{k}]" for k in range(1, 7)) + ("err.u1",)
    assert [v.start for v in iface.variables if v.name == "err.u1"] == [np.radians(10)]
    unit.set_input("err.u1", np.radians(20))
    rows = steps(unit, 100)
    path.write_text(path.read_text().replace('"10*deg"', '"20*deg"'))
    _, ref = monolithic.run(systemfile.read(path).system, 1.0, 0.01)
    assert np.abs(rows - ref).max() <= 1e-8


def test_a_closed_loop_unit_state_restores_exactly(tmp_path):
    """Saved between samples and restored, the unit steps on as it did, to the bit: the discrete
    states, the last event and whether the start was sampled are in the state."""
    _, _, unit = loop_unit(closed_loops.system(tmp_path, "sensors"))
    fresh = unit.get_state()
    first = steps(unit, 3, 0.004)
    saved = unit.get_state()
    later = steps(unit, 5, 0.004)
    unit.set_state(saved)
    assert np.array_equal(steps(unit, 5, 0.004), later)
    unit.set_state(fresh)
    assert np.array_equal(steps(unit, 3, 0.004), first)


def test_a_long_step_meets_every_sample_inside_it(tmp_path):
    """One step of 0.05 s over a discrete controller sampled every 0.01 s, the integrator
    stopped at each sample: the in-process run's values at 0.05 s (the held output its fifth
    sample's)."""
    cs, _, unit = loop_unit(closed_loops.system(tmp_path, "discrete"), rtol=1e-12, atol=1e-12)
    unit.do_step(0.0, 0.05)
    _, ref = monolithic.run(cs, 0.05, 0.01)
    assert np.abs(unit.outputs() - ref[-1]).max() <= 1e-10
