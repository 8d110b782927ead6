"""Linear models against closed forms and against SDT's linear TITOP model: the pendulum
(g/l, and with a spring g/l + k/(m l^2)), the double pendulum's two modes, the spring-mass
slider, a pendulum tied by a loop-closure spring, the free-free body (six rigid-body
modes) and a body spinning about a principal axis (Euler's equations, and the co-rotating
attitude chart), and a tree with every joint type at its null equilibrium against the
model assembled from the SDT multi-port rigid body (tests/support/sdt_linear.py, sdt_flexible.py)."""

import numpy as np
import pytest

from sdt_flexible import linear_model as sdt_model
from titop_fmu.blocks import FloatingBase, LoopClosure, PrismaticBody, RevoluteBody, RigidBody, WeldedBody
from titop_fmu.linear import linearize
from titop_fmu.system import System

G = 9.81
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def fixed(s, name):
    """``name`` hangs from a fixed point: its parent port reads a motion vector at rest."""
    s.set_input(f"{name}.p.m", np.zeros(18))


def pendulum(m=2.0, l=1.3, k=0.0, d=0.0):
    s = System()
    s.add("arm", RevoluteBody(RigidBody(m, com=[0, -l, 0]), axis=[0, 0, 1], k=k, d=d))
    fixed(s, "arm")
    return s


def frequencies(model):
    """The natural frequencies (|lambda|) of the complex pairs, ascending."""
    lam = model.eigenvalues
    return np.sort(np.abs(lam[lam.imag > 1e-9]))


def test_pendulum_g_over_l_and_with_a_spring():
    m, l, k = 2.0, 1.3, 7.0
    w = frequencies(linearize(pendulum(m, l)))
    assert w == pytest.approx([np.sqrt(G / l)], rel=1e-13)
    w = frequencies(linearize(pendulum(m, l, k=k)))
    assert w == pytest.approx([np.sqrt(G / l + k / (m * l * l))], rel=1e-13)
    model = linearize(pendulum(m, l, k=k, d=0.4), inputs=["arm.joint.tau"], outputs=["arm.joint.q[3]"])
    wn, zeta = np.sqrt(G / l + k / (m * l * l)), 0.4 / (2 * m * l * l * np.sqrt(G / l + k / (m * l * l)))
    mode = model.modes()[0]
    assert (mode.frequency, mode.damping) == pytest.approx((wn, zeta), rel=1e-13)
    assert model.B[:, 0] == pytest.approx([0, 1 / (m * l * l)], rel=1e-14)        # the torque, through J
    assert model.C == pytest.approx(np.array([[1.0, 0.0]])) and model.D == pytest.approx(np.zeros((1, 1)))


def test_an_undamped_mode_has_damping_zero_not_minus_zero():
    """-Re(lambda) of a pole on the imaginary axis is -0.0: the table printed "-0.0000", which
    reads as an unstable mode."""
    model = linearize(pendulum())
    assert [np.copysign(1.0, m.damping) for m in model.modes()] == [1.0]
    assert "-0.0000" not in model.modes_table() and " 0.0000 " in model.modes_table()


def test_double_pendulum_two_modes_in_closed_form():
    m1, m2, l1, l2 = 1.5, 0.7, 1.1, 0.8
    s = System()
    s.add("p1", RevoluteBody(RigidBody(m1, com=[0, -l1, 0], children=[[0, -l1, 0]])))
    s.add("p2", RevoluteBody(RigidBody(m2, com=[0, -l2, 0])))
    fixed(s, "p1")
    s.link("p1.c1", "p2.p")
    M = m1 + m2
    disc = np.sqrt(M * M * (l1 + l2) ** 2 - 4 * M * m1 * l1 * l2)
    exact = np.sqrt(G * (M * (l1 + l2) + np.array([-disc, disc])) / (2 * m1 * l1 * l2))
    assert frequencies(linearize(s)) == pytest.approx(exact, rel=1e-13)


def test_spring_mass_slider():
    m, k, d = 1.7, 30.0, 0.9
    s = System()
    s.add("mass", PrismaticBody(RigidBody(m), axis=[1.0, 0.0, -1.0], k=k, d=d))
    fixed(s, "mass")
    lam = linearize(s).eigenvalues
    exact = -d / (2 * m) + 1j * np.sqrt(k / m - (d / (2 * m)) ** 2)
    assert np.sort_complex(lam) == pytest.approx(np.sort_complex([exact, exact.conjugate()]), rel=1e-13)


def test_loop_closure_spring_on_a_pendulum_tip():
    """The tip tied to its rest point by an isotropic spring: ``w^2 = g/l + k/m`` (the closure
    at rest: its rotation vector's derivative through sqrt(0))."""
    l, m, k = 1.0, 2.0, 30.0
    s = System()
    s.add("arm", RevoluteBody(RigidBody(m, com=[0, -l, 0], children=[[0, -l, 0]])))
    s.add("spring", LoopClosure(np.diag([k, k, k, 0, 0, 0]), np.zeros((6, 6))))
    fixed(s, "arm")
    s.link("arm.c1", "spring.l")
    s.set_input("spring.r.m", np.concatenate([np.zeros(12), [0, -l, 0], np.zeros(3)]))
    assert frequencies(linearize(s)) == pytest.approx([np.sqrt(G / l + k / m)], rel=1e-13)


BODY_I = np.array([[3.0, 0.4, -0.2], [0.4, 5.0, 0.3], [-0.2, 0.3, 4.0]])


def test_free_free_body_has_six_rigid_body_modes():
    """No gravity, at rest: every eigenvalue zero (12 in first-order form: six rigid-body modes,
    each a double zero), A of rank 6 (the kinematics), and the wrench at P accelerates the
    body through the inverse of its dynamic model at P, ``D_P^-1``."""
    m, com = 7.0, np.array([0.2, -0.3, 0.1])
    s = System()
    s.add("b", FloatingBase(RigidBody(m, BODY_I, com=com), gravity=[0, 0, 0], Theta0=[0.3, -0.2, 1.1]))
    model = linearize(s)
    assert np.abs(model.eigenvalues).max() == 0.0 and model.count_zero() == 12
    assert np.linalg.matrix_rank(model.A) == 6
    D = np.zeros((6, 6))
    D[0:3, 0:3] = m * np.eye(3)
    D[3:6, 3:6] = BODY_I
    t = np.eye(6)
    t[0:3, 3:6] = [[0, com[2], -com[1]], [-com[2], 0, com[0]], [com[1], -com[0], 0]]   # tau_BP, BP = -com
    B_body = np.linalg.inv(t.T @ D @ t)
    P = model.x0[9:13]
    w, x, y, z = P
    Pbi = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    R6 = np.kron(np.eye(2), Pbi.T)                           # ext.w is given in R_i
    assert model.B[0:6] == pytest.approx(B_body @ R6, abs=1e-12)


@pytest.mark.parametrize("axis, stable", [(2, True), (0, True), (1, False)])
def test_a_body_spinning_about_a_principal_axis(axis, stable):
    """Euler's equations about a steady spin ``W`` about principal axis ``k``: the rates
    oscillate at ``W sqrt((Ik - Ii)(Ik - Ij) / (Ii Ij))`` (diverge about the middle axis); the
    velocity, and the position and attitude (seen from the reference turning with the spin),
    turn at ``W``."""
    I = np.array([3.0, 5.0, 8.0])
    W = 2.0
    twist = np.zeros(6)
    twist[3 + axis] = W
    s = System()
    s.add("b", FloatingBase(RigidBody(4.0, np.diag(I)), gravity=[0, 0, 0], twist0=twist))
    model = linearize(s)
    assert np.abs(model.xdot0).max() == 0.0                 # a relative equilibrium: a fixed point
    i, j = [a for a in range(3) if a != axis]
    nu = W * np.sqrt(complex((I[axis] - I[i]) * (I[axis] - I[j]) / (I[i] * I[j])))
    exact = [0] * 4 + [1j * nu, -1j * nu] + [1j * W, -1j * W] * 3
    # the characteristic polynomials (its coefficients, unlike the eigenvalues of a repeated
    # pair, are not sensitive to rounding)
    assert np.real(np.poly(model.A)) == pytest.approx(np.real(np.poly(exact)), rel=1e-12, abs=1e-12)
    assert (nu.imag == 0) == stable


def chain_bodies(rng):
    """A tree for both models: a base, a welded boom with two children, revolute and prismatic
    bodies on oblique axes with mount angles, full inertias, offset centres of mass, springs
    and dampers. ``(names, data)``."""
    def inertia():
        A = rng.standard_normal((3, 3))
        return A @ A.T + np.eye(3)

    names, data = ["base"], [dict(mass=12.0, inertia=inertia(), com=rng.standard_normal(3) * 0.2,
                                  children=[rng.standard_normal(3) for _ in range(2)])]
    spec = [("boom", "welded", 0, 0, 2), ("hinge", "revolute", 1, 0, 1), ("rail", "prismatic", 1, 1, 1),
            ("tip", "revolute", 2, 0, 0), ("flap", "revolute", 0, 1, 0), ("end", "prismatic", 3, 0, 0)]
    for name, joint, parent, port, n_children in spec:
        names.append(name)
        data.append(dict(mass=0.5 + rng.random(), inertia=inertia() * 0.2, com=rng.standard_normal(3) * 0.5,
                         children=[rng.standard_normal(3) for _ in range(n_children)], parent=parent, port=port,
                         joint=joint, axis=rng.standard_normal(3), mount=rng.uniform(-1, 1, 3),
                         k=rng.uniform(1, 20), d=rng.uniform(0, 1)))
    return names, data


def titop_system(names, data):
    s = System()
    zero_g = [0.0, 0.0, 0.0]
    for name, b in zip(names, data):
        body = RigidBody(b["mass"], b["inertia"], b["com"], b["children"])
        if name == "base":
            block = FloatingBase(body, gravity=zero_g)
        elif b["joint"] == "welded":
            block = WeldedBody(body, gravity=zero_g, mount=b["mount"])
        else:
            cls = RevoluteBody if b["joint"] == "revolute" else PrismaticBody
            block = cls(body, axis=b["axis"], k=b["k"], d=b["d"], gravity=zero_g, mount=b["mount"])
        s.add(name, block)
    for name, b in zip(names, data):
        for i in range(len(b["children"])):
            child = next((n for n, c in zip(names, data) if c.get("parent") == names.index(name) and c["port"] == i),
                         None)
            if child is None:
                s.set_input(f"{name}.c{i + 1}.w", np.zeros(6))
            else:
                s.link(f"{name}.c{i + 1}", f"{child}.p")
    return s


@pytest.mark.parametrize("seed", range(3))
def test_a_tree_at_its_null_equilibrium_is_sdts_linear_titop_model(seed):
    """A and B entry by entry (the same state basis at the null equilibrium): the non-linear
    blocks linearized exactly against the linear TITOP model of the same tree assembled from
    SDT's multi-port rigid body and linear joints."""
    names, data = chain_bodies(np.random.default_rng(seed))
    s = titop_system(names, data)
    joints = [n for n, b in zip(names, data) if n != "base" and b["joint"] != "welded"]
    model = linearize(s, inputs=["base.ext.w"] + [f"{j}.joint.tau" for j in joints])
    A, B = sdt_model(data)
    sdt_states = model.states[:12] + [f"{j}.{x}" for j in joints for x in ("q", "qd")]
    order = [sdt_states.index(n) for n in model.states]
    A, B = A[np.ix_(order, order)], B[order]
    assert np.abs(model.A - A).max() <= 1e-12 * np.abs(A).max()
    assert np.abs(model.B - B).max() <= 1e-12 * np.abs(B).max()
    assert np.abs(A[12:, 12:]).max() > 1.0                    # the joints are coupled, springs and dampers
