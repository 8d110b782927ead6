"""TITOP in-process balloon against an independent engine (Pinocchio, optional extra)."""

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from titop_fmu.scenarios import balloon  # noqa: E402
from titop_fmu.spatial import dcm_from_quat  # noqa: E402
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


def test_trajectories_agree(balloon_run):
    s, tr = balloon_run
    ref = pb.simulate(None, t_stop=5.0, dt=0.01)
    mine = balloon.columns(s, tr.y[:501])
    theirs = np.column_stack([ref[c] for c in balloon.COLUMNS[1:]])
    assert np.max(np.abs(mine - theirs)) <= 1e-6
