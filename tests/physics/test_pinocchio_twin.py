"""The Pinocchio twin of any system file (validation/engines/pinocchio_titop.py) against the
hand-built Pinocchio balloon (validation/engines/pinocchio_balloon.py) and against the
TITOP blocks, at random states: forward dynamics, and its linearization against
differences of its own ABA."""

import sys
from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cosim import systemfile
from titop_fmu.scenarios import balloon
from titop_fmu.titop.monolithic import twin
from tests.physics.test_loop_solve import random_state

pin = pytest.importorskip("pinocchio")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from validation.engines import pinocchio_balloon as pb  # noqa: E402
from validation.engines.pinocchio_titop import PinocchioTwin  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def test_the_balloons_twin_is_the_hand_built_balloon():
    tw = PinocchioTwin(balloon.system())
    rng = np.random.default_rng(0)
    for _ in range(10):
        r, P, vb, wb, q, qd = (rng.normal(size=3), pin.exp3(rng.normal(size=3)), rng.normal(size=3),
                               rng.normal(size=3), rng.normal(size=3), rng.normal(size=3))
        states = {"balloon": np.concatenate([vb, wb, r, pb._dcm_to_quat(P)]), "slider": [q[0], qd[0]],
                  "pendulum1": [q[1], qd[1]], "pendulum2": [q[2], qd[2]]}
        ref = np.concatenate(pb.accelerations(None, r, P, vb, wb, q, qd))
        assert np.abs(tw.accelerations(*tw.configuration(states)) - ref).max() <= 1e-12 * max(1, np.abs(ref).max())
        at_rest = {"balloon": np.concatenate([np.zeros(6), r, pb._dcm_to_quat(P)]),
                   **{j: [q[i], 0.0] for i, j in enumerate(("slider", "pendulum1", "pendulum2"))}}
        A = tw.linearization(*tw.configuration(at_rest))
        B = pb.linearization(None, r, P, np.zeros(3), np.zeros(3), q, np.zeros(3))
        assert np.abs(A - B).max() <= 1e-10 * np.abs(B).max()


@pytest.mark.parametrize("name", ["spacecraft.toml", "two_branch.toml", "spacecraft_hover.toml"])
def test_system_files_twins_equal_the_titop_blocks(name):
    cs = systemfile.read(ROOT / "examples" / name).system
    tw, s = PinocchioTwin(cs), twin(cs)
    rng = np.random.default_rng(1)
    for _ in range(5):
        y = random_state(rng, s)
        ydot = s.rhs(0.0, y)
        a = tw.accelerations(*tw.configuration({n: y[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states}))
        ours = np.concatenate([ydot[s.state_slice(u)][0:6] if kind == "floating_base" else ydot[s.state_slice(u)][1:2]
                               for u, (kind, _, _) in tw.joints.items()])
        assert np.abs(a - ours).max() <= 1e-11 * max(1.0, np.abs(ours).max())


def test_the_twins_linearization_is_the_derivative_of_its_aba():
    """At rest, the columns of ``A`` equal central differences of the twin's own ABA along
    ``integrate(q, dq)`` and ``v`` (springs, dampers, the turning thrust included)."""
    cs = systemfile.read(ROOT / "examples" / "spacecraft_hover.toml").system
    tw, s = PinocchioTwin(cs), twin(cs)
    y = s.initial_state()
    q, v = tw.configuration({n: y[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states})
    A = tw.linearization(q, v)
    nv, h = tw.model.nv, 1e-6
    for j in range(2 * nv):
        d = np.zeros(2 * nv)
        d[j] = h
        plus = tw.accelerations(pin.integrate(tw.model, q, d[:nv]), v + d[nv:])
        minus = tw.accelerations(pin.integrate(tw.model, q, -d[:nv]), v - d[nv:])
        assert np.abs(A[nv:, j] - (plus - minus) / (2 * h)).max() <= 1e-6 * max(1.0, np.abs(A).max()), j
