"""Self-checks of the independent Pinocchio reference of the balloon system."""

import sys
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")
pytest.importorskip("scipy")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from validation.engines import pinocchio_balloon as pb  # noqa: E402

UNDAMPED = {"d_s": 0.0, "d_p1": 0.0, "d_p2": 0.0}


def _run(params=None, t_stop=5.0):
    out = pb.simulate(params, t_stop=t_stop, dt=0.01, full=True)
    return [pb.unpack(y) for y in out["state"]]


def _random_states(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield (rng.normal(size=3), pin.exp3(rng.normal(size=3)), rng.normal(size=3),
               rng.normal(size=3), rng.normal(size=3), rng.normal(size=3))


def test_kinematics_match_spec():
    """Point positions from the Pinocchio tree equal the hand-written chain."""
    ctx = pb._context(None)
    data = ctx.model.createData()
    Rz = lambda a: pin.AngleAxis(a, np.array([0.0, 0.0, 1.0])).matrix()
    t = np.array([1.0, 0.0, -1.0]) / np.sqrt(2.0)
    for r, P, *_ , q, _qd in _random_states(5):
        pin.forwardKinematics(ctx.model, data, pb._pin_q(r, pb._dcm_to_quat(P), q))
        S = r + P @ (np.array([0.0, -2.0, 0.0]) + q[0] * t)
        P1 = S + P @ Rz(q[1]) @ np.array([0.0, -1.2, 0.0])
        P2 = P1 + P @ Rz(q[1] + q[2]) @ np.array([0.0, -1.6, 0.0])
        for jid, point in ((2, S), (3, S), (4, P1)):
            assert np.allclose(data.oMi[jid].translation, point, atol=1e-12)
        assert np.allclose(data.oMi[4].act(np.array([0.0, -1.6, 0.0])), P2, atol=1e-12)


@pytest.mark.slow
def test_center_of_mass_fixed():
    states = _run()
    com = np.array([pb.center_of_mass(None, r, P, q) for r, P, _v, _w, q, _qd in states])
    drift = np.abs(com - com[0]).max()
    print(f"COM drift over 5 s: {drift:.3e} m")
    assert drift <= 1e-8


@pytest.mark.slow
def test_energy_conserved_without_damping():
    states = _run(UNDAMPED)
    E = np.array([pb.energy(UNDAMPED, *s) for s in states])
    rel = np.abs(E - E[0]).max() / abs(E[0])
    print(f"undamped: E0 = {E[0]:.6f} J, max relative drift {rel:.3e}")
    assert rel <= 1e-8


@pytest.mark.slow
def test_energy_never_increases_with_damping():
    states = _run()
    E = np.array([pb.energy(None, *s) for s in states])
    print(f"damped: E0 = {E[0]:.6f} J, E(5 s) = {E[-1]:.6f} J, "
          f"max step increase {np.diff(E).max():.3e} J")
    assert np.diff(E).max() <= 1e-10
    assert E[-1] < E[0]


def test_aba_matches_rnea():
    """RNEA with the ABA accelerations gives zero base wrench and the joint laws."""
    ctx = pb._context(None)
    data = ctx.model.createData()
    worst = 0.0
    for r, P, v, w, q, qd in _random_states(20, seed=1):
        vd, wd, qdd = pb.accelerations(None, r, P, v, w, q, qd)
        qpin = pb._pin_q(r, pb._dcm_to_quat(P), q)
        tau = pin.rnea(ctx.model, data, qpin, np.r_[v, w, qd], np.r_[vd, wd, qdd], ctx.fext(P))
        expected = np.r_[np.zeros(6), ctx.joint_torques(q, qd)]
        worst = max(worst, np.abs(tau - expected).max())
    print(f"max |RNEA(ABA) - applied|: {worst:.3e}")
    assert worst <= 1e-10


def test_free_flyer_ddq_is_body_frame_derivative():
    """ABA's base ddq is d[v_B]_Rb/dt, d[omega]_Rb/dt (not P^T a_B).

    Propagate (q, v) by +-h with that reading and finite-difference the
    total linear momentum m*v_G (computed from positions and velocities
    only).  The net external force is zero, so d(m v_G)/dt must vanish; the
    "classical" reading vdot_b = P^T a_B - w x v does not make it vanish.
    """
    ctx = pb._context(None)
    data = ctx.model.createData()
    m_tot = sum(ctx.p[k] for k in ("m_B", "m_S", "m_P1", "m_P2"))
    h = 1e-5

    def momentum(r, P, v, w, q, qd):
        pin.centerOfMass(ctx.model, data, pb._pin_q(r, pb._dcm_to_quat(P), q), np.r_[v, w, qd])
        return m_tot * data.vcom[0].copy()

    def dmomentum(state, vdot, wdot, qdd):
        r, P, v, w, q, qd = state
        ends = [momentum(r + s * P @ v, P @ pin.exp3(s * w), v + s * vdot, w + s * wdot,
                         q + s * qd, qd + s * qdd) for s in (h, -h)]
        return (ends[0] - ends[1]) / (2 * h)

    for state in _random_states(5, seed=2):
        vd, wd, qdd = pb.accelerations(None, *state)
        local = np.abs(dmomentum(state, vd, wd, qdd)).max()
        classical = np.abs(dmomentum(state, vd - np.cross(state[3], state[2]), wd, qdd)).max()
        print(f"d(m v_G)/dt: body-derivative reading {local:.2e}, classical reading {classical:.2e}")
        assert local <= 1e-6
        assert classical >= 1e-2
