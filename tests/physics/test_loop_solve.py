"""The O(N) recursive loop solve of the monolithic engine against the dense solve (the
oracle: one linear system over all the links' unknowns) on random trees with every
block type, at random states and inputs."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from marks import slow
from titop_fmu.scenarios import generate
from titop_fmu.blocks import (Block, FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody,
                              RevoluteBody, RigidBody, WeldedBody)
from titop_fmu.errors import ConnectionError_, SolverError
from titop_fmu.system import System

pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")

JOINTS = ("welded", "revolute", "prismatic", "revolute-inverse", "prismatic-inverse")


def rand_inertia(rng):
    """Inertia of a random cloud of point masses: always physically realisable."""
    pts, ms = rng.standard_normal((5, 3)), 0.2 + rng.random(5)
    return sum(m * (p @ p * np.eye(3) - np.outer(p, p)) for m, p in zip(ms, pts))


def rand_body(rng, n_children):
    return RigidBody(0.5 + rng.random(), rand_inertia(rng), com=rng.standard_normal(3),
                     children=[rng.standard_normal(3) for _ in range(n_children)])


def rand_psd(rng):
    A = rng.standard_normal((6, 6))
    return A @ A.T


def rand_block(rng, kind, body, gravity, ext_frame, twist0):
    """A block of ``kind`` (``"floating"``, ``"imposed"``, ``"welded"``, ``"revolute"``,
    ``"prismatic"``, a joint with ``"-inverse"``): oblique axis, mounting angles, spring and
    damper drawn from ``rng``."""
    if kind == "floating":
        return FloatingBase(body, ext_frame=ext_frame, gravity=gravity, twist0=twist0)
    if kind == "imposed":
        return ImposedMotionBase(body, gravity=gravity, twist0=twist0)
    if kind == "welded":
        return WeldedBody(body, gravity=gravity, mount=rng.standard_normal(3))
    joint, _, mode = kind.partition("-")
    cls = RevoluteBody if joint == "revolute" else PrismaticBody
    return cls(body, axis=rng.standard_normal(3), gravity=gravity, mount=rng.standard_normal(3),
               k=rng.random(), d=rng.random(), mode=mode or "forward")


def random_system(rng, n_bodies, solver):
    """Roots: a floating base (inputs in R_i or R_b) and an imposed-motion base; bodies of
    every joint type (forward and inverse) hung from random earlier blocks, some with
    several children, some child ports left free with a given wrench; loop closures
    between random blocks, and one tied to a given motion."""
    gravity = rng.standard_normal(3)
    s = System(solver=solver)
    kinds = ["floating", "imposed"] + [JOINTS[rng.integers(len(JOINTS))] for _ in range(n_bodies)]
    kinds[2:2 + len(JOINTS)] = JOINTS                               # every joint type at least once
    parent = [None, None] + [int(rng.integers(0, i)) for i in range(2, len(kinds))]
    n_closures = 3
    ends = [int(rng.integers(0, len(kinds))) for _ in range(2 * n_closures - 1)]
    n_free = rng.integers(0, 2, len(kinds))                          # free child ports (given wrench)
    n_ports = [sum(p == i for p in parent) + ends.count(i) + n_free[i] for i in range(len(kinds))]
    names = [f"{k.split('-')[0]}{i}" for i, k in enumerate(kinds)]
    for i, (kind, name) in enumerate(zip(kinds, names)):
        body = rand_body(rng, n_ports[i])
        twist0 = rng.standard_normal(6)
        block = rand_block(rng, kind, body, gravity, ("inertial", "body")[i % 2], twist0)
        s.add(name, block)
        for e, size in block.extra_inputs.items():
            s.set_input(f"{name}.{e}", rng.standard_normal(size))
    free = {i: [f"{names[i]}.c{k + 1}" for k in range(n_ports[i])] for i in range(len(kinds))}
    for i in range(2, len(kinds)):
        s.link(free[parent[i]].pop(), f"{names[i]}.p")
    for c in range(n_closures):
        s.add(f"closure{c}", LoopClosure(rand_psd(rng), rand_psd(rng)))
        s.link(free[ends[2 * c]].pop(), f"closure{c}.l")
        if c < n_closures - 1:
            s.link(free[ends[2 * c + 1]].pop(), f"closure{c}.r")
        else:                                                          # tied to a given motion
            m = rng.standard_normal(18)
            s.set_input(f"closure{c}.r.m", m)
    for ports in free.values():
        for port in ports:
            s.set_input(f"{port}.w", rng.standard_normal(6))
    return s


def random_state(rng, s):
    y = rng.standard_normal(len(s.initial_state()))
    for name, b in s.blocks.items():
        if b.n_states == 13:                                            # a base: unit quaternion
            q = y[s.state_slice(name)][9:13]
            y[s.state_slice(name)][9:13] = q / np.linalg.norm(q)
    return y


def assert_same_solution(a, b, rtol=1e-12):
    """Every solved output of every block (accelerations, wrenches, joint accelerations
    and efforts) equal to ``rtol`` relative to the largest of its kind."""
    for kind in (".a", ".w", "joint."):
        ref = [v for n in b for k, v in b[n].items() if kind in k]
        scale = max(np.max(np.abs(v)) for v in ref)
        for n in b:
            for k in b[n]:
                if kind in k:
                    err = np.max(np.abs(a[n][k] - b[n][k]))
                    assert err <= rtol * scale, f"{n}.{k}: {err:.2e} > {rtol:g} * {scale:.2e}"


@pytest.mark.parametrize("seed", [0, 1, 2, *slow(*range(3, 12))])
def test_recursive_solve_equals_the_dense_solve_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    n_bodies = int(rng.integers(5, 20))
    s = random_system(np.random.default_rng(seed), n_bodies, "recursive")
    dense = random_system(np.random.default_rng(seed), n_bodies, "dense")
    assert {type(b) for b in s.blocks.values()} == {FloatingBase, ImposedMotionBase, WeldedBody,
                                                    RevoluteBody, PrismaticBody, LoopClosure}
    assert max(len(b.child_ports) for b in s.blocks.values()) >= 3
    for _ in range(3):
        y = random_state(rng, s)
        (_, a), (_, b) = s.evaluate(y), dense.evaluate(y)
        assert_same_solution(a, b)
        ydot, ref = s.rhs(0.0, y), dense.rhs(0.0, y)
        assert np.max(np.abs(ydot - ref)) <= 1e-12 * np.max(np.abs(ref))


def star(rng, base, n_children, solver="recursive"):
    """A base (``"floating"`` or ``"imposed"``) with ``n_children`` bodies of every joint kind
    on its ports, one loop closure from one of its ports to a child's, one between two
    children, a port left free with a given wrench."""
    gravity = rng.standard_normal(3)
    s = System(solver=solver)
    s.add("base", rand_block(rng, base, rand_body(rng, n_children + 2), gravity, "body", rng.standard_normal(6)))
    for e, size in s.blocks["base"].extra_inputs.items():
        s.set_input(f"base.{e}", rng.standard_normal(size))
    for i in range(n_children):
        kind = JOINTS[i % len(JOINTS)]
        s.add(f"b{i}", rand_block(rng, kind, rand_body(rng, 1), gravity, None, None))
        s.link(f"base.c{i + 1}", f"b{i}.p")
        for e, size in s.blocks[f"b{i}"].extra_inputs.items():
            s.set_input(f"b{i}.{e}", rng.standard_normal(size))
    s.add("closure0", LoopClosure(rand_psd(rng), rand_psd(rng)))
    s.link(f"base.c{n_children + 1}", "closure0.l")
    s.link("b3.c1", "closure0.r")
    s.add("closure1", LoopClosure(rand_psd(rng), rand_psd(rng)))
    s.link("b5.c1", "closure1.l")
    s.link("b8.c1", "closure1.r")
    s.set_input(f"base.c{n_children + 2}.w", rng.standard_normal(6))
    for i in range(n_children):
        if i not in (3, 5, 8):
            s.set_input(f"b{i}.c1.w", rng.standard_normal(6))
    return s


@pytest.mark.parametrize("base", ["floating", "imposed"])
def test_a_block_with_many_children_condensed_as_one_equals_the_dense_solve(base):
    """A body reads its children's wrenches only as their sum at its point (eq. (13)): the
    recursive solve condenses its 40 children as one wrench at one port (a 6 x 6 solve, not
    a 240 x 240 one), in NumPy and in the kernel, two loop closures among them."""
    s, dense = (star(np.random.default_rng(7), base, 40, solver) for solver in ("recursive", "dense"))
    node = next(n for n in s.plan().loop.nodes if n.name == "base")
    assert len(node.down) == 41 and node.identity.shape == (6, 6)
    rng = np.random.default_rng(1)
    f = s.compiled_rhs()
    for _ in range(3):
        y = random_state(rng, s)
        (_, a), (_, b) = s.evaluate(y), dense.evaluate(y)
        assert_same_solution(a, b)
        assert_rhs_equal(f(0.0, y), s.rhs(0.0, y))


@pytest.mark.parametrize("seed", range(6))
def test_children_condensed_one_by_one_or_as_one_give_the_same_solution(seed, monkeypatch):
    """A block that does not declare ``children_through_sum`` (a block of one's own) has its
    linked children condensed one by one (6 unknowns each); the TITOP bodies' shortcut gives
    the same solution."""
    rng = np.random.default_rng(seed)
    n_bodies = int(rng.integers(5, 20))
    one = random_system(np.random.default_rng(seed), n_bodies, "recursive")
    one.plan()                                                      # its nodes made before the patch
    for cls in (FloatingBase, ImposedMotionBase, WeldedBody, RevoluteBody, PrismaticBody):
        monkeypatch.setattr(cls, "children_through_sum", False)
    each = random_system(np.random.default_rng(seed), n_bodies, "recursive")
    assert max(len(n.identity) for n in each.plan().loop.nodes) >= 12 > max(len(n.identity) for n in one.plan().loop.nodes)
    for _ in range(3):
        y = random_state(rng, one)
        (_, a), (_, b) = one.evaluate(y), each.evaluate(y)
        assert_same_solution(a, b)


@pytest.mark.parametrize("n, branching", [(64, 1), (63, 2), (40, 4)])
def test_recursive_solve_equals_the_dense_solve_on_long_chains_and_trees(n, branching):
    s, dense = generate.tree(n, branching), generate.tree(n, branching, solver="dense")
    y = random_state(np.random.default_rng(n), s)
    (_, a), (_, b) = s.evaluate(y), dense.evaluate(y)
    assert_same_solution(a, b)


class _Averager(Block):
    """Two parent ports, and the mean of their accelerations at a child port: a block
    that feeds accelerations through between parents, i.e. not a loop closure."""

    parent_ports = ("l", "r")
    child_ports = ("c1",)

    def kinematics(self, x, m_parents, outputs=True):
        return SimpleNamespace(m_out={"c1.m": 0.5 * (m_parents["l"] + m_parents["r"])})

    def accelerations(self, kin, u):
        return {"l.w": 0.5 * u["c1.w"] + u["l.a"] - u["r.a"], "r.w": 0.5 * u["c1.w"],
                "c1.a": 0.5 * (u["l.a"] + u["r.a"])}


def averaged_pendulums(solver, link_child):
    s = System(solver=solver)
    s.add("ground", ImposedMotionBase(RigidBody(1.0, np.eye(3), children=[[0, 0, 0], [1, 0, 0]])))
    s.add("a", RevoluteBody(RigidBody(1.0, com=[0, -1, 0], children=[[0, -1, 0]])))
    s.add("b", RevoluteBody(RigidBody(1.0, com=[0, -1, 0], children=[[0, -1, 0]]), q0=0.4))
    s.add("mean", _Averager())
    s.link("ground.c1", "a.p")
    s.link("ground.c2", "b.p")
    s.link("a.c1", "mean.l")
    s.link("b.c1", "mean.r")
    if link_child:
        s.add("tip", RevoluteBody(RigidBody(1.0, com=[0, -1, 0])))
        s.link("mean.c1", "tip.p")
    else:
        s.set_input("mean.c1.w", [1.0, 0, 0, 0, 0, 0])
    return s


def test_a_block_with_several_parents_that_is_not_a_loop_closure_needs_the_dense_solve():
    for link_child in (False, True):
        dense = averaged_pendulums("dense", link_child)
        assert np.all(np.isfinite(dense.rhs(0.0, dense.initial_state())))
    s = averaged_pendulums("recursive", False)
    with pytest.raises(SolverError, match="feeds accelerations through.*solver='dense'"):
        s.rhs(0.0, s.initial_state())
    s = averaged_pendulums("recursive", True)
    with pytest.raises(ConnectionError_, match="do not form a tree.*solver='dense'"):
        s.initial_state()


class _Slip(Block):
    """``c1.a = p.a - c1.w``, ``p.w = c1.w``: with a child that returns ``-a`` the loop
    ``w = -(a_p - w)`` has no solution."""

    parent_ports = ("p",)
    child_ports = ("c1",)

    def kinematics(self, x, m_parents, outputs=True):
        return SimpleNamespace(m_out={"c1.m": m_parents["p"]})

    def accelerations(self, kin, u):
        return {"p.w": u["c1.w"], "c1.a": u["p.a"] - u["c1.w"]}


class _Reaction(Block):
    """``p.w = -p.a``."""

    parent_ports = ("p",)

    def kinematics(self, x, m_parents, outputs=True):
        return SimpleNamespace(m_out={})

    def accelerations(self, kin, u):
        return {"p.w": -u["p.a"]}


@pytest.mark.parametrize("solver", System.SOLVERS)
def test_singular_loop_is_a_solver_error(solver):
    s = System(solver=solver)
    s.add("slip", _Slip())
    s.add("reaction", _Reaction())
    s.link("slip.c1", "reaction.p")
    s.set_input("slip.p.m", np.ones(18))
    with pytest.raises(SolverError, match="algebraic loop is singular"):
        s.evaluate(s.initial_state())


def test_unknown_solver_is_an_error():
    with pytest.raises(ValueError, match="solver must be one of"):
        System(solver="sparse")


def test_simulate_runs_blas_on_one_thread():
    """Small matrices: a multithreaded BLAS costs more than it gives (and far more under
    CPU contention), so System.simulate limits it to one thread around the integration."""
    from threadpoolctl import threadpool_info, threadpool_limits
    s = generate.chain(2)
    seen = []

    def rhs(t, y, _rhs=s.rhs):
        seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
        return _rhs(t, y)

    s.rhs = rhs
    with threadpool_limits(limits=2, user_api="blas"):
        if max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas") < 2:
            pytest.skip("BLAS has one thread here anyway: nothing to limit")
        s.simulate(0.01, 0.01, kernel="numpy")
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("solver", ["recursive", "dense"])
def test_a_constant_input_changed_after_the_plan_is_compiled(solver):
    """Changing a constant input keeps the compiled plan (an assembly FMU changes them at every
    input) and gives what a system built with the new value gives; the caller's array is not
    held."""
    def built(ext, tau, sol=solver):
        s = generate.tree(5, 2, solver=sol)
        s.set_input("base.ext.w", ext)
        s.set_input("b2.joint.tau", tau)
        return s
    ext = np.array([1.0, 60.0, -2.0, 0.3, 0.1, -0.2])
    s = built(ext, [0.5])
    y = s.initial_state() + 0.05
    s.rhs(0.0, y)
    plan = s.plan()
    ext2 = ext + [3.0, -1.0, 0.5, 0.2, -0.4, 0.1]
    s.set_input("base.ext.w", ext2)
    s.set_input("b2.joint.tau", [-1.5])
    given = ext2.copy()
    ext2 += 100.0                                       # the caller's array changes afterwards
    assert s.plan() is plan
    fresh = built(given, [-1.5])
    assert np.array_equal(s.rhs(0.0, y), fresh.rhs(0.0, y))


# -- the C kernel of the right-hand side (titop_fmu.kernel) ------------------------------------

def random_kernel_tree(rng, n_bodies):
    """What the C kernel covers, every case of it: a floating base (inputs in R_i or R_b), an
    imposed-motion base and a revolute root given a constant motion vector; welded, revolute
    and prismatic bodies, forward and inverse (oblique axes, mounting angles, springs and
    dampers, efforts or accelerations) hung from random earlier blocks, some with several
    children, some child ports left free with a given wrench."""
    gravity = rng.standard_normal(3)
    s = System()
    joints = ("welded", "revolute", "prismatic", "revolute-inverse", "prismatic-inverse")
    kinds = ["floating", "revolute", "imposed"] + [joints[rng.integers(len(joints))] for _ in range(n_bodies)]
    kinds[3:8] = joints
    parent = [None, None, None] + [int(rng.integers(0, i)) for i in range(3, len(kinds))]
    parent[3:6] = [0, 0, 0]                                         # the base has at least three children
    n_free = rng.integers(0, 2, len(kinds))
    n_ports = [sum(p == i for p in parent) + n_free[i] for i in range(len(kinds))]
    names = [f"{k.split('-')[0]}{i}" for i, k in enumerate(kinds)]
    for i, (kind, name) in enumerate(zip(kinds, names)):
        body = rand_body(rng, n_ports[i])
        ext_frame = ("inertial", "body")[int(rng.integers(2))] if kind == "floating" else None
        twist0 = rng.standard_normal(6) if kind in ("floating", "imposed") else None
        block = rand_block(rng, kind, body, gravity, ext_frame, twist0)
        s.add(name, block)
        for e, size in block.extra_inputs.items():
            s.set_input(f"{name}.{e}", rng.standard_normal(size))
    s.set_input(f"{names[1]}.p.m", rng.standard_normal(18))
    free = {i: [f"{names[i]}.c{k + 1}" for k in range(n_ports[i])] for i in range(len(kinds))}
    for i in range(3, len(kinds)):
        s.link(free[parent[i]].pop(), f"{names[i]}.p")
    for ports in free.values():
        for port in ports:
            s.set_input(f"{port}.w", rng.standard_normal(6))
    return s


def assert_rhs_equal(a, b, rtol=1e-12):
    """Equal to ``rtol`` relative to the largest component."""
    assert np.max(np.abs(a - b)) <= rtol * np.max(np.abs(b)), np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("seed", range(12))
def test_kernel_rhs_equals_the_numpy_rhs_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    s = random_kernel_tree(rng, int(rng.integers(5, 20)))
    assert max(len(b.child_ports) for b in s.blocks.values()) >= 3
    f = s.compiled_rhs()
    for _ in range(3):
        y = random_state(rng, s)
        assert_rhs_equal(f(0.0, y), s.rhs(0.0, y))


@pytest.mark.parametrize("n, branching", [(64, 1), (63, 2), (40, 4)])
def test_kernel_rhs_equals_the_numpy_rhs_on_long_chains_and_trees(n, branching):
    """Equal within what rounding makes of these: a long chain's joint accelerations are
    ill-conditioned (64 bodies: the NumPy rhs itself moves by 7e-13 of its scale when the
    states move by one ulp; the kernel differs from it by 1.3e-12), so the bound is
    four times the NumPy rhs' own spread over five such moves, and 1e-12 at least."""
    s = generate.tree(n, branching)
    rng = np.random.default_rng(n)
    y = random_state(rng, s)
    ref = s.rhs(0.0, y)
    spread = max(np.max(np.abs(s.rhs(0.0, y * (1 + 2.2e-16 * rng.choice([-1, 1], y.size))) - ref))
                 for _ in range(5)) / np.max(np.abs(ref))
    assert_rhs_equal(s.compiled_rhs()(0.0, y), ref, rtol=max(1e-12, 4 * spread))


def test_kernel_near_gimbal_lock_and_after_many_turns():
    """The base 1e-9 rad from gimbal lock (the Euler angles its children get are then
    ill-defined: both engines go through them the same way), joints many turns out."""
    s = generate.tree(6, 2)
    base = next(n for n, b in s.blocks.items() if isinstance(b, FloatingBase))
    y = random_state(np.random.default_rng(3), s)
    from titop_fmu.spatial import dcm_from_euler, quat_from_dcm
    y[s.state_slice(base)][9:13] = quat_from_dcm(dcm_from_euler([0.3, np.pi / 2 - 1e-9, -1.1]))
    for n, b in s.blocks.items():
        if b.n_states == 2:
            y[s.state_slice(n)][0] += 200.0 * np.pi + 0.7
    assert_rhs_equal(s.compiled_rhs()(0.0, y), s.rhs(0.0, y), rtol=1e-10)


def test_kernel_sees_a_constant_input_changed_after_it_is_built():
    """A constant input changed in place (as an assembly FMU changes them) is read through
    the kernel's pointers; an input given for the first time makes a new plan and kernel."""
    s = generate.tree(5, 2)
    s.set_input("base.ext.w", [1.0, 60.0, -2.0, 0.3, 0.1, -0.2])
    y = s.initial_state() + 0.05
    f = s.compiled_rhs()
    s.set_input("base.ext.w", [3.0, 40.0, -1.0, 0.2, -0.4, 0.1])
    assert_rhs_equal(f(0.0, y), s.rhs(0.0, y))
    assert not np.allclose(f(0.0, y), generate.tree(5, 2).rhs(0.0, y))
    s.set_input("b2.joint.tau", [-1.5])                 # new: a new plan
    assert_rhs_equal(s.compiled_rhs()(0.0, y), s.rhs(0.0, y))
    assert not np.allclose(f(0.0, y), s.rhs(0.0, y))


@pytest.mark.parametrize("seed", range(12))
def test_kernel_rhs_equals_the_numpy_rhs_with_every_block(seed):
    """The random systems of the recursive/dense test: both bases, every joint forward and
    inverse, loop closures between random blocks and one tied to a given motion."""
    rng = np.random.default_rng(seed)
    s = random_system(np.random.default_rng(seed), int(rng.integers(5, 20)), "recursive")
    f = s.compiled_rhs()
    for _ in range(3):
        y = random_state(rng, s)
        assert_rhs_equal(f(0.0, y), s.rhs(0.0, y))


def test_kernel_loop_closure_turned_near_pi():
    """A loop closure whose two sides are turned by nearly pi (the rotation vector's axis from
    the DCM's symmetric part), and by nearly nothing."""
    from titop_fmu.spatial import axis_rotation, dcm_from_euler, euler_from_dcm
    for angle in (np.pi - 1e-7, np.pi - 1e-3, 1e-9):
        s = System()
        s.add("ground", ImposedMotionBase(RigidBody(1.0, np.eye(3), children=[[0, 0, 0], [1, 0, 0]])))
        s.add("arm", RevoluteBody(RigidBody(1.0, np.diag([0.1, 0.2, 0.3]), com=[0, -1, 0], children=[[0, -1, 0]]),
                                  q0=0.3))
        s.add("loop", LoopClosure(np.diag([50.0, 60, 70, 5, 6, 7]), np.diag([1.0, 1, 1, 0.1, 0.1, 0.1])))
        s.link("ground.c1", "arm.p")
        s.link("arm.c1", "loop.l")
        axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])   # its axis is flipped back
        m = np.zeros(18)
        s.set_input("loop.r.m", m)
        s.set_input("ground.c2.w", np.zeros(6))
        y = s.initial_state()
        left = s.outputs(y)["arm"]["c1.m"][15:18]                 # the attitude of the l side
        m[15:18] = euler_from_dcm(dcm_from_euler(left) @ axis_rotation(axis, angle))
        s.set_input("loop.r.m", m)
        assert np.allclose(s.evaluate(y)[0]["loop"].dx[3:6], angle * axis, atol=1e-6)
        assert_rhs_equal(s.compiled_rhs()(0.0, y), s.rhs(0.0, y), rtol=1e-9)


def test_kernel_rejects_a_block_it_does_not_know():
    from titop_fmu.kernel import KernelUnavailable
    s = System()
    s.add("slip", _Slip())
    s.add("reaction", _Reaction())
    s.link("slip.c1", "reaction.p")
    s.set_input("slip.p.m", np.ones(18))
    with pytest.raises(KernelUnavailable, match="does not cover 'slip' \\(_Slip\\)"):
        s.compiled_rhs()


def test_kernel_non_finite_state_is_a_solver_error():
    s = generate.chain(3)
    y = s.initial_state()
    y[-1] = np.inf
    with pytest.raises(SolverError, match="not finite"):
        s.compiled_rhs()(0.0, y)


def test_simulate_on_the_kernel_equals_simulate_on_the_numpy_blocks():
    s = random_kernel_tree(np.random.default_rng(7), 8)
    c, p = s.simulate(0.5, 0.05, rtol=1e-11, atol=1e-11), s.simulate(0.5, 0.05, rtol=1e-11, atol=1e-11,
                                                                       kernel="numpy")
    assert (c.kernel, p.kernel) == ("c", "numpy")
    assert np.max(np.abs(c.y - p.y)) <= 1e-8 * np.max(np.abs(p.y))
    with pytest.raises(ValueError, match="kernel must be"):
        s.simulate(0.5, 0.05, kernel="fortran")


def test_without_a_compiler_the_numpy_blocks_run(monkeypatch, tmp_path):
    from titop_fmu import kernel
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tries = []
    load = kernel._load
    monkeypatch.setattr(kernel, "_load", lambda: tries.append(1) or load())
    kernel.forget()
    try:
        s = generate.chain(2)
        with pytest.raises(kernel.KernelUnavailable, match="cannot run the C compiler"):
            s.compiled_rhs()
        assert s.simulate(0.02, 0.01).kernel == "numpy"
        assert generate.chain(3).simulate(0.02, 0.01).kernel == "numpy"
        assert len(tries) == 1                                  # the failure is remembered
        assert not list(tmp_path.glob("titop-fmu/kernel-*.so"))
    finally:
        kernel.forget()


# -- every block's outputs on the C kernel (System.outputs_at, the recorded outputs) -----------

def assert_same_outputs(a, b, rtol=1e-12):
    """``{block: {output: (n, size)}}`` tables equal to ``rtol`` relative to the largest of each
    kind: the accelerations and the twists, positions and angles of the motion vectors, the
    wrenches, the joints' outputs."""
    assert {n: set(o) for n, o in a.items()} == {n: set(o) for n, o in b.items()}
    kinds = {"acceleration": lambda k, v: v[:, 0:6] if k.endswith(".m") else None,
             "motion": lambda k, v: v[:, 6:18] if k.endswith(".m") else None,
             "wrench": lambda k, v: v if k.endswith(".w") else None,
             "joint": lambda k, v: v if k.startswith("joint.") else None}
    for kind, part in kinds.items():
        ref = [part(k, v) for n in b for k, v in b[n].items() if part(k, v) is not None]
        scale = max(np.max(np.abs(v)) for v in ref)
        for n in b:
            for k in b[n]:
                if part(k, b[n][k]) is not None:
                    assert a[n][k].shape == b[n][k].shape
                    err = np.max(np.abs(part(k, a[n][k]) - part(k, b[n][k])))
                    assert err <= rtol * scale, f"{n}.{k} ({kind}): {err:.2e} > {rtol:g} * {scale:.2e}"


@pytest.mark.parametrize("seed", range(12))
def test_kernel_outputs_equal_the_numpy_outputs_with_every_block(seed):
    """Every output of every block (solved accelerations and wrenches, child motion vectors,
    joint outputs and inverse efforts, loop-closure wrenches): the random systems with every
    block and loop closures, and trees with a root given a constant motion."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 20))
    for s in (random_system(np.random.default_rng(seed), n, "recursive"), random_kernel_tree(rng, n)):
        ys = np.array([random_state(rng, s) for _ in range(3)])
        c, p = s.outputs_at(ys, kernel="c"), s.outputs_at(ys, kernel="numpy")
        assert_same_outputs(c, p)
        one = s.outputs(ys[1])                            # a row of the table is System.outputs
        assert {n: set(o) for n, o in one.items()} == {n: set(o) for n, o in p.items()}
        assert all(np.array_equal(np.atleast_1d(one[n][k]), p[n][k][1]) for n in one for k in one[n])


def test_kernel_outputs_of_chosen_ports_and_their_fallback():
    s = random_kernel_tree(np.random.default_rng(2), 8)
    ys = np.array([random_state(np.random.default_rng(i), s) for i in range(4)])
    ports = [("prismatic5", "joint.q"), ("floating0", "p.m"), ("revolute4", "p.w"), ("floating0", "c2.m")]
    c, p = s.outputs_at(ys, ports, kernel="c"), s.outputs_at(ys, ports, kernel="numpy")
    assert {(n, k) for n in c for k in c[n]} == set(ports) == {(n, k) for n in p for k in p[n]}
    assert_same_outputs(c, p)
    slip = System()                                        # a block the kernel does not cover
    slip.add("slip", _Slip())
    slip.add("arm", RevoluteBody(RigidBody(1.0, np.diag([0.1, 0.2, 0.3]), com=[0, -1, 0]), q0=0.3))
    slip.link("slip.c1", "arm.p")
    slip.set_input("slip.p.m", np.arange(18.0) / 10)
    y = slip.initial_state()
    assert np.array_equal(slip.outputs_at([y])["slip"]["c1.m"][0], slip.outputs(y)["slip"]["c1.m"])
    from titop_fmu.kernel import KernelUnavailable
    with pytest.raises(KernelUnavailable, match="does not cover 'slip'"):
        slip.outputs_at([y], kernel="c")
    dense = generate.chain(3, solver="dense")
    assert dense.outputs_at([dense.initial_state()])["base"]["p.m"].shape == (1, 18)
    with pytest.raises(ValueError, match="solves the loop recursively"):
        dense.outputs_at([dense.initial_state()], kernel="c")
    y = generate.chain(3).initial_state()
    y[-1] = np.inf
    with pytest.raises(SolverError, match="not finite"):
        generate.chain(3).outputs_at([y], kernel="c")


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["spacecraft", "two_branch"])
def test_recorded_outputs_on_the_kernel_equal_those_of_the_numpy_blocks(name, monkeypatch):
    """A system file's recorded outputs (unit outputs and inertial quantities) over its 20 s,
    the spacecraft passing near gimbal lock: on the kernel equal to rounding, relative to the
    largest of each entry, to those of the NumPy blocks; a run on the kernel records on it."""
    from titop_fmu.cosim.systemfile import read
    from titop_fmu.titop import monolithic
    from titop_fmu.titop.records import Records
    cs = read(EXAMPLES / f"{name}.toml").system
    records = Records(cs)
    assert records.inertial and any(e.quantity is None for e in records.entries)
    s = monolithic.twin(cs)
    tr = s.simulate(20.0, 0.05, rtol=1e-10, atol=1e-10)
    assert tr.kernel == "c"
    c, p = (monolithic.recorded(cs, s, tr.y, records, kernel) for kernel in ("c", "numpy"))
    assert c.shape == p.shape == (len(tr.t), len(records.labels))
    k = 0
    for e in records.entries:
        cols = slice(k, k + len(e.labels))
        k = cols.stop
        err, scale = np.max(np.abs(c[:, cols] - p[:, cols])), np.max(np.abs(p[:, cols]))
        assert err <= 1e-12 * scale, f"{e.ref}: {err:.2e} > 1e-12 * {scale:.2e}"
    monkeypatch.setattr(System, "outputs", lambda self, y: pytest.fail("outputs on the NumPy blocks"))
    tr2, values = monolithic.run(cs, 0.2, 0.05, 1e-10, 1e-10)
    assert tr2.kernel == "c" and np.array_equal(values, monolithic.recorded(cs, s, tr2.y, records, "c"))
