"""The in-process engine with time signals and control units, against independent
references: closed-form kinematics, and the same systems' equations of motion written out
here and integrated by scipy piece by piece, driven by the same profiles."""

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from closed_loops import DISCRETE, J, MEASURED, MGL, PENDULUM, SENSED, SENSORS, SYSTEMS, discrete_loop, pendulum, system
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.titop import monolithic
from titop_fmu.titop.closedloop import ClosedLoop

ROOT = Path(__file__).resolve().parents[2]
TIGHT = dict(method="DOP853", rtol=1e-13, atol=1e-13)


def run(path, stop, dt=0.01):
    cs = systemfile.read(path).system
    tr, values = monolithic.run(cs, stop, dt)
    return tr, values


def spin_profile(t, omega=6.0, ts=15.0):
    """The hub's angle, rate and acceleration of the spin-up (Simo & Vu-Quoc)."""
    if t < ts:
        c = 2 * np.pi / ts
        return ((omega / ts) * (t ** 2 / 2 + (ts / (2 * np.pi)) ** 2 * (np.cos(c * t) - 1)),
                (omega / ts) * (t - np.sin(c * t) / c), (omega / ts) * (1 - np.cos(c * t)))
    return omega * (t - ts / 2), omega, 0.0


def test_a_commanded_spin_up_drives_the_hub_and_its_pendulum_exactly():
    """The hub's angle is the profile's (closed form); the pendulum on it follows its Lagrange
    equation with the prescribed hub angle, (m l^2 + I)(th'' + phi'') + m R l (th'' cos phi +
    th'^2 sin phi) = -k phi - d phi', integrated here by scipy in the two pieces of the profile."""
    tr, values = run(SYSTEMS / "spinup_pendulum.toml", 20.0)
    m, l, I, R, k, d = 2.0, 0.5, 0.06, 1.0, 40.0, 0.2

    def f(t, x):
        _, w, a = spin_profile(t)
        phi, dphi = x
        J = m * l ** 2 + I
        return [dphi, (-k * phi - d * dphi - m * R * l * (a * np.cos(phi) + w ** 2 * np.sin(phi))) / J - a]
    t = tr.t
    first = solve_ivp(f, (0, 15), [0, 0], dense_output=True, **TIGHT)
    second = solve_ivp(f, (15, 20), first.sol(15.0), dense_output=True, **TIGHT)
    ref = np.array([first.sol(s) if s < 15 else second.sol(s) for s in t])
    assert ref.shape == (2001, 2) and len(t) == 2001
    np.testing.assert_allclose(values[:, 0], ref[:, 0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(values[:, 1], ref[:, 1], rtol=0, atol=1e-8)
    theta = np.array([spin_profile(s)[0] for s in t])
    np.testing.assert_allclose(np.unwrap(values[:, 2]), theta, rtol=0, atol=1e-9)
    np.testing.assert_allclose(values[:, 3:5], 2.0 * np.column_stack([-np.sin(theta), np.cos(theta)]), atol=1e-9)
    assert 15.0 in [b for _, b in tr.pieces]                 # the integrator stopped at the breakpoint
    assert np.max(np.abs(values[:, 0])) > 0.02                # the pendulum did swing


def euler_equations(inertia, torque):
    inv = np.linalg.inv(inertia)
    return lambda t, w: inv @ (torque(t) - np.cross(w, inertia @ w))


@pytest.mark.parametrize("interpolation", ["linear", "hold"])
def test_a_table_driven_torque_on_a_free_body(tmp_path, interpolation):
    """Euler's equations I w' + w x I w = T(t) with the table's own interpolation, integrated
    by scipy between its rows: the body's rate within 1e-8 at every 0.01 s; the integrator
    met every row (hold: a jump at each) exactly."""
    text = (SYSTEMS / "table_torque.toml").read_text().replace('"linear"', f'"{interpolation}"')
    (tmp_path / "torque.csv").write_text((SYSTEMS / "torque.csv").read_text())
    (tmp_path / "s.toml").write_text(text)
    tr, values = run(tmp_path / "s.toml", 3.0)
    rows = np.loadtxt(SYSTEMS / "torque.csv", delimiter=",", skiprows=1)
    times, torques = rows[:, 0], rows[:, 4:7]
    inertia = np.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.1], [-0.2, 0.1, 1.1]])

    def torque(t):
        if interpolation == "hold":
            i = max(np.searchsorted(times, t, side="right") - 1, 0)
            return torques[min(i, len(times) - 1)]
        return np.array([np.interp(t, times, torques[:, j]) for j in range(3)])
    edges = [0.0, *times[1:], 3.0]
    w, pieces = np.array([0.1, -0.2, 0.3]), []
    for a, b in zip(edges[:-1], edges[1:]):
        mid = 0.5 * (a + b)
        sol = solve_ivp(euler_equations(inertia, lambda t, m=mid: torque(m if interpolation == "hold" else t)),
                        (a, b), w, dense_output=True, **TIGHT)
        pieces.append((a, b, sol.sol))
        w = sol.y[:, -1]
    ref = np.array([next(s(t) for a, b, s in pieces if a <= t <= b) for t in tr.t])
    np.testing.assert_allclose(values[:, :3], ref, rtol=0, atol=1e-8)
    assert set(times[1:-1]) <= {b for _, b in tr.pieces}


@pytest.mark.parametrize("measured", ["outputs", "sensors", "mat"])
def test_a_discrete_controller_updates_at_its_samples_and_matches_the_discrete_loop(tmp_path, measured):
    """x[k+1] = x[k] + 0.01 q_k, tau_k = -3 x[k] - 12 q_k - 2.5 qd_k held on [k/100, (k+1)/100):
    the pendulum integrated by scipy sample period by sample period, the controller stepped
    here, equal to 1e-8; the held torque changes exactly at the samples."""
    controller, connections = DISCRETE, MEASURED
    if measured != "outputs":
        controller, connections = DISCRETE + SENSORS, SENSED
    if measured == "mat":
        from scipy.io import savemat
        savemat(tmp_path / "ctrl.mat", {"A": [[1.0]], "B": [[0.01, 0.0]], "C": [[-3.0]], "D": [[-12.0, -2.5]]})
        controller = controller.replace(DISCRETE, '\n[units.ctrl]\nmodel = "state_space"\nfile = "ctrl.mat"\n'
                                        'sample_time = 0.01\n')
    tr, values = run(pendulum(tmp_path, controller, connections), 2.0, 0.0025)
    ref, held = discrete_loop(tr.t[:-1])
    np.testing.assert_allclose(values[:-1, 0], ref, rtol=0, atol=1e-8)
    np.testing.assert_allclose(values[:-1, 2], held, rtol=0, atol=1e-8)
    jumps = tr.t[1:][np.abs(np.diff(values[:, 2])) > 0]
    np.testing.assert_allclose(jumps * 100, np.round(jumps * 100), atol=1e-9)    # only at t = k / 100


def test_an_algebraic_loop_through_controllers_is_refused(tmp_path):
    path = pendulum(tmp_path, '[units.ctrl]\nmodel = "gain"\nK = [[-0.5]]\n',
                    'connections = [["link.joint.q[1]", "ctrl.u"], ["ctrl.y", "link.joint.tau"]]')
    with pytest.raises(ConnectionError_, match="algebraic loop through control units: .*ctrl.*plant|plant.*ctrl"):
        ClosedLoop(systemfile.read(path).system)


def test_a_pid_with_limits_and_anti_windup_against_its_equations(tmp_path):
    """A saturated PID holding the pendulum at 10 deg: the law written out here (filtered
    derivative, back-calculation) with the pendulum, integrated by scipy, equal to 1e-8."""
    tr, values = run(system(tmp_path, "pid"), 4.0)
    kp, ki, kd, tf, lo, hi = 20, 15, 3, 0.05, -6, 6
    tt = np.sqrt(kd / ki)

    def f(t, s):
        q, qd, xi, xf = s
        e = np.radians(10) - q
        v = kp * e + xi + kd * (e - xf) / tf
        y = min(max(v, lo), hi)
        return [qd, (y - MGL * np.sin(q)) / J, ki * e + (y - v) / tt, (e - xf) / tf]
    sol = solve_ivp(f, (0, 4), [np.radians(40), 0, 0, 0], t_eval=tr.t, **TIGHT)
    np.testing.assert_allclose(values[:, 0], sol.y[0], rtol=0, atol=1e-8)
    assert np.any(np.abs(values[:, 2]) == 6.0)                 # it did saturate
    assert abs(values[-1, 0] - np.radians(10)) < 1e-2          # and come back near 10 deg, unwound


@pytest.mark.slow
def test_a_campaign_varies_a_sensors_seed_and_a_gain(tmp_path):
    """``sweep`` of a noisy sensor's seed and a gain: each run equals ``simulate`` with the same
    values set; two seeds measure differently, one seed twice the same."""
    pytest.importorskip("pyarrow")
    from titop_fmu import campaign
    from titop_fmu.cli import main
    path = pendulum(tmp_path, '[units.s]\nmodel = "sensor"\nof = "link.joint.q[3]"\nnoise = 0.01\n'
                    'sample_time = 0.01\n\n[units.ctrl]\nmodel = "gain"\nK = [[-12.0, -2.5]]\n',
                    'connections = [["s.y", "ctrl.u[1]"], ["link.joint.q[2]", "ctrl.u[2]"], '
                    '["ctrl.y", "link.joint.tau"]]')
    store = tmp_path / "store"
    assert main(["sweep", str(path), "--vary", "s.seed=[1,2,1]", "--vary", "ctrl.K[1,1]=[-12,-12,-12]",
                 "--sampling", "grid", "--stop", "0.5", "--workers", "0", "--quiet", "--out", str(store)]) == 0
    c = campaign.open(store)
    runs = [c.trajectory(i).to_numpy() for i in range(len(c.samples))]
    seeds = list(c.samples["s.seed"])
    assert set(c.samples.status) == {"ok"}
    same = [i for i, s in enumerate(seeds) if s == 1]
    other = seeds.index(2)
    assert np.array_equal(runs[same[0]], runs[same[1]]) and not np.array_equal(runs[same[0]], runs[other])
    out = tmp_path / "one.csv"
    assert main(["simulate", str(path), "--stop", "0.5", "--quiet", "--out", str(out), "--set", "s.seed=2"]) == 0
    assert np.array_equal(np.loadtxt(out, delimiter=",", skiprows=1), runs[other])


def test_a_campaign_of_a_system_driven_by_a_time_signal(tmp_path):
    """``sweep`` of the spin-up (its hub driven by an expression in t) varying a mass: each run
    equals ``simulate`` with the same value set (it ended in a traceback: the settable values
    were read as numbers, a time signal among them)."""
    pytest.importorskip("pyarrow")
    from titop_fmu import campaign
    from titop_fmu.cli import main
    path, store = system(tmp_path, "spinup"), tmp_path / "store"
    assert main(["sweep", str(path), "--vary", "arm.mass=[1.5,2.5]", "--sampling", "grid", "--stop", "0.5",
                 "--workers", "0", "--quiet", "--out", str(store)]) == 0
    c = campaign.open(store)
    assert set(c.samples.status) == {"ok"}
    for i, mass in enumerate(c.samples["arm.mass"]):
        out = tmp_path / f"{i}.csv"
        assert main(["simulate", str(path), "--stop", "0.5", "--quiet", "--out", str(out), "--set",
                     f"arm.mass={mass!r}"]) == 0
        assert np.array_equal(np.loadtxt(out, delimiter=",", skiprows=1), c.trajectory(i).to_numpy())


def test_a_continuous_sensor_of_an_inertial_quantity_closes_no_algebraic_loop(tmp_path):
    """A PD on the pendulum's inertial yaw (``link.euler[3]``, which reads no acceleration)
    and on its joint rate: the same run as the PD on the joint angle itself (for a pendulum
    about z from a fixed base the yaw is the joint angle), to 1e-10."""
    controller = '[units.ctrl]\nmodel = "gain"\nK = [[-12.0, -2.5]]\n'
    by_joint = pendulum(tmp_path, controller, 'connections = [["link.joint.q[3]", "ctrl.u[1]"], '
                        '["link.joint.q[2]", "ctrl.u[2]"], ["ctrl.y", "link.joint.tau"]]')
    _, joint = run(by_joint, 2.0)
    by_yaw = tmp_path / "yaw.toml"
    by_yaw.write_text(PENDULUM.format(controller=controller + '\n[units.yaw]\nmodel = "sensor"\nof = "link.euler[3]"\n',
                                      connections='connections = [["yaw.y", "ctrl.u[1]"], ["link.joint.q[2]", '
                                                  '"ctrl.u[2]"], ["ctrl.y", "link.joint.tau"]]'))
    _, yaw = run(by_yaw, 2.0)
    np.testing.assert_allclose(yaw, joint, rtol=0, atol=1e-10)


@pytest.mark.slow
def test_a_points_acceleration_is_the_derivative_of_its_velocity(tmp_path):
    """``<point>.acceleration`` ([a_X; omega_dot] in R_i) of a floating base, a prismatic and
    two revolute bodies of the balloon (motion in every direction, a torque signal on the
    first pendulum) against the fourth-order central differences of ``<point>.velocity``."""
    text = (ROOT / "examples" / "balloon.toml").read_text()
    points = ["balloon.c1", "slider.com", "pendulum1.c1", "pendulum2.com"]
    text = text[:text.index("record = [")] + "record = [" + ", ".join(
        f'"{p}.velocity", "{p}.acceleration"' for p in points) + "]\n" + text[text.index("[simulation]"):]
    text += '"pendulum1.joint.tau" = "3*sin(2*t)"\n'
    (tmp_path / "b.toml").write_text(text)
    h = 2.5e-4                                   # the differences' error: h^4 f^(5) / 30, under 1e-6 here
    _, values = run(tmp_path / "b.toml", 0.6, h)
    v, a = values.reshape(len(values), len(points), 2, 6)[:, :, 0], values.reshape(len(values), len(points), 2, 6)[:, :, 1]
    dv = (-v[4:] + 8 * v[3:-1] - 8 * v[1:-3] + v[:-4]) / (12 * h)
    scale = np.abs(a).max()
    assert scale > 1.0
    np.testing.assert_allclose(a[2:-2], dv, rtol=0, atol=1e-7 * scale)


def test_an_accelerometer_in_a_loop(tmp_path):
    """A continuous sensor of the pendulum's centre-of-mass acceleration feeding its own joint's
    torque through a gain is an algebraic loop, refused; sampled (no feedthrough), it runs. The
    closed form of the acceleration, a_x = l (q'' cos q - q'^2 sin q) with J q'' = tau - m g l
    sin q: each sample is it with the torque held before the sample (the sensor samples before
    the gain it feeds updates), each row's recorded acceleration with the torque after it."""
    def system(sample):
        return pendulum(tmp_path, '[units.acc]\nmodel = "sensor"\nof = "link.com.acceleration[1]"\n' + sample
                        + '\n[units.ctrl]\nmodel = "gain"\nK = [[-0.3]]\n',
                        'connections = [["acc.y", "ctrl.u"], ["ctrl.y", "link.joint.tau"]]')
    with pytest.raises(ConnectionError_, match="algebraic loop through control units: .*acc"):
        ClosedLoop(systemfile.read(system("")).system)
    path = system("sample_time = 0.05")
    path.write_text(path.read_text().replace(
        'record = ["link.joint.q[3]", "link.joint.q[2]", "ctrl.y"]',
        'record = ["acc.y", "link.com.acceleration[1]", "ctrl.y", "link.joint.q[3]", "link.joint.q[2]"]'))
    _, values = run(path, 1.0, 0.05)
    sample, recorded, tau, q, qd = values.T

    def a_x(tau, q, qd):
        return 0.5 * ((tau - MGL * np.sin(q)) / J * np.cos(q) - qd ** 2 * np.sin(q))
    np.testing.assert_allclose(sample[1:], a_x(tau[:-1], q[1:], qd[1:]), rtol=0, atol=1e-10)
    np.testing.assert_allclose(recorded, a_x(tau, q, qd), rtol=0, atol=1e-10)
    np.testing.assert_allclose(tau, -0.3 * sample, atol=1e-12)
    assert np.abs(recorded).max() > 1.0


@pytest.mark.parametrize("given", ['"body.ext.w" = [0, 0, 0, 0.2, 0, "0.1*t"]',
                                   '"body.ext.w[4]" = 0.2\n"body.ext.w[6]" = "0.1*t"'])
def test_a_port_with_numbers_and_a_signal_keeps_its_numbers(tmp_path, given):
    """A torque 0.2 about x and 0.1 t about z on a body of isotropic inertia I (Euler's coupling
    w x I w vanishes): w_x = 0.2 t / I, w_z = 0.05 t^2 / I (the constant was lost: zeros filled the
    port the signal feeds)."""
    path = tmp_path / "b.toml"
    path.write_text((SYSTEMS / "table_torque.toml").read_text()
                    .replace("[[2.0, 0.3, -0.2], [0.3, 1.5, 0.1], [-0.2, 0.1, 1.1]]", "[[2, 0, 0], [0, 2, 0], [0, 0, 2]]")
                    .replace("twist0 = [0, 0, 0, 0.1, -0.2, 0.3]", "")
                    .replace('"body.ext.w" = { table = "torque.csv", interpolation = "linear" }', given))
    tr, values = run(path, 1.0)
    np.testing.assert_allclose(values[:, 0], 0.2 * tr.t / 2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(values[:, 2], 0.05 * tr.t ** 2 / 2, rtol=0, atol=1e-12)


def test_blocks_of_two_rates_are_each_sampled_once_per_instant(tmp_path):
    """A counter x[k+1] = x[k] + 1 sampled every 0.1 s beside a sample-and-hold every 0.3 s: their
    instants 3 x 0.1 = 0.30000000000000004 and 0.3 are one ulp apart, and each block samples at
    its own: the counter reads k at t = k/10 (it counted twice there, 13 at 1 s)."""
    tr, values = run(system(tmp_path, "multirate"), 1.0, 0.1)
    np.testing.assert_array_equal(values[:, 2], np.arange(11.0))
