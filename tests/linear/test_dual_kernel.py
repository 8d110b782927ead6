"""The forward-mode kernel (kernel_dual.cpp: kernel.c on dual numbers): its values are the
kernel's, bit for bit, and its tangents the derivatives of the kernel's values (central
differences as the oracle), on random trees of every block type with loop closures, near
gimbal lock and at a loop closure at rest (the square root of an exact zero)."""

import numpy as np
import pytest

from titop_fmu import dual
from titop_fmu.blocks import ImposedMotionBase, LoopClosure, RevoluteBody, RigidBody
from titop_fmu.kernel import _Tree, plan_entries
from titop_fmu.scenarios import balloon
from titop_fmu.system import System
from tests.physics.test_loop_solve import random_state, random_system

pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def n_outputs(s):
    return sum(sum(b.outputs_spec.values()) for b in s.blocks.values())


def trees(s):
    """The kernel's tree of ``s`` on doubles and on duals."""
    entries = plan_entries(s.plan())
    return _Tree(entries, n_outputs(s)), dual.DualTree(plan_entries(s.plan()), n_outputs(s))


def central(f, x, d, h=1e-5):
    """The derivative of ``f`` at ``x`` along ``d`` by fourth-order central differences."""
    return (8 * (f(x + h * d) - f(x - h * d)) - (f(x + 2 * h * d) - f(x - 2 * h * d))) / (12 * h)


@pytest.mark.parametrize("seed", range(6))
def test_values_are_the_kernels_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    s = random_system(rng, int(rng.integers(5, 15)), "recursive")
    real, duals = trees(s)
    for _ in range(3):
        y = random_state(rng, s)
        ydot, dydot, out, dout, code = duals.evaluate(y, rng.standard_normal((len(y), 11)))
        assert code == 0
        assert np.array_equal(ydot, real.derivatives(y)[0])
        assert np.array_equal(out, real.outputs(y)[0])


def check_tangents(s, y, rng, k=10, rtol=1e-6):
    """Tangents along ``k`` random directions of the states and of every constant input
    equal to central differences of the kernel on doubles."""
    real, duals = trees(s)
    Y = rng.standard_normal((len(y), k))
    U = {i: rng.standard_normal((len(v), k)) for i, v in enumerate(duals.keep)}
    _, dydot, _, dout, code = duals.evaluate(y, Y, U)
    assert code == 0
    saved = [v.copy() for v in real._keep]

    def f(x, j):                                # the kernel at y + x Y_j, inputs + x U_j
        for v, v0, i in zip(real._keep, saved, range(len(saved))):
            v[:] = v0 + x * U[i][:, j]
        return np.concatenate([real.derivatives(y + x * Y[:, j])[0], real.outputs(y + x * Y[:, j])[0]])

    try:
        for j in range(k):
            fd = central(lambda x: f(x, j), 0.0, 1.0)
            ad = np.concatenate([dydot[:, j], dout[:, j]])
            assert np.max(np.abs(ad - fd)) <= rtol * max(1.0, np.max(np.abs(fd))), j
    finally:
        for v, v0 in zip(real._keep, saved):
            v[:] = v0


@pytest.mark.parametrize("seed", range(6))
def test_tangents_are_the_derivatives_of_the_values(seed):
    rng = np.random.default_rng(seed)
    s = random_system(rng, int(rng.integers(5, 15)), "recursive")
    y = random_state(rng, s)
    y *= 0.3                                    # moderate rates: central differences at 1e-6 stay accurate
    for name, b in s.blocks.items():
        if b.n_states == 13:
            q = y[s.state_slice(name)][9:13]
            y[s.state_slice(name)][9:13] = q / np.linalg.norm(q)
    check_tangents(s, y, rng)


def test_tangents_near_gimbal_lock():
    """The balloon's base within 1e-3 rad of theta = 90 deg: the Euler angles of every
    motion vector turn a thousand times faster than the attitude, and their derivatives are
    still the kernel's (closer, the differences of the oracle lose their accuracy)."""
    s = balloon.build({"theta1_0": 0.3, "theta2_0": -0.2})
    y = s.initial_state()
    half = 0.5 * (np.pi / 2 - 1e-3)
    y[9:13] = [np.cos(half), 0.0, np.sin(half), 0.0]                    # pitch 90 deg - 1e-3 rad
    y[0:6] = [0.1, -0.2, 0.05, 0.3, 0.1, -0.2]
    check_tangents(s, y, np.random.default_rng(3), rtol=1e-5)


def test_a_loop_closure_at_rest_has_finite_exact_tangents():
    """A pendulum tip tied to its rest point: at rest the closure's relative rotation is
    exactly zero, ``sqrt(a . a)`` at ``a = 0``; its tangents are finite and the kernel's."""
    s = System()
    s.add("ground", ImposedMotionBase(RigidBody(1.0, np.eye(3), children=[[0, 0, 0], [0, -1, 0]])))
    s.add("arm", RevoluteBody(RigidBody(2.0, com=[0, -1, 0], children=[[0, -1, 0]])))
    s.add("spring", LoopClosure(np.diag([30.0, 30, 30, 5, 5, 5]), np.diag([1.0] * 6)))
    s.link("ground.c1", "arm.p")
    s.link("arm.c1", "spring.l")
    s.link("ground.c2", "spring.r")
    y = s.initial_state()
    _, duals = trees(s)
    _, dydot, _, dout, _ = duals.evaluate(y, np.eye(len(y)))
    assert np.all(np.isfinite(dydot)) and np.all(np.isfinite(dout))
    assert dydot[s.state_slice("arm").start + 1, s.state_slice("arm").start] != 0.0     # the spring acts
    check_tangents(s, y, np.random.default_rng(4))
