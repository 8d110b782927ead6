"""Flexible bodies in every block: with zero modes the rigid block to rounding; the ports
move with their nodes (the node's motion vector is the time derivative of itself, eq. (F12));
a tip load bends the beam as the closed forms say, a tension stiffens it as a beam-column."""

import numpy as np
import pytest
from flexible_systems import appendages

from titop_fmu.blocks import (FlexibleBody, FloatingBase, ImposedMotionBase, PrismaticBody, RevoluteBody, RigidBody,
                              WeldedBody)
from titop_fmu.blocks.beam import beam_modal_data, section
from titop_fmu.spatial import dcm_from_euler, dcm_from_quat, quat_exp
from titop_fmu.system import System

BLOCKS = {
    "welded": lambda b: WeldedBody(b, mount=[0.1, 0.2, 0.3]),
    "revolute": lambda b: RevoluteBody(b, axis=[0.2, 0.1, 1], q0=0.3, qd0=0.5, k=2.0, d=0.1),
    "prismatic": lambda b: PrismaticBody(b, axis=[1, 0.2, 0.1], q0=0.3, qd0=0.5),
    "revolute_inverse": lambda b: RevoluteBody(b, mode="inverse", q0=0.3, qd0=0.5),
    "prismatic_inverse": lambda b: PrismaticBody(b, mode="inverse", q0=0.3, qd0=0.5),
    "floating_base": lambda b: FloatingBase(b, twist0=[.1, .2, .3, .4, .5, .6], Theta0=[0.2, -0.4, 1.0]),
    "imposed_motion_base": lambda b: ImposedMotionBase(b, twist0=[.1, .2, .3, .4, .5, .6]),
}


@pytest.mark.parametrize("kind", BLOCKS)
def test_zero_modes_is_the_rigid_block(kind):
    """A flexible body of zero modes (a generated beam's rigid mass, two ports) in each block
    gives the rigid block's outputs and state derivatives to rounding, and the same states;
    its ports' elastic displacements are zero."""
    d = beam_modal_data([section(dict(length=2.0, EA=1e6, EIy=300.0, EIz=200.0, GJ=100.0, rhoA=1.2, rhoJ=1e-3))], 0,
                        axis=[0.3, -1, 0.2], elements=4, ports=[1.0, 2.0])
    flex = FlexibleBody(d)
    a, b = BLOCKS[kind](flex), BLOCKS[kind](RigidBody(flex.mass, flex.inertia, flex.com, list(flex.children)))
    assert a.state_names == b.state_names and a.children_through_sum is False
    rng = np.random.default_rng(3)
    for _ in range(3):
        u = {n: rng.normal(size=s) for n, s in b.inputs.items()}
        x = b.initial_state() + 0.1 * rng.normal(size=b.n_states)
        x = b.project_state(x)
        oa, ob = a.outputs(x, u), b.outputs(x, u)
        for k in ob:
            np.testing.assert_allclose(oa[k], ob[k], rtol=1e-13, atol=1e-13 * max(1.0, np.max(np.abs(ob[k]))))
        assert not np.any(oa["c1.u"]) and not np.any(oa["c2.u"])
        np.testing.assert_allclose(a.state_derivatives(x, u), b.state_derivatives(x, u), rtol=1e-12, atol=1e-12)


def test_a_port_moves_with_its_node():
    """At states along a run of the free-floating hub with its appendages (a rigid mass at the
    wing's tip, a flexible boom on a hinge), each node's motion vector ``c1.m`` is the time
    derivative of itself: its inertial position's rate is its velocity, its attitude's rate its
    angular velocity, its twist's rate its spatial acceleration (eq. (F12)); the rates by
    central differences along the flow, ``m(y + h ydot) - m(y - h ydot)``."""
    s = appendages()
    h = 1e-5
    tr = s.simulate(0.2, 0.1, rtol=1e-10, atol=1e-10, kernel="numpy")
    for y in tr.y:
        yd = s.rhs(0.0, y)
        for block in ("wing", "boom"):
            m, mp, mm = (s.outputs(z)[block]["c1.m"] for z in (y, y + h * yd, y - h * yd))
            P, Pp, Pm = (dcm_from_euler(z[15:18]) for z in (m, mp, mm))
            scale = np.max(np.abs(m[0:12]))
            np.testing.assert_allclose((Pp @ mp[12:15] - Pm @ mm[12:15]) / (2 * h), P @ m[6:9], atol=1e-8 * scale)
            W = P.T @ (Pp - Pm) / (2 * h)                             # P' = P (*omega)
            np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], m[9:12], atol=1e-8 * scale)
            np.testing.assert_allclose((mp[6:12] - mm[6:12]) / (2 * h), m[0:6], atol=1e-8 * scale)
    assert np.max(np.abs(s.outputs(tr.y[-1])["wing"]["c1.u"])) > 1e-3          # it does bend


def _cantilever(F, modes=20, stiffening=True):
    """A beam clamped to a fixed base, the constant (dead) wrench ``F`` applied at its tip (given
    in the body frame: the input, in the node's frame, turned with the node), at its static
    equilibrium (found by Newton on the modal accelerations)."""
    L, EI = 2.0, 500.0
    d = beam_modal_data([section(dict(length=L, EA=1e9, EIy=EI, EIz=EI, GJ=1e6, rhoA=1.0, rhoJ=1e-3))], modes,
                        elements=40, ports=[L])
    s = System()
    s.add("beam", WeldedBody(FlexibleBody(d, stiffening=stiffening), gravity=[0, 0, 0]))
    s.set_input("beam.p.m", np.zeros(18))
    s.set_input("beam.c1.w", F)
    n = modes

    def residual(y):                                      # etaddot at rest under the dead load
        E = dcm_from_quat(quat_exp(s.outputs(y)["beam"]["c1.u"][3:6]))
        s.set_input("beam.c1.w", np.concatenate([E.T @ F[0:3], E.T @ F[3:6]]))
        return s.rhs(0, y)[n:]

    y = s.initial_state()
    for _ in range(8):                                    # Newton
        r = residual(y)
        J = np.column_stack([(residual(y + 1e-7 * e) - r) / 1e-7 for e in np.eye(2 * n)[:n]])
        y[:n] -= np.linalg.solve(J, r)
    assert np.max(np.abs(residual(y))) < 1e-9 * np.max(np.abs(F))
    return s.outputs(y)["beam"]["c1.u"], L, EI


def test_a_tip_force_bends_the_cantilever_by_F_L3_over_3EI():
    """F L^3 / 3EI and F L^2 / 2EI (the slope's modal series converges slower: 10 modes per
    plane leave 1.2e-3 of it), M L^2 / 2EI for a tip moment."""
    u, L, EI = _cantilever(np.array([0, 3.0, 0, 0, 0, 0]))
    assert u[1] == pytest.approx(3.0 * L ** 3 / (3 * EI), rel=1e-3)
    assert u[5] == pytest.approx(3.0 * L ** 2 / (2 * EI), rel=2e-3)
    u, L, EI = _cantilever(np.array([0, 0, 0, 0, 0, 4.0]))
    assert u[1] == pytest.approx(4.0 * L ** 2 / (2 * EI), rel=2e-3)


def test_a_tension_at_the_tip_stiffens_it_as_a_beam_column():
    """A tension T and a lateral force F at the tip: w = F (k L - tanh(k L)) / (T k), k =
    sqrt(T / EI), the beam-column's closed form (first-order stiffening by the port force, the
    K0F term); without stiffening, F L^3 / 3EI."""
    T, F = 800.0, 3.0
    u, L, EI = _cantilever(np.array([T, F, 0, 0, 0, 0]))
    k = np.sqrt(T / EI)
    assert u[1] == pytest.approx(F * (k * L - np.tanh(k * L)) / (T * k), rel=1e-3)
    assert u[1] < 0.7 * F * L ** 3 / (3 * EI)
    u, L, EI = _cantilever(np.array([T, F, 0, 0, 0, 0]), stiffening=False)
    assert u[1] == pytest.approx(F * L ** 3 / (3 * EI), rel=1e-3)


@pytest.mark.parametrize("kind", ["welded_c1", "revolute_c1", "floating_base_c1"])
def test_an_fmu_of_zero_modes_is_the_rigid_fmu(kind):
    """The FMU interface ``<kind>_f0`` (a flexible body of zero modes, its modal data the FMI
    parameters; it failed to build, its empty arrays losing their shapes) gives the rigid FMU's
    outputs for the same mass (unit mass and inertia at P, the default of both) and inputs."""
    from titop_fmu.fmu import catalog
    flex, rigid = catalog.interface_of(f"{kind}_f0"), catalog.interface_of(kind)
    values = dict(zip((s[0] for s in rigid.param_scalars), rigid.defaults()))
    values.update({"mass": 1.0, **{f"inertia[{i},{j}]": float(i == j) for i in (1, 2, 3) for j in (1, 2, 3)},
                   **{f"com[{i}]": 0.0 for i in (1, 2, 3)}})
    fvalues = dict(zip((s[0] for s in flex.param_scalars), flex.defaults()))
    assert fvalues["c1.r[2]"] == values["c1.r[2]"] == -1.0           # the same port
    a, _ = flex.make_unit([fvalues[s[0]] for s in flex.param_scalars])
    b, _ = rigid.make_unit([values[s[0]] for s in rigid.param_scalars])
    u = np.random.default_rng(5).normal(size=len(rigid.input_names))
    assert flex.input_names == rigid.input_names
    for unit in (a, b):
        unit.set_inputs(unit.ALL, u)
    ya, yb = dict(zip(flex.output_names, a.outputs())), dict(zip(rigid.output_names, b.outputs()))
    assert set(yb) <= set(ya)
    for k in yb:
        np.testing.assert_allclose(ya[k], yb[k], rtol=1e-13, atol=1e-13)
