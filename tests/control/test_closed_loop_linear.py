"""Linear models and equilibria of closed loops: the balloon held by a feedback gain on its
pendulums, against the open-loop model closed by hand (A + B K C), and its nonlinear response
against the linear prediction."""

from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm

from titop_fmu.cosim import systemfile
from titop_fmu.linear import linearize, trim
from titop_fmu.titop import monolithic

SYSTEMS = Path(__file__).resolve().parent / "systems"
K = np.array([[-20.0, -8.0, 0.0, 0.0], [0.0, 0.0, -15.0, -6.0]])
SENSED = ["pendulum1.joint.q[3]", "pendulum1.joint.q[2]", "pendulum2.joint.q[3]", "pendulum2.joint.q[2]"]
TORQUES = ["pendulum1.joint.tau", "pendulum2.joint.tau"]


def closed():
    return systemfile.read(SYSTEMS / "balloon_gain.toml").system


def open_loop():
    cs = closed()
    del cs.units["K"]
    cs.connections = [c for c in cs.connections if not (c[0].startswith("K.") or c[1].startswith("K."))]
    return cs


def matched(a, b):
    """The largest distance between the eigenvalues ``a`` and ``b`` paired one to one."""
    from scipy.optimize import linear_sum_assignment
    d = np.abs(a[:, None] - b[None, :])
    rows, cols = linear_sum_assignment(d)
    return float(d[rows, cols].max())


@pytest.mark.parametrize("at_equilibrium", [False, True])
def test_the_closed_loop_model_is_the_open_loop_closed_by_hand(at_equilibrium):
    """eig of the closed loop's A = eig(A + B K C) of the open loop's model (inputs the
    torques, outputs the angles and rates) at the same state and torques, to 1e-8: at the
    initial state, and at the equilibrium trimmed on each."""
    cs, ol = closed(), open_loop()
    if at_equilibrium:
        eq, eq_open = trim(cs), trim(ol)
        np.testing.assert_allclose(eq.state, eq_open.state, atol=1e-10)       # the gain holds it where it hangs
        model = eq.linearize()
        plant = linearize(eq_open.system, eq_open.state, TORQUES, SENSED)
    else:                                   # the open loop at the torques the gain gives there
        model = linearize(cs)
        tau0 = K @ linearize(ol, None, TORQUES, SENSED).y0
        plant = linearize(ol, None, dict(zip(TORQUES, tau0)), SENSED)
        assert abs(tau0[0]) > 0.1
    expected = np.linalg.eigvals(plant.A + plant.B @ K @ plant.C)
    got = np.linalg.eigvals(model.A)
    scale = max(1.0, np.abs(expected).max())
    assert matched(got, expected) < 1e-8 * scale
    assert model.states == plant.states


def test_a_small_offset_decays_as_the_linear_model_predicts():
    """1 deg on the first pendulum: the nonlinear closed loop (in process) against the linear
    model's free response, expm(A t) dx0, within 1e-3 of the amplitude over 5 s."""
    cs = closed()
    eq = trim(cs)
    model = linearize(cs, eq.state, [], ["pendulum1.joint.q[3]", "pendulum2.joint.q[3]"])
    tr, values = monolithic.run(cs, 5.0, 0.05)
    dx0 = np.zeros(len(model.states))
    dx0[model.states.index("pendulum1.q")] = np.radians(1.0)
    predicted = np.array([model.C @ expm(model.A * t) @ dx0 for t in tr.t])
    truth = values[:, [1, 2]] - model.y0                 # the record: slider, pendulum1, pendulum2, ...
    amplitude = np.radians(1.0)
    assert np.max(np.abs(truth - predicted)) < 1e-3 * amplitude
    assert np.max(np.abs(truth[:, 0])) > 0.9 * amplitude and abs(truth[-1, 0]) < 0.2 * amplitude   # it decays
