"""Closed loops exported as one FMU (``titop-fmu export``): a plant of TITOP units closed by
control units and driven by time signals, of both kinds: the standalone FMU (C only: the
signals compiled in, the control blocks in ``fmu/csrc/control.c``, co-simulation with each step
split at the events inside it and Model Exchange with time events) and the pythonfmu FMU (the
in-process ClosedLoop inside). Checked against the in-process run of the same file (its own
engine, DOP853 at 1e-12, itself checked against independent references in
tests/control/test_closed_loop.py) in FMPy (co-simulation and Model Exchange), in the strict C
host started by ``env -i`` and, for win64, under Wine; plus what only an FMU has: time events,
exact FMU states, a setpoint as an input, mistakes refused at export."""

import ctypes
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

import closed_loops
from c_host import harness, harness_args, strict_outputs, under_wine, windows_harness  # noqa: F401
from fmu_fixtures import Host
from hosts import recorded_names, strict_fmpy_run
from marks import slow
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.titop import monolithic

from fmpy import read_model_description, simulate_fmu  # noqa: E402  (fmu_fixtures skips without FMPy)

H = 0.01
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("loops")


@pytest.fixture(scope="module")
def exported(folder):
    """``export(name, kind)``: ``(system file, FMU)`` of a closed loop of
    :mod:`closed_loops` (or ``slew``, examples/slew.toml), exported once per kind."""
    made = {}

    def export(name, kind="standalone"):
        if (name, kind) not in made:
            path = EXAMPLES / "slew.toml" if name == "slew" else closed_loops.system(folder, name)
            out = folder / f"{name}_{kind}.fmu"
            assert main(["export", str(path), "--out", str(out), "--fmu-kind", kind]) == 0
            made[(name, kind)] = path, out
        return made[(name, kind)]
    return export


_RUNS = {}


def in_process(path, stop, dt=H):
    """``(t, recorded outputs)`` of the in-process run (kept: several tests compare with it)."""
    if (path, stop, dt) not in _RUNS:
        tr, values = monolithic.run(systemfile.read(path).system, stop, dt)
        _RUNS[(path, stop, dt)] = tr.t, values
    return _RUNS[(path, stop, dt)]


def at_grid(result, t):
    """The rows of an FMPy result at the times ``t``, the last of those at a time (after its
    events: FMPy records a Model Exchange run before and after each)."""
    rows = [np.flatnonzero(np.abs(result["time"] - s) <= 1e-9 * max(1.0, s))[-1] for s in t]
    return result[rows]


def error(result, path, names, stop, dt=H):
    t, ref = in_process(path, stop, dt)
    result = at_grid(result, t)
    return np.abs(np.column_stack([result[n] for n in names]) - ref).max()


#: the plain run exports and runs the table_hold loop only (tests/support/marks.py)
CO_SIMULATION = [*slow(("sensors", 2.0, "standalone"), ("pid", 2.0, "standalone"), ("pid", 2.0, "pythonfmu")),
                 ("table_hold", 3.0, "standalone"), *slow(("balloon_gain", 10.0, "standalone")),
                 pytest.param("spinup", 20.0, "standalone", marks=pytest.mark.slow),
                 pytest.param("spinup", 20.0, "pythonfmu", marks=pytest.mark.slow),
                 pytest.param("table", 3.0, "standalone", marks=pytest.mark.slow),
                 pytest.param("table_hold", 3.0, "pythonfmu", marks=pytest.mark.slow),
                 pytest.param("discrete", 2.0, "pythonfmu", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name,stop,kind", CO_SIMULATION)
def test_co_simulation_in_fmpy_is_the_in_process_run(exported, name, stop, kind):
    """FMPy's simulate_fmu as a strict host (every call fmi2OK, nothing logged), a step of
    0.01 s: the recorded outputs equal the in-process run's at every row, to 1e-8 (the same
    integrator split at the same events; measured 1e-10 to 2e-9, the PID's kinks the most)."""
    path, fmu = exported(name, kind)
    names = recorded_names(systemfile.read(path).system)
    r = strict_fmpy_run(fmu, stop_time=stop, output_interval=H, step_size=H, output=names)
    err = error(r, path, names, stop)
    print(f"\n[closed loop] {name}, {kind} FMU in FMPy (co-simulation), {stop:g} s: {err:.2g}")
    assert err <= 1e-8


ME = [*slow(("sensors", 2.0), ("pid", 2.0)), ("table_hold", 3.0), *slow(("balloon_gain", 10.0)),
      pytest.param("spinup", 20.0, marks=pytest.mark.slow),
      pytest.param("table", 3.0, marks=pytest.mark.slow)]


@pytest.mark.parametrize("name,stop", ME)
def test_model_exchange_in_fmpy_is_the_in_process_run(exported, name, stop):
    """FMPy's CVode integrates the plant's and the controllers' states, stopping at the FMU's
    time events (its samples, its signals' breakpoints), where fmi2NewDiscreteStates samples:
    within 1e-6 of the in-process run (measured 1e-11 to 3e-9 at rtol 1e-12)."""
    path, fmu = exported(name)
    names = recorded_names(systemfile.read(path).system)
    r = simulate_fmu(str(fmu), fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-12, stop_time=stop,
                     output_interval=H, output=names)
    err = error(r, path, names, stop)
    print(f"\n[closed loop] {name}, standalone FMU in FMPy (Model Exchange, CVode 1e-12), {stop:g} s: {err:.2g}")
    assert err <= 1e-6


@pytest.mark.parametrize("interface", ["CoSimulation", "ModelExchange"])
def test_blocks_of_two_rates_sample_once_per_instant(exported, interface):
    """A counter sampled every 0.1 s beside a sample-and-hold every 0.3 s (instants one ulp
    apart: 3 x 0.1 and 0.3): the counter reads k at t = k/10, in both interfaces."""
    _, fmu = exported("multirate")
    r = simulate_fmu(str(fmu), fmi_type=interface, solver="CVode", relative_tolerance=1e-12, stop_time=1.0,
                     output_interval=0.1, output=["ctrl.y"])
    np.testing.assert_array_equal(at_grid(r, np.arange(11) * 0.1)["ctrl.y"], np.arange(11.0))


@pytest.mark.slow
def test_the_slew_example_exports(exported):
    """examples/slew.toml (an LQR from a .npz on a sampled, noisy star tracker and a gyro, a
    quintic slew commanded by expressions, a disturbance table): its standalone FMU, the noise
    drawn in C, is the in-process run at every 0.1 s (the star tracker's samples) over 60 s, to
    1e-8 in co-simulation (measured 1.4e-10), 1e-6 in Model Exchange (4.4e-7, the torque)."""
    path, fmu = exported("slew")
    names = recorded_names(systemfile.read(path).system)
    cs = strict_fmpy_run(fmu, stop_time=60.0, output_interval=0.1, step_size=0.1, output=names)
    me = simulate_fmu(str(fmu), fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-12, stop_time=60.0,
                      output_interval=0.1, output=names)
    errors = [error(r, path, names, 60.0, 0.1) for r in (cs, me)]
    print(f"\n[closed loop] slew, 60 s: co-simulation {errors[0]:.2g}, Model Exchange {errors[1]:.2g}")
    assert errors[0] <= 1e-8 and errors[1] <= 1e-6


@pytest.mark.slow
def test_the_fmu_s_variables_and_its_c(exported):
    """The signals and controllers are inside: the inputs they feed are no FMU inputs (the
    pendulum's torque, the PID's input), the free ones are (the base's motion, the PID's
    setpoint, its start value the file's); the controller's output is an output; the PID's
    two states are Model Exchange states. The model's C holds the signal and the blocks."""
    _, fmu = exported("pid")
    md = read_model_description(str(fmu))
    causality = {v.name: v.causality for v in md.modelVariables}
    assert [n for n, c in causality.items() if c == "input"] == [f"base.p.a[{k}]" for k in range(1, 7)] + ["err.u1"]
    assert next(v.start for v in md.modelVariables if v.name == "err.u1") == repr(float(np.radians(10)))
    assert [n for n, c in causality.items() if c == "output"] == ["link.joint.q[3]", "link.joint.q[2]", "ctrl.y"]
    local = [s.name for s in md.modelVariables if s.causality == "local"]
    assert md.numberOfContinuousStates == 13 + 2 + 2 and len(local) == 2 * 17
    assert local[15:17] == ["ctrl.x[1]", "ctrl.x[2]"] and local[-2:] == ["der(ctrl.x[1])", "der(ctrl.x[2])"]
    _, spinup = exported("spinup")
    with zipfile.ZipFile(spinup) as z:
        code = z.read("sources/model.c").decode()
        assert "sources/control.c" in z.namelist()
    assert "static double signal0(double t)" in code and "titop_first_change(signal0_c0, t, t1)" in code


@pytest.mark.slow
def test_time_events_in_model_exchange(exported):
    """fmi2NewDiscreteStates gives the next sample (every 0.01 s) or table row (0.37, 1.1, ...) as
    nextEventTime; at the event the held torque jumps (before it, the left limit), the
    continuous states do not; an expression's breakpoints are looked for one second ahead (its
    end an event then), its own found exactly (15 s, where the spin-up ends)."""
    def events(name, times):
        host = Host(exported(name)[1], model_exchange=True)
        host.initialize()
        seen = [host.fmu.newDiscreteStates()]
        host.fmu.enterContinuousTimeMode()
        for t in times:
            host.fmu.setTime(t)
            host.fmu.enterEventMode()
            seen.append(host.fmu.newDiscreteStates())
            host.fmu.enterContinuousTimeMode()
        host.free()
        return [(s[4], s[5]) for s in seen], [s[:4] for s in seen]

    got, flags = events("discrete", [0.01, 0.02])
    assert got == [(True, 0.01), (True, 0.02), (True, 0.03)]
    assert flags == [(False, False, False, False)] * 3       # no iteration, no state changed
    got, _ = events("table_hold", [0.37, 1.1])
    assert got == [(True, 0.37), (True, 1.1), (True, 1.75)]
    got, _ = events("spinup", [1.0, 14.5, 15.0])
    assert got == [(True, 1.0), (True, 2.0), (True, 15.0), (True, 16.0)]
    host = Host(exported("discrete")[1], model_exchange=True)
    host.initialize()
    host.fmu.newDiscreteStates()
    host.fmu.enterContinuousTimeMode()
    x = np.zeros(2 + 13)
    host.fmu.getContinuousStates(x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), len(x))
    host.fmu.setTime(0.01)
    before = host.get(["ctrl.y"])[0]
    host.fmu.enterEventMode()
    host.fmu.newDiscreteStates()
    after = host.get(["ctrl.y"])[0]
    # the held torque: -3 x[0] - 12 q0 - 2.5 qd0 before, then -3 x[1] - 12 q - 2.5 qd with x[1] = 0.01 q0
    q0 = np.radians(40)
    q, qd = host.get(["link.joint.q[3]", "link.joint.q[2]"])
    assert before == -12 * q0 and after == pytest.approx(-3 * 0.01 * q0 - 12 * q - 2.5 * qd, abs=1e-15)
    host.free()


@pytest.mark.parametrize("name,step,stop", [*slow(("discrete", 0.05, 1.0)), ("table_hold", 0.5, 3.0)])
def test_samples_and_rows_inside_a_long_step_are_met(exported, name, step, stop):
    """Steps of 0.05 s over a controller sampled every 0.01 s, of 0.5 s over a hold table's rows
    (0.37, 1.1, 1.75, 2.6): each step is split at the events inside it, the values at the
    steps' ends are the in-process run's to 1e-10."""
    path, fmu = exported(name)
    names = recorded_names(systemfile.read(path).system)
    host = Host(fmu)
    host.initialize()
    rows = [host.get(names)]
    for k in range(int(round(stop / step))):
        host.fmu.doStep(k * step, step)
        rows.append(host.get(names))
    host.free()
    _, ref = in_process(path, stop, step)
    assert np.abs(np.array(rows) - ref).max() <= 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["standalone", "pythonfmu"])
def test_the_fmu_state_holds_the_discrete_states(exported, kind):
    """Saved between two samples (and serialized), restored later: the steps after it are the same
    to the bit."""
    _, fmu = exported("sensors", kind)
    host = Host(fmu)
    host.initialize()
    for k in range(3):
        host.fmu.doStep(k * 0.004, 0.004)
    state = host.fmu.getFMUstate()
    blob = host.fmu.serializeFMUstate(state)
    first = []
    for k in range(3, 8):
        host.fmu.doStep(k * 0.004, 0.004)
        first.append(host.get(["ctrl.y", "link.joint.q[3]"]))
    for restore in (state, host.fmu.deSerializeFMUstate(blob)):
        host.fmu.setFMUstate(restore)
        again = []
        for k in range(3, 8):
            host.fmu.doStep(k * 0.004, 0.004)
            again.append(host.get(["ctrl.y", "link.joint.q[3]"]))
        assert np.array_equal(again, first)
    host.free()


@pytest.mark.slow
def test_a_setpoint_is_an_input(exported, folder):
    """The PID's setpoint set to 20 deg through FMI: the in-process run of the file with 20 deg."""
    path, fmu = exported("pid")
    names = recorded_names(systemfile.read(path).system)
    r = strict_fmpy_run(fmu, stop_time=1.0, output_interval=H, step_size=H, output=names,
                        start_values={"err.u1": np.radians(20)})
    other = folder / "pid20.toml"
    other.write_text(path.read_text().replace('"10*deg"', '"20*deg"'))
    assert error(r, other, names, 1.0) <= 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("name,stop", [("sensors", 2.0), ("pid", 2.0),
                                       pytest.param("spinup", 20.0, marks=pytest.mark.slow)])
def test_a_strict_c_host_with_an_empty_environment(harness, exported, tmp_path, name, stop):
    """The C host started by ``env -i``: every call fmi2OK, nothing logged, the state round trip
    exact, the outputs the in-process run's to 1e-8 (its times sums of its steps: the samples
    within 1e-9 of a communication point are met there)."""
    path, fmu = exported(name)
    y = strict_outputs(harness, fmu, tmp_path, int(round(stop / H)))
    _, ref = in_process(path, stop)
    err = np.abs(y - ref).max()
    print(f"\n[closed loop] {name}, strict C host, {stop:g} s: {err:.2g}")
    assert err <= 1e-8


@pytest.mark.slow
def test_win64_binaries_under_wine_give_the_linux64_outputs(harness, exported, tmp_path):
    """The sensors' loop and the spin-up over 2 s in the C host: the win64 binaries (the host
    built with MinGW-w64, under Wine) give the linux64 ones' outputs to 1e-12 of the largest."""
    exe = windows_harness(tmp_path)
    groups = []
    for name in ("sensors", "spinup"):
        fmu = exported(name)[1]
        md = read_model_description(str(fmu))
        outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
        groups.append(harness_args(fmu, tmp_path, outputs=outputs, steps=200))
    args = [a.replace(f"{tmp_path}/", "") for g in groups for a in [*g, "--"]][:-1]
    (tmp_path / "args.txt").write_text("\n".join(args) + "\n")
    linux = subprocess.run(["env", "-i", str(harness), "@args.txt"], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    win = under_wine(exe, ["@args.txt"], tmp_path)
    assert linux.returncode == win.returncode == 0, win.stdout[-2000:] + win.stderr[-2000:]
    values = {k: np.array([float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("y ")])
              for k, r in (("linux", linux), ("win", win))}
    assert values["win"].shape == values["linux"].shape and len(values["linux"]) == 201 * (3 + 6)
    diff = np.abs(values["win"] - values["linux"]).max() / np.abs(values["linux"]).max()
    print(f"\n[closed loop] win64 under Wine vs linux64, 2 s: {diff:.2g} of the largest output")
    assert diff <= 1e-12


ACCELEROMETER = """
[units.acc]
model = "sensor"
of = "body.com.acceleration"
"""


@pytest.mark.parametrize("change,says", [
    ('"body.ext.w[6]" = "where(t < 1, 0, [1, 2])"',
     "input body.ext.w[6]: its signal has no C form for the standalone FMU: 'where(t < 1, 0, [1, 2])': a list"),
    (ACCELEROMETER, "'body.com.acceleration': a point's acceleration is not computed by the standalone assembly FMU"),
])
def test_a_loop_the_standalone_fmu_cannot_hold_is_refused_at_export(folder, capsys, change, says):
    """One line, exit code 2, no file."""
    path = folder / "bad.toml"
    text = (closed_loops.SYSTEMS / "table_torque.toml").read_text()
    table = '"body.ext.w" = { table = "torque.csv", interpolation = "linear" }'
    path.write_text(text.replace(table, change) if change.startswith('"') else
                    text.replace("[inputs]", change + "\n[inputs]").replace(table, ""))
    out = folder / "bad.fmu"
    assert main(["export", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and not out.exists()
