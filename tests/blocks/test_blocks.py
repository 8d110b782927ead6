"""Each TITOP block against its own equations at random states and inputs.

The checks re-derive the paper's relations from the block *outputs*: e.g. for
the revolute body, the body acceleration recovered from the child port must
satisfy Newton-Euler (eq. (18)) with the wrench returned to the parent, and the
torque along the axis must equal the driving torque (eq. (19), eq. (21)).
"""

import numpy as np
import pytest

from titop_fmu import spatial as sp
from titop_fmu.blocks import (FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody,
                              RevoluteBody, RigidBody, WeldedBody)
from titop_fmu.errors import ParameterError, ParameterWarning

rng = np.random.default_rng(7)
G = np.array([0.3, -9.81, 0.2])


def rand_inertia():
    """Inertia of a random cloud of point masses: always physically realisable."""
    pts, ms = rng.standard_normal((5, 3)), rng.random(5)
    return sum(m * (p @ p * np.eye(3) - np.outer(p, p)) for m, p in zip(ms, pts))


def rand_body(n_children=2):
    return RigidBody(1.0 + rng.random(), rand_inertia(), com=rng.standard_normal(3),
                     children=[rng.standard_normal(3) for _ in range(n_children)])


def rand_inputs(block):
    u = {n: rng.standard_normal(s) for n, s in block.inputs.items()}
    for p in block.parent_ports:
        u[f"{p}.m"][15:18] = rng.uniform(-1.2, 1.2, 3)
    return u


def wrench_at_P(W_C, PC):
    """A wrench ``[F; T_C]`` at ``C`` moved to ``P``: ``[F; T_C + PC x F]`` (eq. (13))."""
    return np.concatenate([W_C[0:3], W_C[3:6] + np.cross(PC, W_C[0:3])])


def body_check(body, a_A, twist_A, P_ai, W_parent_on_A, u, child_ports, g=G):
    """Newton-Euler with gravity (eq. (11)) for body A with all its port wrenches, the
    child wrenches moved to ``P`` by cross products (not by the block's ``tau_CiP``)."""
    W_ext = W_parent_on_A + sum(wrench_at_P(u[f"{c}.w"], PC) for PC, c in zip(body.children, child_ports))
    g6 = sp.gravity6(P_ai, g)
    rhs = body.D_P @ (a_A - g6) + sp.C(twist_A) @ body.D_P @ twist_A
    assert np.allclose(W_ext, rhs, atol=1e-11)


def acc_from_child(body, out):
    """The body's spatial acceleration at P recovered from its first child port."""
    return sp.tau(body.children[0]) @ out["c1.m"][0:6]       # tau(PC) = tau_CP^-1


@pytest.mark.parametrize("mode", ["forward", "inverse"])
def test_revolute_body_obeys_eqs_16_to_23(mode):
    body = rand_body()
    blk = RevoluteBody(body, axis=rng.standard_normal(3), gravity=G, mount=[0.2, -0.5, 1.0],
                       k=3.0, d=0.4, mode=mode)
    for _ in range(10):
        x = rng.standard_normal(2)
        u = rand_inputs(blk)
        out = blk.outputs(x, u)
        theta, thetad = x
        r = blk.axis
        P_ab = sp.dcm_from_euler(blk.mount) @ sp.axis_rotation(r, theta)
        P_ai = sp.dcm_from_euler(u["p.m"][15:18]) @ P_ab
        vB, wB = P_ab.T @ u["p.m"][6:9], P_ab.T @ u["p.m"][9:12]
        twist_A = np.concatenate([vB, wB + thetad * r])
        qdd = out["joint.q"][0] if mode == "forward" else u["joint.qdd"][0]
        a_B = np.concatenate([P_ab.T @ u["p.m"][0:3], P_ab.T @ u["p.m"][3:6]])
        a_A = a_B + np.concatenate([-thetad * np.cross(r, vB), qdd * r - thetad * np.cross(r, wB)])
        assert np.allclose(acc_from_child(body, out), a_A, atol=1e-11)               # eq. (17), eq. (23)
        W_AB = sp.P_x2(P_ab).T @ out["p.w"]                                          # in R_a
        body_check(body, a_A, twist_A, P_ai, -W_AB, u, ("c1", "c2"))                 # eq. (18)
        Cm = (u["joint.tau"][0] if mode == "forward" else out["joint.tau"][0]) - 3.0 * theta - 0.4 * thetad
        assert np.isclose(Cm, -r @ W_AB[3:6], atol=1e-11)                            # eq. (19), eq. (21)
        assert np.allclose(out["joint.q"][1:], [thetad, theta])
        assert np.allclose(out["c1.m"][6:12], sp.tau(-body.children[0]) @ twist_A)
        assert np.allclose(sp.dcm_from_euler(out["c1.m"][15:18]), P_ai, atol=1e-12)


@pytest.mark.parametrize("mode", ["forward", "inverse"])
def test_prismatic_body_obeys_eqs_24_to_29(mode):
    body = rand_body()
    blk = PrismaticBody(body, axis=rng.standard_normal(3), gravity=G, mount=[-0.3, 0.4, 0.1],
                        k=5.0, d=0.7, mode=mode)
    for _ in range(10):
        x = rng.standard_normal(2)
        u = rand_inputs(blk)
        out = blk.outputs(x, u)
        xq, xd = x
        t = blk.axis
        P_ab = sp.dcm_from_euler(blk.mount)
        P_ai = sp.dcm_from_euler(u["p.m"][15:18]) @ P_ab
        T = sp.tau(-xq * t)
        tw0 = sp.P_x2(P_ab).T @ u["p.m"][6:12]
        twist_A = T @ tw0 + np.concatenate([xd * t, np.zeros(3)])
        qdd = out["joint.q"][0] if mode == "forward" else u["joint.qdd"][0]
        a_A = T @ (sp.P_x2(P_ab).T @ u["p.m"][0:6]) \
            + np.concatenate([qdd * t - xd * np.cross(t, twist_A[3:6]), np.zeros(3)])
        assert np.allclose(acc_from_child(body, out), a_A, atol=1e-11)               # eq. (24)
        W_P0 = sp.P_x2(P_ab).T @ out["p.w"]
        W_P = sp.tau(xq * t).T @ W_P0                                                # eq. (29) inverted
        body_check(body, a_A, twist_A, P_ai, -W_P, u, ("c1", "c2"))                  # eq. (25)
        Fm = (u["joint.tau"][0] if mode == "forward" else out["joint.tau"][0]) - 5.0 * xq - 0.7 * xd
        assert np.isclose(Fm, -t @ W_P[0:3], atol=1e-11)                             # eq. (26), eq. (27)
        IP_a = P_ab.T @ u["p.m"][12:15] + xq * t                                     # P = P0 + x t
        assert np.allclose(out["c1.m"][12:15], IP_a + body.children[0], atol=1e-12)


def test_welded_body_obeys_eq_15():
    body = rand_body()
    blk = WeldedBody(body, gravity=G, mount=[0.5, 0.2, -0.7])
    P_ab = sp.dcm_from_euler(blk.mount)
    for _ in range(5):
        u = rand_inputs(blk)
        out = blk.outputs(np.zeros(0), u)
        P_ai = sp.dcm_from_euler(u["p.m"][15:18]) @ P_ab
        a_A = sp.P_x2(P_ab).T @ u["p.m"][0:6]
        assert np.allclose(acc_from_child(body, out), a_A, atol=1e-12)
        body_check(body, a_A, sp.P_x2(P_ab).T @ u["p.m"][6:12], P_ai, -sp.P_x2(P_ab).T @ out["p.w"],
                   u, ("c1", "c2"))


@pytest.mark.parametrize("frame", ["inertial", "body"])
def test_floating_base_obeys_eqs_11_13(frame):
    body = rand_body()
    blk = FloatingBase(body, gravity=G, ext_frame=frame)
    for _ in range(5):
        x = rng.standard_normal(13)
        x = blk.project_state(x)
        u = rand_inputs(blk)
        out = blk.outputs(x, u)
        P_bi = sp.dcm_from_quat(x[9:13])
        W = sp.P_x2(P_bi).T @ u["ext.w"] if frame == "inertial" else u["ext.w"]
        body_check(body, out["p.m"][0:6], x[0:6], P_bi, W, u, ("c1", "c2"))
        assert np.allclose(out["p.m"][12:15], P_bi.T @ x[6:9])
        assert np.allclose(sp.dcm_from_euler(out["p.m"][15:18]), P_bi, atol=1e-12)
        xdot = blk.state_derivatives(x, u)
        assert np.allclose(xdot[6:9], P_bi @ x[0:3])
        h = 1e-6                                             # dP_b/i/dt = P_b/i (*omega)
        Pdot = (sp.dcm_from_quat(x[9:13] + h * xdot[9:13]) - sp.dcm_from_quat(x[9:13] - h * xdot[9:13])) / (2 * h)
        assert np.allclose(Pdot, P_bi @ sp.skew(x[3:6]), atol=1e-8)


def test_imposed_motion_base_is_eq_11():
    body = rand_body()
    blk = ImposedMotionBase(body, gravity=G)
    x = blk.project_state(rng.standard_normal(13))
    u = rand_inputs(blk)
    out = blk.outputs(x, u)
    body_check(body, u["p.a"], x[0:6], sp.dcm_from_quat(x[9:13]), out["p.w"], u, ("c1", "c2"))
    assert np.allclose(blk.state_derivatives(x, u)[0:6], u["p.a"])


def test_forward_and_inverse_joints_are_each_others_inverse():
    for cls in (RevoluteBody, PrismaticBody):
        body = rand_body(1)
        kw = dict(axis=rng.standard_normal(3), gravity=G, k=2.0, d=0.3)
        fwd, inv = cls(body, **kw), cls(body, mode="inverse", **kw)
        x, u = rng.standard_normal(2), rand_inputs(fwd)
        out_f = fwd.outputs(x, u)
        u_i = {k: v for k, v in u.items() if k != "joint.tau"}
        u_i["joint.qdd"] = out_f["joint.q"][0:1]
        out_i = inv.outputs(x, u_i)
        assert np.isclose(out_i["joint.tau"][0], u["joint.tau"][0], atol=1e-11)
        assert np.allclose(out_i["p.w"], out_f["p.w"], atol=1e-11)
        assert np.allclose(out_i["c1.m"], out_f["c1.m"], atol=1e-11)


def test_accelerations_stage_is_affine_and_batches():
    """The batched acceleration stage equals column-by-column evaluation."""
    blk = RevoluteBody(rand_body(1), axis=[0.3, 0.1, 1.0], gravity=G, mode="forward")
    x, u = rng.standard_normal(2), rand_inputs(blk)
    kin = blk.kinematics(x, {"p": u["p.m"]})
    k = 5
    batch = {"p.a": rng.standard_normal((6, k)), "c1.w": rng.standard_normal((6, k)),
             "joint.tau": rng.standard_normal((1, k))}
    acc = blk.accelerations(kin, batch)
    for j in range(k):
        one = blk.accelerations(kin, {n: v[:, j:j + 1] for n, v in batch.items()})
        for name in acc:
            assert np.allclose(acc[name][:, j], one[name][:, 0], atol=1e-13)


def test_loop_closure():
    K = np.diag([100.0, 200.0, 300.0, 10.0, 20.0, 30.0])
    Dm = np.diag([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    blk = LoopClosure(K, Dm)
    m = rng.standard_normal(18)
    m[15:18] = [0.2, 0.1, -0.3]
    out = blk.outputs(np.zeros(0), {"l.m": m, "r.m": m})
    assert np.allclose(out["l.w"], 0, atol=1e-12) and np.allclose(out["r.w"], 0, atol=1e-12)
    m_r = m.copy()
    m_r[12:15] += [0.01, -0.02, 0.03]
    m_r[6:9] += [0.5, 0.0, 0.0]
    out = blk.outputs(np.zeros(0), {"l.m": m, "r.m": m_r})
    assert np.allclose(out["l.w"], K @ [0.01, -0.02, 0.03, 0, 0, 0] + Dm @ [0.5, 0, 0, 0, 0, 0], atol=1e-12)
    F = out["l.w"][0:3]
    assert np.allclose(out["r.w"][0:3], -F) and np.allclose(out["r.w"][3:6], np.cross([0.01, -0.02, 0.03], F))


# --- parameter errors ----------------------------------------------------------

@pytest.mark.parametrize("kwargs, param", [
    (dict(mass=-1.0), "mass"),
    (dict(mass=1.0, inertia=[[1, 0.2, 0], [0, 1, 0], [0, 0, 1]]), "inertia"),
    (dict(mass=1.0, inertia=np.diag([1.0, -1.0, 1.0])), "inertia"),
    (dict(mass=1.0, inertia=np.eye(2)), "inertia"),
    (dict(mass=np.nan), "mass"),
    (dict(mass=1.0, com=[0, np.inf, 0]), "com"),
    (dict(mass=1.0, children=[[0, 1]]), "children[0]"),
])
def test_bad_body_parameters_are_named(kwargs, param):
    with pytest.raises(ParameterError) as e:
        RigidBody(**kwargs)
    assert e.value.parameter == param and param in str(e.value)


def test_bad_joint_and_base_parameters_are_named():
    body = RigidBody(1.0, com=[0, -1, 0])
    with pytest.raises(ParameterError, match="'axis'"):
        RevoluteBody(body, axis=[0, 0, 0])
    with pytest.raises(ParameterError, match="'axis'"):
        PrismaticBody(body, axis=[0.0, 0.0, 1e-20])
    with pytest.raises(ParameterError, match="'inertia'"):
        RevoluteBody(RigidBody(1.0, com=[0, 0, 1.0]), axis=[0, 0, 1])   # J_r = 0
    with pytest.raises(ParameterError, match="'mass'"):
        FloatingBase(RigidBody(0.0, np.eye(3)))
    with pytest.raises(ParameterError, match="'k'"):
        RevoluteBody(body, k=-1.0)
    with pytest.raises(ParameterError, match="'mode'"):
        RevoluteBody(body, mode="backwards")
    with pytest.raises(ParameterError, match="'K'"):
        LoopClosure(-np.eye(6), np.zeros((6, 6)))


def test_triangle_inequality_only_warns():
    """The paper's balloon inertia (principal moments 3, 5, 17) is accepted with a warning."""
    with pytest.warns(ParameterWarning, match="triangle"):
        b = RigidBody(10.0, [[5, 0, 0], [0, 10, -7], [0, -7, 10]])
    assert np.allclose(np.linalg.eigvalsh(b.inertia), [3, 5, 17])


def stateful_blocks():
    return [FloatingBase(RigidBody(2.0, np.diag([1.0, 2.0, 2.5]), children=[rng.standard_normal(3)]), gravity=G),
            ImposedMotionBase(rand_body(1), gravity=G),
            RevoluteBody(rand_body(), axis=rng.standard_normal(3), gravity=G, mount=[0.2, -0.5, 1.0], k=3.0, d=0.4),
            PrismaticBody(rand_body(), axis=rng.standard_normal(3), gravity=G, mount=[0.1, 0.4, -0.3], k=2.0, d=0.1),
            RevoluteBody(rand_body(), axis=rng.standard_normal(3), gravity=G, mode="inverse")]


def random_state(blk):
    return blk.project_state(blk.initial_state() + 0.3 * rng.standard_normal(blk.n_states))


@pytest.mark.parametrize("blk", stateful_blocks(), ids=lambda b: type(b).__name__)
def test_state_derivatives_skip_only_outputs(blk):
    """The derivative path (no child motion, no Euler angles, joint or base acceleration
    only) gives exactly the derivatives of the full evaluation."""
    for _ in range(5):
        x, u = random_state(blk), rand_inputs(blk)
        assert np.array_equal(blk.state_derivatives(x, u), blk.derivatives(x, *blk.evaluate(x, u)))


@pytest.mark.parametrize("cls", [FloatingBase, ImposedMotionBase])
def test_bases_output_their_own_motion_vector(cls):
    """``p.m`` of a base: its spatial acceleration, its twist (states) and its pose at P."""
    blk = cls(RigidBody(2.0, np.diag([1.0, 2.0, 2.5]), children=[rng.standard_normal(3)]), gravity=G)
    x, u = random_state(blk), rand_inputs(blk)
    kin, acc = blk.evaluate(x, u)
    m = blk.outputs(x, u)["p.m"]
    P_bi = sp.dcm_from_quat(x[9:13])
    assert np.array_equal(m[0:6], acc["p.a"]) and np.array_equal(m[6:12], x[0:6])
    assert np.allclose(m[12:15], P_bi.T @ x[6:9], atol=1e-14)
    assert np.allclose(sp.dcm_from_euler(m[15:18]), P_bi, atol=1e-13)
    # the child port by rigid-body kinematics (cross products), not by the block's upsilon
    PC, mC = blk.body.children[0], blk.outputs(x, u)["c1.m"]
    assert np.allclose(mC[0:3], m[0:3] + np.cross(m[3:6], PC), atol=1e-13)
    assert np.allclose(mC[6:9], x[0:3] + np.cross(x[3:6], PC), atol=1e-13)
    assert np.array_equal(mC[3:6], m[3:6]) and np.array_equal(mC[9:12], x[3:6])
    assert np.allclose(P_bi @ mC[12:15], x[6:9] + P_bi @ PC, atol=1e-13)
    assert np.array_equal(mC[15:18], m[15:18])
