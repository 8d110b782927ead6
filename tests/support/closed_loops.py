"""Closed-loop systems of the tests (time signals, control units, sensors), written into a
folder as system files: a spin-up-driven hub with a pendulum and a table-driven torque on a
free body (tests/control/systems/), a pendulum on a joint held by a discrete controller (its
measurements from outputs or sensor units, its matrices in the file or a .mat) or by a PID
with limits, the balloon's pendulums held by a feedback gain."""

from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

SYSTEMS = Path(__file__).resolve().parents[1] / "control" / "systems"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: the plant of the closed-loop tests: a pendulum (a link on a revolute joint about z) hanging from
#: a base whose motion is imposed; its [units.link] table is last, for a caller to add q0
PLANT = """
[units.base]
model = "imposed_motion_base_c1"
mass = 5.0
inertia = [[0.05, 0, 0], [0, 0.05, 0], [0, 0, 0.05]]
com = [0, 0, 0]
"c1.r" = [0, 0, 0]

[units.link]
model = "revolute_c0"
mass = 2.0
inertia = [[0.17, 0, 0], [0, 0.01, 0], [0, 0, 0.17]]
com = [0, -0.5, 0]
axis = [0, 0, 1]
"""
PENDULUM = """
links = [["base.c1", "link.p"]]
record = ["link.joint.q[3]", "link.joint.q[2]", "ctrl.y"]
{connections}

""" + PLANT + """q0 = "40 deg"

{controller}

[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
"""
#: the pendulum about its hinge: J q'' = tau - m g l sin q
J, MGL = 0.17 + 2.0 * 0.25, 2.0 * 9.81 * 0.5

DISCRETE = """
[units.ctrl]
model = "state_space"
A = [[1.0]]
B = [[0.01, 0.0]]
C = [[-3.0]]
D = [[-12.0, -2.5]]
sample_time = 0.01
"""
MEASURED = ('connections = [["link.joint.q[3]", "ctrl.u[1]"], ["link.joint.q[2]", "ctrl.u[2]"], '
            '["ctrl.y", "link.joint.tau"]]')
SENSORS = """
[units.angle]
model = "sensor"
of = "link.joint.q[3]"

[units.rate]
model = "sensor"
of = "link.joint.q[2]"
"""
SENSED = 'connections = [["angle.y", "ctrl.u[1]"], ["rate.y", "ctrl.u[2]"], ["ctrl.y", "link.joint.tau"]]'
#: a counter x[k+1] = x[k] + 1 (its output x[k]) every 0.1 s beside a sample-and-hold every 0.3 s, fed by one.y = 1
MULTIRATE = """
[units.one]
model = "gain"
K = [[1.0]]

[units.ctrl]
model = "state_space"
A = [[1.0]]
B = [[1.0]]
C = [[1.0]]
sample_time = 0.1

[units.slow]
model = "zoh"
sample_time = 0.3
"""
PID = '[units.err]\nmodel = "sum"\nsigns = [1, -1]\n\n' \
      '[units.ctrl]\nmodel = "pid"\nkp = 20\nki = 15\nkd = 3\ntf = 0.05\nlimits = [-6, 6]\n'
PID_WIRES = 'connections = [["err.y", "ctrl.u"], ["link.joint.q[3]", "err.u2"], ["ctrl.y", "link.joint.tau"]]'


#: the balloon's pendulums held by a feedback gain on their joints' angles and rates
BALLOON_GAIN = """connections = [
    ["pendulum1.joint.q[3]", "k.u[1]"], ["pendulum2.joint.q[3]", "k.u[2]"],
    ["pendulum1.joint.q[2]", "k.u[3]"], ["pendulum2.joint.q[2]", "k.u[4]"],
    ["k.y[1]", "pendulum1.joint.tau"], ["k.y[2]", "pendulum2.joint.tau"],
]

[units.k]
model = "gain"
K = [[-40.0, 10.0, -8.0, 0.0], [5.0, -30.0, 0.0, -6.0]]
"""


def pendulum(folder, controller, connections, name="p.toml", inputs="") -> Path:
    """The pendulum with ``controller`` (units) wired by ``connections``; ``inputs`` more lines
    of its [inputs]."""
    path = Path(folder) / name
    path.write_text(PENDULUM.format(controller=controller, connections=connections)
                    .replace("[inputs]\n", f"[inputs]\n{inputs}"))
    return path


def system(folder, name) -> Path:
    """The closed loop ``name`` written in ``folder``: ``spinup``, ``table`` (linear; ``table_hold``),
    ``discrete`` (measured outputs), ``sensors`` (the same measured by sensor units), ``pid``,
    ``multirate`` (a counter every 0.1 s beside a sample-and-hold every 0.3 s),
    ``balloon_gain`` (examples/balloon.toml, a gain on its pendulums' joints)."""
    folder = Path(folder)
    if name == "spinup":
        return _copy(SYSTEMS / "spinup_pendulum.toml", folder / "spinup.toml")
    if name.startswith("table"):
        _copy(SYSTEMS / "torque.csv", folder / "torque.csv")
        path = _copy(SYSTEMS / "table_torque.toml", folder / f"{name}.toml")
        path.write_text(path.read_text().replace('"linear"', '"hold"' if name == "table_hold" else '"linear"'))
        return path
    if name == "discrete":
        return pendulum(folder, DISCRETE, MEASURED, "discrete.toml")
    if name == "sensors":
        return pendulum(folder, DISCRETE + SENSORS, SENSED, "sensors.toml")
    if name == "pid":
        return pendulum(folder, PID, PID_WIRES, "pid.toml", '"err.u1" = "10*deg"\n')
    if name == "multirate":
        return pendulum(folder, MULTIRATE, 'connections = [["one.y", "ctrl.u"], ["one.y", "slow.u"]]',
                        "multirate.toml", '"one.u" = 1.0\n')
    if name == "balloon_gain":
        path = _copy(EXAMPLES / "balloon.toml", folder / "balloon_gain.toml")
        path.write_text(path.read_text().replace("[simulation]", BALLOON_GAIN + "\n[simulation]"))
        return path
    raise ValueError(name)


def _copy(src: Path, dst: Path) -> Path:
    dst.write_text(src.read_text())
    return dst


def discrete_loop(t, stop=2.0, tight=dict(method="DOP853", rtol=1e-13, atol=1e-13)) -> tuple:
    """The discrete loop of ``DISCRETE`` on the pendulum written out: ``x[k+1] = x[k] + 0.01 q_k``,
    ``tau_k = -3 x[k] - 12 q_k - 2.5 qd_k`` held on ``[k/100, (k+1)/100)``, the pendulum
    ``J q'' = tau - m g l sin q`` integrated by scipy sample period by sample period from 40
    degrees at rest. ``(q, tau)`` at the times ``t`` in ``[0, stop)`` (a time at a sample: the
    values after it)."""
    t = np.asarray(t, dtype=float)
    x, s = 0.0, np.array([np.radians(40), 0.0])
    q, held = np.empty(len(t)), np.empty(len(t))
    for k in range(int(round(stop * 100))):
        tau = -3.0 * x - 12.0 * s[0] - 2.5 * s[1]
        x += 0.01 * s[0]
        rows = np.flatnonzero((t >= k / 100) & (t < (k + 1) / 100))
        sol = solve_ivp(lambda _, z: [z[1], (tau - MGL * np.sin(z[0])) / J], (k / 100, (k + 1) / 100), s,
                        t_eval=np.append(t[rows], (k + 1) / 100), **tight)
        q[rows], held[rows] = sol.y[0, :-1], tau
        s = sol.y[:, -1]
    return q, held
