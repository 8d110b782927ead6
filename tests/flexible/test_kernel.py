"""The flexible bodies on the C kernel (titop_fmu/flexible.h, included by kernel.c) equal the
NumPy blocks to rounding, on a tree where every body block kind carries a flexible body (bases
floating and imposed, welded, revolute and prismatic, forward and inverse), bodies on the nodes
of flexible bodies, several linked children on one flexible body, a loop closure among them."""

import numpy as np
import pytest

from titop_fmu.blocks import (FlexibleBody, FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody, RevoluteBody,
                              RigidBody, WeldedBody)
from titop_fmu.blocks.beam import beam_modal_data, section

from titop_fmu.system import System


def beam(length, modes, axis, ports, seed):
    rng = np.random.default_rng(seed)
    s = dict(length=length, EA=rng.uniform(1e5, 1e6), EIy=rng.uniform(50, 300), EIz=rng.uniform(50, 300),
             GJ=rng.uniform(20, 100), rhoA=rng.uniform(0.5, 3), rhoJ=rng.uniform(0.005, 0.05))
    return FlexibleBody(beam_modal_data([section(s)], modes, axis=axis, elements=8, ports=ports, zeta=0.01))


def tree(base="floating", stiffening=True):
    g = [0.3, -9.81, 0.5]
    s = System()
    body = beam(2.0, 4, [1, 0.2, 0.1], [1.0, 2.0], 0)
    if not stiffening:
        body = FlexibleBody(body.data, stiffening=False)
    if base == "floating":
        s.add("base", FloatingBase(body, gravity=g, twist0=[0.1, -0.2, 0.3, 0.2, -0.1, 0.4], Theta0=[0.1, 0.2, -0.3]))
        s.set_input("base.ext.w", [1.0, -2.0, 0.5, 0.3, 0.2, -0.1])
    else:
        s.add("base", ImposedMotionBase(body, gravity=g, twist0=[0.1, -0.2, 0.3, 0.2, -0.1, 0.4]))
        s.set_input("base.p.a", [0.5, -0.1, 0.2, 0.3, -0.4, 0.1])
    s.add("arm", RevoluteBody(beam(1.5, 3, [0, -1, 0.2], [1.5], 1), axis=[0.1, 0.2, 1], q0=0.3, qd0=0.4, k=5.0,
                              d=0.1, gravity=g, mount=[0.1, 0.0, 0.2]))
    s.add("slide", PrismaticBody(beam(1.0, 2, [0.2, 0.1, -1], [1.0], 2), axis=[1, 0.3, 0], q0=0.1, qd0=-0.2,
                                 k=20.0, gravity=g))
    s.add("panel", WeldedBody(beam(1.2, 3, [0, 0, 1], [0.6, 1.2], 3), gravity=g, mount=[0.2, -0.3, 0.1]))
    s.add("wrist", RevoluteBody(beam(0.8, 2, [1, 0, 0], [0.8], 4), mode="inverse", q0=-0.2, qd0=0.3, gravity=g))
    s.add("tip", WeldedBody(RigidBody(0.7, np.diag([0.01, 0.02, 0.015]), [0.05, 0.0, 0.02], [[0.1, 0, 0]]), gravity=g))
    s.add("spring", LoopClosure(200 * np.eye(6), 2 * np.eye(6)))
    for c, p in (("base.c1", "arm.p"), ("arm.c1", "slide.p"), ("base.c2", "panel.p"), ("panel.c1", "wrist.p"),
                 ("panel.c2", "tip.p"), ("slide.c1", "spring.l"), ("tip.c1", "spring.r")):
        s.link(c, p)
    s.set_input("arm.joint.tau", [0.7])
    s.set_input("slide.joint.tau", [-0.4])
    s.set_input("wrist.joint.qdd", [0.9])
    s.set_input("wrist.c1.w", [0.2, -0.1, 0.3, 0.05, 0.0, -0.02])
    return s


def random_states(s, rng, count=3):
    for _ in range(count):
        y = s.initial_state() + 0.05 * rng.normal(size=s.plan().n_states)
        for name, b in s.blocks.items():
            sl = s.state_slice(name)
            y[sl] = b.project_state(y[sl])
        yield y


@pytest.mark.parametrize("base, stiffening", [("floating", True), ("imposed", True), ("floating", False)])
def test_the_kernel_equals_the_numpy_blocks(base, stiffening):
    """The state derivatives to 1e-12 of the largest, every output to 1e-12 of the largest of its
    kind (motion vectors, wrenches, joint motions, elastic displacements)."""
    s = tree(base, stiffening)
    f = s.compiled_rhs()
    for y in random_states(s, np.random.default_rng(5)):
        a, b = f(0.0, y), s.rhs(0.0, y)
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))
        c, n = s.outputs_at(y[None], kernel="c"), s.outputs_at(y[None], kernel="numpy")
        for kind in (".m", ".w", "joint.", ".u"):
            ports = [(u, p) for u in n for p in n[u] if kind in p]
            scale = max(np.max(np.abs(n[u][p])) for u, p in ports)
            for u, p in ports:
                assert np.max(np.abs(c[u][p] - n[u][p])) <= 1e-12 * scale, f"{u}.{p}"


def test_the_engine_runs_flexible_bodies_on_the_kernel():
    from flexible_systems import spinning_beam
    assert spinning_beam(6.0).simulate(0.1, 0.05).kernel == "c"
