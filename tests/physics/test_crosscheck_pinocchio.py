"""TITOP in-process balloon against an independent engine (Pinocchio, optional extra)."""

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from titop_fmu.scenarios import balloon  # noqa: E402
from titop_fmu.spatial import dcm_from_quat  # noqa: E402
from titop_fmu.titop import monolithic  # noqa: E402
from validation.engines import pinocchio_balloon as pb  # noqa: E402

JOINTS = ("slider", "pendulum1", "pendulum2")


def test_accelerations_agree_at_random_states():
    s = balloon.build()
    rng = np.random.default_rng(3)
    y0 = s.initial_state()
    worst = 0.0
    for _ in range(20):
        y = y0.copy()
        q = rng.standard_normal(4)
        y[s.state_slice("balloon")] = np.concatenate([rng.standard_normal(9), q / np.linalg.norm(q)])
        for n in JOINTS:
            q_range = 0.5 if n == "slider" else np.pi
            y[s.state_slice(n)] = [rng.uniform(-q_range, q_range), 2.0 * rng.standard_normal()]
        ydot = s.rhs(0.0, y)
        b = y[s.state_slice("balloon")]
        jq = np.array([y[s.state_slice(n)] for n in JOINTS])
        vd, wd, qdd = pb.accelerations(pb.DEFAULTS, b[6:9], dcm_from_quat(b[9:13]), b[0:3], b[3:6],
                                       jq[:, 0], jq[:, 1])
        mine = np.concatenate([ydot[s.state_slice("balloon")][0:6], [ydot[s.state_slice(n)][1] for n in JOINTS]])
        worst = max(worst, np.max(np.abs(mine - np.concatenate([vd, wd, qdd]))))
    print(f"\n[crosscheck] TITOP vs Pinocchio ABA, 20 random balloon states: max acceleration difference "
          f"{worst:.2e}")
    assert worst <= 1e-9


@pytest.mark.slow
def test_trajectories_agree(balloon_run):
    s, tr = balloon_run
    ref = pb.simulate(None, t_stop=5.0, dt=0.01)
    mine = balloon.columns(s, tr.y[:501])
    theirs = np.column_stack([ref[c] for c in balloon.COLUMNS[1:]])
    assert np.max(np.abs(mine - theirs)) <= 1e-6


@pytest.mark.slow
def test_inertial_outputs_agree_with_pinocchio_frames():
    """The balloon's pendulum tip P2 and the point P1 in R_i, pendulum 2's DCM and the tip's
    velocity [v; omega] in R_i, recorded by the in-process engine (from the blocks' outputs at
    its states), against Pinocchio's frame placements and velocities at its own states, both
    integrated at 1e-12 over 20 s: within 1e-10 (measured 3.5e-13 m on the positions)."""
    cs = balloon.system()
    cs.recorded[:] = ["pendulum2.com.position", "pendulum1.com.position", "pendulum2.dcm", "pendulum2.com.velocity"]
    t, mine = monolithic.simulate(cs, 20.0, 0.01)
    ref = pb.simulate(None, t_stop=20.0, dt=0.01, full=True)
    assert np.allclose(t, ref["t"], rtol=0, atol=1e-12)
    theirs = []
    for state in ref["state"]:
        tip, R, v = pb.frame_motion(None, state, "tip")
        theirs.append(np.concatenate([tip, pb.frame_motion(None, state, "P1")[0], R.ravel(), v]))
    err = np.abs(mine - np.array(theirs)).max(axis=0)
    print(f"\n[crosscheck] inertial outputs vs Pinocchio frames, 20 s: tip {err[0:3].max():.2e} m, "
          f"P1 {err[3:6].max():.2e} m, DCM {err[6:15].max():.2e}, velocity {err[15:21].max():.2e}")
    assert np.ptp(mine[:, 0:3], axis=0).min() > 0.1                  # the tip moves in every direction
    assert err[0:6].max() <= 1e-10 and err[6:15].max() <= 1e-10 and err[15:21].max() <= 1e-10
