"""A TITOP system as a python-control nonlinear I/O system: closed by a python-control
controller (control.interconnect) and simulated by control.input_output_response, against
the same loop closed in a system file and run in process; its linearization by
python-control against ours."""

from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.linear import linearize, trim
from titop_fmu.linear.control_io import nonlinear_io
from titop_fmu.titop import monolithic

ct = pytest.importorskip("control")
SYSTEM = Path(__file__).resolve().parent / "systems" / "balloon_gain.toml"
K = np.array([[-20.0, -8.0, 0.0, 0.0], [0.0, 0.0, -15.0, -6.0]])
SENSED = ["pendulum1.joint.q[3]", "pendulum1.joint.q[2]", "pendulum2.joint.q[3]", "pendulum2.joint.q[2]"]
TORQUES = ["pendulum1.joint.tau", "pendulum2.joint.tau"]


def plant():
    cs = systemfile.read(SYSTEM).system
    del cs.units["K"]
    cs.connections = [c for c in cs.connections if not (c[0].startswith("K.") or c[1].startswith("K."))]
    for name in TORQUES:
        cs.set_input(name, 0.0)
    return cs


def test_closed_by_python_control_as_in_a_system_file():
    """The balloon plant closed by ``ct.ss`` of the same gain, simulated by python-control
    (DOP853 at 1e-11): the pendulums' angles within 1e-6 of the file's closed loop in process."""
    sys = nonlinear_io(plant(), TORQUES, SENSED, name="plant")
    gain = ct.ss([], [], [], K, inputs=[s.replace(".", "_") for s in SENSED],
                 outputs=[s.replace(".", "_") for s in TORQUES], name="gain")
    loop = ct.interconnect([sys, gain], inputs=[], outputs=[s.replace(".", "_") for s in SENSED])
    t = np.linspace(0, 3, 301)
    res = ct.input_output_response(loop, t, 0, sys.x0, t_eval=t,
                                   solve_ivp_method="DOP853", solve_ivp_kwargs=dict(rtol=1e-11, atol=1e-11))
    _, values = monolithic.run(systemfile.read(SYSTEM).system, 3.0, 0.01)
    np.testing.assert_allclose(res.outputs[[0, 2]].T, values[:, [1, 2]], rtol=0, atol=1e-6)
    assert np.max(np.abs(values[:, 1])) > 0.01


def test_python_controls_linearization_agrees_with_ours():
    """``ct.linearize`` (finite differences, the system's own states: a quaternion) and ours
    (exact, minimal coordinates) at the trimmed equilibrium: the same non-zero eigenvalues."""
    cs = plant()
    eq = trim(cs)
    ours = linearize(cs, eq.state, TORQUES, SENSED)
    sys = nonlinear_io(cs, TORQUES, SENSED)
    theirs = ct.linearize(sys, eq.state, [0.0, 0.0], eps=1e-7)
    a = np.sort_complex(ours.eigenvalues[np.abs(ours.eigenvalues) > 1e-6])
    b = np.sort_complex(np.linalg.eigvals(theirs.A)[np.abs(np.linalg.eigvals(theirs.A)) > 1e-4])
    assert len(a) == len(b) == 10
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    # and the input and output matrices along the joints (the same coordinates there)
    i = [ours.states.index(n) for n in ("pendulum1.q", "pendulum1.qd", "pendulum2.q", "pendulum2.qd")]
    j = [sys.state_labels.index(n) for n in ("pendulum1_q", "pendulum1_qd", "pendulum2_q", "pendulum2_qd")]
    np.testing.assert_allclose(theirs.B[j], ours.B[i], atol=1e-6)
    np.testing.assert_allclose(theirs.C[:, j], ours.C[:, i], atol=1e-6)


def test_fed_inputs_are_not_free():
    with pytest.raises(ConnectionError_, match="fed by a connection or a signal|not a free input"):
        nonlinear_io(systemfile.read(SYSTEM).system, ["pendulum1.joint.tau"], SENSED)
