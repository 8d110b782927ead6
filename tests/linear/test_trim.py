"""Equilibria (titop_fmu.linear.trim): what is free is solved for, the neutral directions are
held, a steady spin is a (relative) equilibrium, and a problem without an equilibrium or
with an undetermined one is a clear error naming it."""

import numpy as np
import pytest
from scipy.optimize import brentq

from titop_fmu.blocks import FloatingBase, RevoluteBody, RigidBody
from titop_fmu.errors import SolverError, TitopError
from titop_fmu.linear.trim import trim
from titop_fmu.scenarios import balloon
from titop_fmu.spatial import dcm_from_quat, euler_from_dcm, quat_from_dcm, dcm_from_euler
from titop_fmu.system import System

TILTED = {"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)}
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def test_the_neutral_directions_stay_where_they_start():
    """The balloon started at x = 3 m, yaw 40 deg, tilted 10 deg and its pendulums at 5 and
    -5 deg: the equilibrium keeps the position and the turn about the vertical exactly, and
    levels the balloon (the chain under its centre of mass)."""
    s = balloon.build(TILTED)
    y = s.initial_state()
    b = s.state_slice("balloon")
    y[b][6:9] = [3.0, -1.0, 2.0]
    y[b][9:13] = quat_from_dcm(dcm_from_euler([0.1, 0.17, 0.7]))
    eq = trim(s, y)
    yb = eq.state[b]
    assert np.array_equal(yb[6:9], [3.0, -1.0, 2.0])
    P = dcm_from_quat(yb[9:13])
    assert np.abs(P[:, 1] - [0, 1, 0]).max() < 1e-12                        # level: y_b up
    start = dcm_from_euler([0.1, 0.17, 0.7])
    swing = P.T @ start                                                     # the turn from the start ...
    axis = np.array([swing[2, 1] - swing[1, 2], swing[0, 2] - swing[2, 0], swing[1, 0] - swing[0, 1]])
    assert abs((start @ axis)[1]) < 1e-12                                   # ... has no vertical component
    assert any("turn about [0.0, 1.0, 0.0]" in h for h in eq.held) and "balloon.r (position)" in eq.held


def test_a_free_input_balances_what_nothing_else_can():
    """Buoyancy 1 % short: no equilibrium (the balloon falls), and the error says where;
    free its vertical component and the equilibrium holds exactly the weight."""
    s = balloon.build(TILTED)
    s.set_input("balloon.ext.w", [0.0, 0.99 * 156.96, 0.0, 0.0, 0.0, 0.0])
    with pytest.raises(SolverError, match=r"no equilibrium found.*d\(balloon.v_y\)/dt"):
        trim(s)
    eq = trim(s, free=["slider.q", "pendulum1.q", "pendulum2.q", "balloon.attitude", "balloon.ext.w[2]"])
    assert eq.inputs["balloon.ext.w[2]"] == pytest.approx(16 * 9.81, rel=1e-14)
    assert s.values[("balloon", "ext.w")][1] == pytest.approx(0.99 * 156.96)       # the system given: unchanged


def test_under_determined_unknowns_are_named():
    cs = balloon.system(TILTED)                        # pendulum 2 a wheel at P1 about the vertical
    cs.units["pendulum2"].parameters.update({"axis[1]": 0.0, "axis[2]": 1.0, "axis[3]": 0.0, "com[2]": 0.0,
                                             "inertia[1,1]": 0.5, "inertia[2,2]": 1.0, "inertia[3,3]": 0.5})
    with pytest.raises(SolverError, match=r"under-determined.*\['pendulum2.q'\]"):
        trim(cs)
    with pytest.raises(SolverError, match=r"under-determined.*balloon.r_x"):
        trim(balloon.build(TILTED), free=["pendulum1.q", "balloon.r"])
    with pytest.raises(TitopError, match="unknown free unknown 'pendulum3.q'"):
        trim(balloon.build(), free=["pendulum3.q"])


def spinning_hub(omega, k=40.0, m=0.5, a=0.8, l=0.6):
    """A hub spinning about its axis y at ``omega``, no gravity, two arms of a point mass ``m``
    at ``l`` from hinges at ``+-a x``, hinged about the tangent (``z``) with springs ``k``."""
    s = System()
    s.add("hub", FloatingBase(RigidBody(20.0, np.diag([4.0, 6.0, 4.0]), children=[[a, 0, 0], [-a, 0, 0]]),
                              gravity=[0, 0, 0], twist0=[0, 0, 0, 0, omega, 0]))
    s.add("arm1", RevoluteBody(RigidBody(m, com=[0, -l, 0]), axis=[0, 0, 1], k=k, d=0.3, gravity=[0, 0, 0]))
    s.add("arm2", RevoluteBody(RigidBody(m, com=[0, -l, 0]), axis=[0, 0, 1], k=k, d=0.3, gravity=[0, 0, 0],
                               mount=[0, np.pi, 0]))
    s.link("hub.c1", "arm1.p")
    s.link("hub.c2", "arm2.p")
    return s


def test_a_steady_spin_is_a_relative_equilibrium_with_the_arms_deflected():
    """Centrifugal load against the hinge springs: ``k theta = m W^2 (a + l sin theta) l cos theta``."""
    omega, k, m, a, l = 5.0, 40.0, 0.5, 0.8, 0.6
    s = spinning_hub(omega, k, m, a, l)
    eq = trim(s)
    exact = brentq(lambda th: k * th - m * omega ** 2 * (a + l * np.sin(th)) * l * np.cos(th), 0.0, 1.5)
    for arm in ("arm1", "arm2"):
        assert eq.state[s.state_slice(arm)][0] == pytest.approx(exact, rel=1e-13)
    assert np.array_equal(eq.state[0:6], [0, 0, 0, 0, omega, 0])                # the spin held
    assert len([h for h in eq.held if "turn about" in h]) == 3                  # no gravity: every turn neutral
    model = eq.linearize()
    assert np.abs(model.xdot0).max() < 1e-12                                   # a fixed point of the chart
    assert exact > 0.1


def test_fixed_values_of_states_and_inputs():
    """Pendulum 1 held at 0.1 rad by its actuator, the buoyancy given: the torque found holds
    the chain (the same as the torque the model needs to keep pendulum 1 still)."""
    s = balloon.build(TILTED)
    eq = trim(s, free=["slider.q", "pendulum2.q", "balloon.attitude", "pendulum1.joint.tau"],
              fixed={"pendulum1.q": 0.1, "balloon.ext.w[2]": 156.96})
    assert eq.state[s.state_slice("pendulum1")][0] == 0.1 and eq.inputs["pendulum1.joint.tau"] > 1.0
    assert eq.residual < 1e-10
    with pytest.raises(TitopError, match="both free and fixed"):
        trim(s, free=["pendulum1.q"], fixed={"pendulum1.q": 0.1})
