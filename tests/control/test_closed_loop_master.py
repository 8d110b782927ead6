"""Closed loops through the co-simulation master (``simulate --engine fmu``): each port's
signals and each control block a unit, their time events (a signal's breakpoints, a discrete
block's or a sampled sensor's sample instants) met by the macro steps, updated there and the
loop solved again (docs/master.md, "Time events"). The reference is the in-process run of the
same file, itself checked against independent references (test_closed_loop.py); the master
runs with in-process units (the FMUs compute the same bits: tests/cosim) and, once, with the
block FMUs."""

import re

import numpy as np
import pytest

from closed_loops import discrete_loop, pendulum, system
from titop_fmu.cli import main
from titop_fmu.io import read_result

#: the master's tolerance here, and the bound on every recorded output (absolute: they are
#: angles, rates and torques of order one). The pendulum's own coupling error at this
#: tolerance reaches 6.6e-8 (its rate, the multirate loop, where nothing holds it); a held
#: output that misses its sample is off by O(1)
TOL, BOUND = 1e-9, 1e-7


def slow(*values):
    """A case run by ``pytest --slow`` only: plain ``pytest`` keeps one of each kind."""
    return pytest.param(*values, marks=pytest.mark.slow)


def simulate(path, out, stop, *options):
    assert main(["simulate", str(path), "--stop", str(stop), "--out", str(out), "--quiet", *options]) == 0
    t, columns = read_result(out)
    return t, np.column_stack(list(columns.values()))


def master_error(tmp_path, name, stop, *options):
    path = system(tmp_path, name)
    t, ref = simulate(path, tmp_path / "inprocess.csv", stop)
    t2, got = simulate(path, tmp_path / "master.csv", stop, "--engine", "fmu", "--tol", str(TOL), *options)
    assert np.array_equal(t, t2)
    return np.abs(got - ref).max(axis=0), ref


@pytest.mark.parametrize("name,stop", [slow("discrete", 1.0), slow("sensors", 1.0), ("table_hold", 3.0),
                                       slow("multirate", 1.0), slow("table", 3.0), slow("balloon_gain", 1.0)])
def test_the_master_meets_the_time_events_of_signals_and_discrete_blocks(tmp_path, name, stop):
    """A discrete controller, sampled sensors, a held torque table, two sample rates (3 x 0.1
    and 0.3 one ulp apart: each block sampled at its own instant, as in process), a linear
    table and the balloon held by a gain on its joints (1 s; 10 s took over 15 minutes at this
    tolerance since the step control holds every recorded output): within 1e-7 of the in-process
    run at every row (measured: 1e-12 to 7e-8, the balloon 4.6e-12; without
    the events a held output kept its start value, 100 % off)."""
    err, ref = master_error(tmp_path, name, stop, "--inprocess-units")
    print(f"\n[closed loop] {name} through the master (tol {TOL:g}), {stop:g} s: {err.max():.2g}")
    assert err.max() <= BOUND


def test_a_tight_tolerance_over_a_long_span_gets_past_the_first_steps(tmp_path, monkeypatch):
    """The share of the tolerance an interval is held to never falls below rounding: the balloon
    held by a gain at --tol 1e-9 over a span of 10 s asked its first, short steps for a share
    below what one step and two half steps agree to by rounding, and the run stopped at
    t = 3.9e-8 s, "the macro step fell below h_min" (here the master's span set to 10 s, its
    first 0.01 s run)."""
    from titop_fmu import simulation
    options = simulation.master_options
    monkeypatch.setattr(simulation, "master_options", lambda args, **kw: options(args, span=10.0, **kw))
    err, _ = master_error(tmp_path, "balloon_gain", 0.01, "--inprocess-units")
    assert err.max() <= BOUND


@pytest.mark.parametrize("name", ["discrete", slow("sensors")])
def test_a_discrete_controller_through_the_master_is_the_discrete_loop(tmp_path, name):
    """Against the loop written out and integrated by scipy sample period by sample period
    (closed_loops.discrete_loop): the angle and the held torque to 1e-8 at every row but the
    last (the held torque jumps only at the samples)."""
    t, got = simulate(system(tmp_path, name), tmp_path / "master.csv", 1.0, "--engine", "fmu", "--tol", str(TOL),
                      "--inprocess-units")
    q, held = discrete_loop(t[:-1], stop=1.0)
    np.testing.assert_allclose(got[:-1, 0], q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got[:-1, 2], held, rtol=0, atol=1e-8)


@pytest.mark.slow
def test_a_saturating_pid_through_the_master_says_its_error_may_exceed_the_tolerance(tmp_path, capsys):
    """A PID at its limits has kinks the master does not see as events: the step control on
    every recorded output shrinks the step there (to 3.6e-8 s at --tol 1e-9), and the run's own
    estimate (4.5e-6) says the error may exceed the tolerance (measured 2.4e-8 on the torque).
    Over 0.25 s: the controller leaves its lower limit at 0.11 s and reaches its upper one at
    0.22 s. Between, the loop is smooth and the steps grow back: 104 macro steps. (When the
    local error was scaled by the tableau's columns over the whole run rather than the last
    intervals', the kink's columns, out of their asymptotic proportion, held the steps near
    2e-5 s for the rest of the run: 5016 macro steps, 1 s took 270 s.)"""
    path = system(tmp_path, "pid")
    t, ref = simulate(path, tmp_path / "inprocess.csv", 0.25)
    assert main(["simulate", str(path), "--stop", "0.25", "--out", str(tmp_path / "master.csv"), "--engine", "fmu",
                 "--tol", str(TOL), "--inprocess-units"]) == 0
    err = capsys.readouterr().err
    t2, columns = read_result(tmp_path / "master.csv")
    assert np.array_equal(t, t2)
    assert np.abs(np.column_stack(list(columns.values())) - ref).max() <= BOUND
    assert "the co-simulation error may exceed the tolerance" in err
    assert int(re.search(r"macro steps (\d+)", err).group(1)) < 500


SAMPLED = """
[units.ctrl]
model = "gain"
K = [[-3.0, -0.5]]

[units.angle]
model = "sensor"
of = "{of}"
sample_time = 0.1

[units.rate]
model = "sensor"
of = "link.joint.q[2]"
"""


@pytest.mark.parametrize("of", ["link.joint.q[3]", "link.com.position[1]"])
def test_a_sampled_sensor_through_the_master_samples_at_its_instant(tmp_path, of):
    """A pendulum held by a gain on a star-tracker-like sensor (sampled at 10 Hz: of a unit
    output, and of an inertial quantity the sensor computes) and a continuous rate, at the
    default tolerance: within 3x the tolerance of the in-process run (measured 1e-11 to 4e-11;
    before the sample took the inputs the last step had left, their mean over the step, half a
    step late: the angle 0.7 rad off)."""
    wires = 'connections = [["angle.y", "ctrl.u[1]"], ["rate.y", "ctrl.u[2]"], ["ctrl.y", "link.joint.tau"]]'
    path = pendulum(tmp_path, SAMPLED.format(of=of), wires)
    path.write_text(path.read_text().replace('"ctrl.y"]', '"ctrl.y", "angle.y"]', 1))
    t, ref = simulate(path, tmp_path / "inprocess.csv", 1.0)
    t2, got = simulate(path, tmp_path / "master.csv", 1.0, "--engine", "fmu", "--inprocess-units")
    assert np.array_equal(t, t2)
    err = np.abs(got - ref).max(axis=0)
    print(f"\n[closed loop] a sensor of {of} sampled at 10 Hz through the master, default tol: {err.max():.2g}")
    assert err.max() <= 3 * 3e-5


def test_a_discrete_controller_through_the_block_fmus(tmp_path):
    """The same with the plant as a block FMU (the default kind) in FMPy."""
    err, _ = master_error(tmp_path, "discrete", 0.5)
    assert err.max() <= BOUND


@pytest.mark.slow
def test_the_slew_example_through_the_master(tmp_path):
    """examples/slew.toml (a sensor sampled at 10 Hz with noise, a disturbance table, an LQR)
    over 5 s at the default tolerance: within 3x the tolerance of the in-process run, absolute
    (its outputs are under one unit). Measured 1.6e-8 on the torque, 7e-11 on the yaw, the
    run's estimate 2.8e-7; it was 1.08e-4 on the torque when the star tracker sampled the yaw
    half a base step late (the test above)."""
    from pathlib import Path
    src = Path(__file__).resolve().parents[2] / "examples"
    for f in ("slew.toml", "slew_lqr.npz", "slew_disturbance.csv"):
        (tmp_path / f).write_bytes((src / f).read_bytes())
    t, ref = simulate(tmp_path / "slew.toml", tmp_path / "inprocess.csv", 5.0)
    _, got = simulate(tmp_path / "slew.toml", tmp_path / "master.csv", 5.0, "--engine", "fmu", "--inprocess-units")
    err = np.abs(got - ref).max(axis=0)
    print(f"\n[closed loop] slew through the master, 5 s, default tol: {err}")
    assert err.max() <= 3 * 3e-5
