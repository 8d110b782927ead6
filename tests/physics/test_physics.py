"""In-process systems against analytic solutions and conservation laws."""

import numpy as np
import pytest

from titop_fmu import invariants
from titop_fmu.blocks import (FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody,
                              RevoluteBody, RigidBody, WeldedBody)
from titop_fmu.errors import ConnectionError_
from titop_fmu.system import System

BALLOON_I = [[5.0, 0.0, 0.0], [0.0, 10.0, -7.0], [0.0, -7.0, 10.0]]
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def fixed_base(children):
    return ImposedMotionBase(RigidBody(1.0, np.eye(3), children=children))


def test_free_rigid_body_conserves_energy_and_angular_momentum():
    """Balloon inertia, reference point away from the centre of mass, spinning about a
    non-principal axis, no gravity: energy and inertial angular momentum are constant."""
    s = System()
    s.add("b", FloatingBase(RigidBody(10.0, BALLOON_I, com=[0.3, -0.5, 0.2]), gravity=[0, 0, 0],
                            twist0=[0.2, -0.1, 0.3, 1.0, 2.0, 0.5], Theta0=[0.1, 0.2, 0.3]))
    tr = s.simulate(20.0, 0.5, rtol=1e-12, atol=1e-12)
    E = np.array([invariants.energy(s, y) for y in tr.y])
    H = np.array([invariants.momenta(s, y)[1] for y in tr.y])
    w = tr.states("b")[:, 3:6]
    assert np.ptp(w, axis=0).max() > 1.0                      # it really tumbles
    assert np.max(np.abs(E - E[0])) / abs(E[0]) <= 1e-9
    assert np.max(np.linalg.norm(H - H[0], axis=1)) / np.linalg.norm(H[0]) <= 1e-9


def pendulum(theta0, l=1.3, m=2.0, k=0.0, d=0.0):
    s = System()
    s.add("ground", fixed_base([[0, 0, 0]]))
    s.add("arm", RevoluteBody(RigidBody(m, com=[0, -l, 0]), axis=[0, 0, 1], q0=theta0, k=k, d=d))
    s.link("ground.c1", "arm.p")
    return s


def test_pendulum_energy_and_small_angle_period():
    l, g = 1.3, 9.81
    s = pendulum(0.9, l)
    tr = s.simulate(10.0, 0.05, rtol=1e-12, atol=1e-12)
    E = np.array([invariants.energy(s, y) for y in tr.y])
    assert np.max(np.abs(E - E[0])) <= 1e-10 * abs(E[0]) + 1e-12
    # small angle: theta(t) = theta0 cos(sqrt(g/l) t) up to O(theta0^3)
    theta0 = 1e-4
    s = pendulum(theta0, l)
    tr = s.simulate(5.0, 0.01, rtol=1e-12, atol=1e-16)
    exact = theta0 * np.cos(np.sqrt(g / l) * tr.t)
    assert np.max(np.abs(tr.states("arm")[:, 0] - exact)) <= 1e-9


def test_fixed_base_reaction_supports_the_weight():
    s = pendulum(0.0, m=2.0)
    out = s.outputs(s.initial_state())
    assert np.allclose(out["ground"]["p.w"], [0, 9.81 * (1.0 + 2.0), 0, 0, 0, 0], atol=1e-12)


def test_prismatic_spring_mass_is_harmonic():
    """Slider along x, gravity along -y: x(t) = x0 cos(sqrt(k/m) t) exactly."""
    s = System()
    s.add("ground", fixed_base([[0, 0, 0]]))
    s.add("mass", PrismaticBody(RigidBody(1.5, com=[0, 0.2, 0]), axis=[2, 0, 0], q0=0.1, k=40.0))
    s.link("ground.c1", "mass.p")
    tr = s.simulate(3.0, 0.01, rtol=1e-12, atol=1e-14)
    assert np.max(np.abs(tr.states("mass")[:, 0] - 0.1 * np.cos(np.sqrt(40 / 1.5) * tr.t))) <= 1e-10


def test_welded_appendage_equals_one_composite_body():
    """Base + welded appendage (mounted with a rotation) = one rigid body with the
    composite mass properties: same accelerations under the same wrench."""
    mB, IB = 3.0, np.diag([1.0, 2.0, 2.5])
    mA, IA_a, PC = 2.0, np.diag([0.3, 0.5, 0.6]), np.array([0.5, -0.2, 0.4])
    comA_a = np.array([0.1, 0.3, -0.2])
    mount = np.array([0.3, -0.6, 1.1])
    from titop_fmu.spatial import dcm_from_euler
    P_ab = dcm_from_euler(mount)
    twist0 = [0.1, -0.3, 0.2, 0.7, -0.4, 0.9]
    s = System()
    s.add("base", FloatingBase(RigidBody(mB, IB, children=[PC]), twist0=twist0))
    s.add("app", WeldedBody(RigidBody(mA, IA_a, com=comA_a), mount=mount))
    s.link("base.c1", "app.p")
    W = np.array([1.0, 2.0, -3.0, 0.4, -0.5, 0.6])
    s.set_input("base.ext.w", W)
    # composite: centre of mass and inertia about it, in R_b
    rA = PC + P_ab @ comA_a
    m = mB + mA
    c = mA * rA / m
    par = lambda mm, r: mm * (r @ r * np.eye(3) - np.outer(r, r))
    I = IB + par(mB, -c) + P_ab @ IA_a @ P_ab.T + par(mA, rA - c)
    one = System()
    one.add("body", FloatingBase(RigidBody(m, I, com=c), twist0=twist0))
    one.set_input("body.ext.w", W)
    a1 = s.rhs(0, s.initial_state())[0:6]
    a2 = one.rhs(0, one.initial_state())[0:6]
    assert np.allclose(a1, a2, atol=1e-12)


def test_loop_closure_spring_on_a_pendulum_tip():
    """Pendulum tip tied to its rest point by an isotropic spring k: energy is conserved
    and small oscillations have omega^2 = g/l + k/m."""
    l, m, k, g = 1.0, 2.0, 30.0, 9.81
    s = System()
    s.add("ground", fixed_base([[0, 0, 0], [0, -l, 0]]))
    s.add("arm", RevoluteBody(RigidBody(m, com=[0, -l, 0], children=[[0, -l, 0]]), q0=1e-4))
    s.add("spring", LoopClosure(np.diag([k, k, k, 0, 0, 0]), np.zeros((6, 6))))
    s.link("ground.c1", "arm.p")
    s.link("arm.c1", "spring.l")
    s.link("ground.c2", "spring.r")
    tr = s.simulate(4.0, 0.01, rtol=1e-12, atol=1e-16)
    theta = tr.states("arm")[:, 0]
    assert np.max(np.abs(theta - 1e-4 * np.cos(np.sqrt(g / l + k / m) * tr.t))) <= 2e-10
    s2 = System()
    for n, b in s.blocks.items():
        s2.add(n, b if n != "arm" else RevoluteBody(RigidBody(m, com=[0, -l, 0], children=[[0, -l, 0]]), q0=1.0))
    for link in s.links:
        s2.link(f"{link.parent}.{link.child_port}", f"{link.child}.{link.parent_port}")
    tr = s2.simulate(4.0, 0.05, rtol=1e-12, atol=1e-12)
    E = np.array([invariants.energy(s2, y) for y in tr.y])
    assert np.max(np.abs(E - E[0])) <= 1e-9 * np.max(np.abs(E))


def test_floating_closed_chain_keeps_momentum():
    """A floating body with two pendulums whose tips are tied by a damped spring:
    no external force, so the momentum is constant, the centre of mass moves in a
    straight line at p/M, and the angular momentum about the origin is conserved."""
    s = System()
    s.add("base", FloatingBase(RigidBody(5.0, np.diag([1.0, 2.0, 3.0]), children=[[0.5, 0, 0], [-0.5, 0, 0]]),
                               gravity=[0, 0, 0], twist0=[0, 0, 0, 0.3, -0.2, 0.5]))
    s.add("a", RevoluteBody(RigidBody(1.0, com=[0, -1, 0], children=[[0, -1, 0]]), axis=[0, 0, 1], q0=0.3,
                            gravity=[0, 0, 0]))
    s.add("b", RevoluteBody(RigidBody(1.5, com=[0, -1, 0], children=[[0, -1, 0]]), axis=[1, 0, 1], q0=-0.2,
                            gravity=[0, 0, 0]))
    s.add("tie", LoopClosure(np.diag([50.0] * 3 + [0.0] * 3), np.diag([0.5] * 3 + [0.0] * 3)))
    s.link("base.c1", "a.p")
    s.link("base.c2", "b.p")
    s.link("a.c1", "tie.l")
    s.link("b.c1", "tie.r")
    tr = s.simulate(5.0, 0.1, rtol=1e-12, atol=1e-12)
    com = np.array([invariants.center_of_mass(s, y) for y in tr.y])
    p, H = map(np.array, zip(*(invariants.momenta(s, y) for y in tr.y)))
    assert np.linalg.norm(p[0]) > 0.1                         # the spin gives the system momentum
    assert np.max(np.abs(p - p[0])) <= 1e-10
    assert np.max(np.abs(com - (com[0] + np.outer(tr.t, p[0]) / 7.5))) <= 1e-9
    assert np.max(np.abs(H - H[0])) <= 1e-9 * np.linalg.norm(H[0])


# --- wiring errors ----------------------------------------------------------------

def test_wiring_errors_are_clear():
    s = System()
    s.add("ground", fixed_base([[0, 0, 0]]))
    s.add("arm", RevoluteBody(RigidBody(1.0, com=[0, -1, 0], children=[[0, -1, 0]])))
    with pytest.raises(ConnectionError_, match="no child port 'c3'"):
        s.link("ground.c3", "arm.p")
    with pytest.raises(ConnectionError_, match="unknown block 'nope'"):
        s.link("ground.c1", "nope.p")
    with pytest.raises(ConnectionError_, match="already used"):
        s.add("arm", RevoluteBody(RigidBody(1.0, com=[0, -1, 0])))
    s.link("ground.c1", "arm.p")
    with pytest.raises(ConnectionError_, match="already connected"):
        s.link("ground.c1", "arm")
    with pytest.raises(ConnectionError_, match=r"dangling port\(s\): arm.c1"):
        s.initial_state()
    s.set_input("arm.c1.w", np.zeros(6))            # a free end, said explicitly
    assert s.initial_state().shape == (15,)
    with pytest.raises(ConnectionError_, match="takes 6 values"):
        s.set_input("arm.c1.w", [0, 0])
    with pytest.raises(ConnectionError_, match="no input"):
        s.set_input("arm.joint.torque", 1.0)


def test_motion_cycle_is_rejected():
    s = System()
    body = RigidBody(1.0, com=[0, -1, 0], children=[[0, -1, 0]])
    s.add("a", RevoluteBody(body))
    s.add("b", RevoluteBody(body))
    s.link("a.c1", "b.p")
    s.link("b.c1", "a.p")
    with pytest.raises(ConnectionError_, match="cycle"):
        s.initial_state()
