"""At a null equilibrium (no rate, no gravity, no load), the flexible bodies linearised are
SDT's linear flexible TITOP model (cantilever modes, modal participation factors, residual
mass D_P - L^T L), assembled independently (tests/support/sdt_flexible.py), for a tree with a
floating hub, a welded and a hinged flexible appendage and rigid bodies on their nodes."""

import numpy as np
from flexible_systems import richardson, state_jacobian
from sdt_flexible import linear_model

from titop_fmu.blocks import FlexibleBody, FloatingBase, RevoluteBody, RigidBody, WeldedBody
from titop_fmu.blocks.beam import beam_modal_data, section
from titop_fmu.system import System

A_BEAM = beam_modal_data([section(dict(length=3.0, EA=5e6, EIy=800.0, EIz=500.0, GJ=300.0, rhoA=2.0, rhoJ=0.01))], 6,
                         axis=[1, 0.2, 0.1], elements=12, ports=[3.0], zeta=0.01)
B_BEAM = beam_modal_data([section(dict(length=2.0, EA=4e6, EIy=300.0, EIz=400.0, GJ=200.0, rhoA=1.5, rhoJ=0.02))], 5,
                         axis=[0.1, -1, 0.3], elements=10, ports=[1.2], zeta=0.02)
HUB = RigidBody(40.0, [[6, 0.3, 0.1], [0.3, 8, -0.2], [0.1, -0.2, 7]], [0.05, -0.02, 0.03], [[0.4, 0.1, 0], [-0.3, -0.4, 0.1]])
PEND = RigidBody(1.5, np.diag([0.02, 0.03, 0.025]), [0.0, -0.4, 0.05])
TIP = RigidBody(0.8, np.diag([0.01, 0.012, 0.011]), [0.02, 0.01, -0.03])
MOUNTS = {"A": [0.1, -0.2, 0.3], "P": [0.2, 0.1, -0.1], "B": [0, 0.2, 0.1], "T": [0.3, 0, 0.2]}


def tree():
    s = System()
    z = [0, 0, 0]
    s.add("hub", FloatingBase(HUB, ext_frame="body", gravity=z))
    s.add("A", WeldedBody(FlexibleBody(A_BEAM), gravity=z, mount=MOUNTS["A"]))
    s.add("P", RevoluteBody(PEND, axis=[0.2, 0.1, 1.0], k=3.0, d=0.2, gravity=z, mount=MOUNTS["P"]))
    s.add("B", RevoluteBody(FlexibleBody(B_BEAM), axis=[0, 0.3, 1.0], k=50.0, d=0.5, gravity=z, mount=MOUNTS["B"]))
    s.add("T", WeldedBody(TIP, gravity=z, mount=MOUNTS["T"]))
    for c, p in (("hub.c1", "A.p"), ("A.c1", "P.p"), ("hub.c2", "B.p"), ("B.c1", "T.p")):
        s.link(c, p)
    for ref, size in (("hub.ext.w", 6), ("P.joint.tau", 1), ("B.joint.tau", 1)):
        s.set_input(ref, np.zeros(size))
    return s


def sdt_bodies():
    def modal(d):
        return dict(mass=d.mass, L=d.L, omega=d.omega, zeta=d.zeta, phi=d.phi, psi=d.psi)
    return [dict(mass=HUB.mass, inertia=HUB.inertia, com=HUB.com, children=HUB.children),
            dict(modal=modal(A_BEAM), children=list(A_BEAM.nodes), parent=0, port=0, joint="welded", mount=MOUNTS["A"]),
            dict(mass=PEND.mass, inertia=PEND.inertia, com=PEND.com, children=[], parent=1, port=0, joint="revolute",
                 axis=[0.2, 0.1, 1.0], mount=MOUNTS["P"], k=3.0, d=0.2),
            dict(modal=modal(B_BEAM), children=list(B_BEAM.nodes), parent=0, port=1, joint="revolute",
                 axis=[0, 0.3, 1.0], mount=MOUNTS["B"], k=50.0, d=0.5),
            dict(mass=TIP.mass, inertia=TIP.inertia, com=TIP.com, children=[], parent=3, port=0, joint="welded",
                 mount=MOUNTS["T"])]


def test_the_linearised_flexible_tree_is_sdts_linear_flexible_titop_model():
    """The rows of the accelerations (the hub's twist, the joints', the modes') against the
    states (joints, modes, the hub's twist) and inputs (hub wrench, joint torques): the NumPy
    blocks linearised by Richardson central differences equal SDT's model to 1e-10 of its
    largest entry."""
    s = tree()
    A_sdt, B_sdt = linear_model(sdt_bodies())
    sl = s.plan().state_slices
    nA, nB = A_BEAM.n_modes, B_BEAM.n_modes
    # SDT's states -> the system's: hub twist; q, qd of P and B; eta, etadot of A and of B
    native = list(range(6)) + [sl["P"].start, sl["P"].start + 1, sl["B"].start, sl["B"].start + 1] \
        + list(range(sl["A"].start, sl["A"].start + 2 * nA)) + list(range(sl["B"].start + 2, sl["B"].start + 2 + 2 * nB))
    sdt = list(range(6)) + list(range(12, 12 + 4 + 2 * nA + 2 * nB))
    y0 = s.initial_state()
    A = state_jacobian(s, y0, native, native)
    B = np.zeros((len(native), 8))
    for j, (ref, i) in enumerate([("hub.ext.w", i) for i in range(6)] + [("P.joint.tau", 0), ("B.joint.tau", 0)]):
        v = s.values[tuple(ref.split(".", 1))]

        def g(h):
            v[i] = h
            r = s.rhs(0.0, y0)[native]
            v[i] = 0.0
            return r
        B[:, j] = richardson(g, 1e-3)
    As, Bs = A_sdt[np.ix_(sdt, sdt)], B_sdt[sdt]
    assert np.max(np.abs(A - As)) <= 1e-10 * np.max(np.abs(As))
    assert np.max(np.abs(B - Bs)) <= 1e-10 * np.max(np.abs(Bs))
    assert np.max(np.abs(As[0:6, 10:10 + nA])) > 1.0              # the wing's modes drive the hub


def test_the_exact_linear_model_is_sdts_to_1e_10():
    """linearize (the C kernel on dual numbers: exact derivatives) on the same tree, every state
    (the hub's pose in the attitude chart, the joints, the modes) and input: A and B equal SDT's
    to 1e-10 of their largest entry."""
    from titop_fmu.linear import linearize
    model = linearize(tree(), inputs=["hub.ext.w", "P.joint.tau", "B.joint.tau"])
    A_sdt, B_sdt = linear_model(sdt_bodies())
    names = [f"hub.{x}" for x in ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "r_x", "r_y", "r_z", "rotvec_x",
                                  "rotvec_y", "rotvec_z")] + ["P.q", "P.qd", "B.q", "B.qd"]
    for block, n in (("A", A_BEAM.n_modes), ("B", B_BEAM.n_modes)):
        names += [f"{block}.eta{i + 1}" for i in range(n)] + [f"{block}.etad{i + 1}" for i in range(n)]
    order = [model.states.index(x) for x in names]
    A, B = model.A[np.ix_(order, order)], model.B[order]
    assert sorted(names) == sorted(model.states)
    assert np.max(np.abs(A - A_sdt)) <= 1e-10 * np.max(np.abs(A_sdt))
    assert np.max(np.abs(B - B_sdt)) <= 1e-10 * np.max(np.abs(B_sdt))
