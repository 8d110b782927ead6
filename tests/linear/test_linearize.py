"""Exact linearization (titop_fmu.linear.linearize) against finite differences of the NumPy
blocks, through the chart written again in tests/support/linear_checks.py: at states that
are not equilibria (moving, spinning, tumbling), on the spacecraft file and on random trees
of every block type; the model's files and names."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io

from linear_checks import fd_model, outputs
from lone_closure import LONE_CLOSURE
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_, TitopError
from titop_fmu.linear import LinearModel, Linearizer, linearize
from titop_fmu.linear.coordinates import resolve_inputs, with_inputs
from titop_fmu.scenarios import balloon
from titop_fmu.spatial import dcm_from_quat, euler_from_dcm
from titop_fmu.titop.monolithic import twin
from tests.physics.test_loop_solve import random_state, random_system

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def assert_matrices_match(model, system, y, rtol=1e-7):
    """``A, B, C, D`` of ``model`` equal to finite differences at ``y`` of the NumPy blocks of
    ``system`` (which must hold a value for every input of the model)."""
    inputs = resolve_inputs(system, model.inputs)
    y0 = outputs(system, y, np.zeros(len(model.states)), model.outputs)
    assert np.abs(model.y0 - y0).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(y0).max(initial=0.0))
    ref = fd_model(system, y, inputs, model.outputs)
    for name, ours, fd in zip("ABCD", (model.A, model.B, model.C, model.D), ref):
        assert ours.shape == fd.shape
        scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
        err = float(np.max(np.abs(ours - fd), initial=0.0))
        assert err <= rtol * scale, f"{name}: {err:.2e} > {rtol:g} * {scale:.3g}"


@pytest.mark.slow
def test_the_spacecraft_moving_near_gimbal_lock_linearizes_to_its_finite_differences():
    """examples/spacecraft.toml at t = 12.24 s: the bus within half a degree of gimbal lock,
    spinning (the co-rotating attitude chart), every joint moving; every input (thrust
    wrench in the body frame, joint efforts) and every recorded output."""
    cs = systemfile.read(ROOT / "examples" / "spacecraft.toml").system
    s = twin(cs)
    y = s.simulate(12.24, 12.24, rtol=1e-11, atol=1e-11).y[-1]
    Theta = euler_from_dcm(dcm_from_quat(y[s.state_slice("bus")][9:13]))
    assert abs(abs(Theta[1]) - np.pi / 2) < np.radians(0.5)             # near gimbal lock
    model = linearize(cs, y)
    assert model.outputs[:17] == cs.recorded[:17] and model.outputs[17:] == (
        [f"bus.com.position[{k}]" for k in (1, 2, 3)] + [f"boom.dcm[{k}]" for k in range(1, 10)]
        + [f"panel.com.velocity[{k}]" for k in range(1, 7)] + [f"slider.c1.position[{k}]" for k in (1, 2, 3)]
        + [f"link3.com.position[{k}]" for k in (1, 2, 3)] + [f"link3.euler[{k}]" for k in (1, 2, 3)])
    assert "bus.ext.w[5]" in model.inputs and "link3.joint.tau" in model.inputs
    system = with_inputs(s, {(b, p) for _, (b, p, _) in resolve_inputs(s, model.inputs)})
    assert_matrices_match(model, system, y)
    assert np.abs(model.xdot0).max() > 0.1                              # not an equilibrium


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_random_trees_linearize_to_their_finite_differences(seed):
    """Floating and imposed-motion bases, welded, revolute and prismatic bodies forward and
    inverse, loop closures, free child wrenches and a constant motion vector as inputs."""
    rng = np.random.default_rng(seed)
    s = random_system(rng, int(rng.integers(5, 10)), "recursive")
    y = 0.3 * random_state(rng, s)
    for name, b in s.blocks.items():
        if b.n_states == 13:
            y[s.state_slice(name)][9:13] /= np.linalg.norm(y[s.state_slice(name)][9:13])
    outputs = [f"{n}.{p}[{k}]" for n, b in s.blocks.items() for p, size in b.outputs_spec.items()
               for k in (1, size) if size > 1][::3]
    bodies = [n for n, b in s.blocks.items() if getattr(b, "body", None) is not None]
    inertial = [f"{bodies[0]}.dcm", f"{bodies[-1]}.com.velocity", f"{bodies[len(bodies) // 2]}.c1.position",
                f"{bodies[1]}.euler[2]", f"{bodies[-2]}.p.position[3]"]
    model = linearize(s, y, outputs=outputs + inertial)
    assert len(model.outputs) == len(outputs) + 9 + 6 + 3 + 1 + 1
    assert any(i.endswith(".m[1]") for i in linearize(s, y, inputs=["closure2.r.m"]).inputs)
    assert_matrices_match(model, s, y, rtol=2e-7)


def test_names_and_sizes():
    model = linearize(balloon.system(), inputs=["balloon.ext.w[2]", "slider.joint.tau"],
                      outputs=["pendulum1.joint.q[3]", "balloon.c1.m"])
    assert model.states[:12] == [f"balloon.{s}" for s in ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "r_x", "r_y",
                                                          "r_z", "rotvec_x", "rotvec_y", "rotvec_z")]
    assert model.states[12:] == ["slider.q", "slider.qd", "pendulum1.q", "pendulum1.qd", "pendulum2.q", "pendulum2.qd"]
    assert model.inputs == ["balloon.ext.w[2]", "slider.joint.tau"]
    assert model.outputs == ["pendulum1.joint.q[3]"] + [f"balloon.c1.m[{k}]" for k in range(1, 19)]
    assert model.A.shape == (18, 18) and model.B.shape == (18, 2) and model.C.shape == (19, 18)
    assert model.y0[0] == pytest.approx(np.radians(170))
    assert "rotvec" in model.chart and len(model.x0_names) == 19


def test_inputs_given_values_set_the_operating_point():
    s = balloon.build()
    at = linearize(s, inputs={"slider.joint.tau": 3.0, "balloon.ext.w": [0, 100, 0, 0, 0, 0]})
    assert at.inputs[0] == "slider.joint.tau" and at.u0.tolist() == [3.0, 0, 100, 0, 0, 0, 0]
    plain = linearize(s, inputs=["balloon.ext.w", "slider.joint.tau"])
    assert plain.u0[1] == pytest.approx(156.96) and plain.u0[6] == 0.0
    assert not np.allclose(at.xdot0, plain.xdot0)
    assert "slider.joint.tau" not in s.values and (("slider", "joint.tau") not in s.values)   # not changed


def test_errors_name_what_is_wrong():
    spacecraft = systemfile.read(ROOT / "examples" / "spacecraft.toml").system
    with pytest.raises(ConnectionError_, match=r"'bus' has no point 'c9'.*points: p, com, c1"):
        linearize(spacecraft, outputs=["bus.c9.position"])
    with pytest.raises(ConnectionError_, match=r"unknown output 'bus.com.positon'.*and a body's inertial"):
        linearize(spacecraft, outputs=["bus.com.positon"])
    s = balloon.build()
    with pytest.raises(ConnectionError_, match=r"unknown input 'balloon.ext.f'.*balloon.ext.w"):
        linearize(s, inputs=["balloon.ext.f"])
    with pytest.raises(ConnectionError_, match=r"unknown output 'slider.joint.q\[4\]'"):
        linearize(s, outputs=["slider.joint.q[4]"])
    with pytest.raises(TitopError, match="the state has 3 values; the system has 19 states"):
        linearize(s, [0.0, 1.0, 2.0])


@pytest.mark.parametrize("suffix", [".mat", ".npz"])
def test_files_keep_the_matrices_and_names(tmp_path, suffix):
    model = linearize(balloon.system())
    path = tmp_path / f"lin{suffix}"
    model.save(path)
    back = LinearModel.load(path)
    for k in ("A", "B", "C", "D", "x0", "u0", "y0", "xdot0"):
        assert np.array_equal(getattr(back, k), getattr(model, k)), k
    assert (back.states, back.inputs, back.outputs, back.x0_names, back.chart) == \
        (model.states, model.inputs, model.outputs, model.x0_names, model.chart)
    if suffix == ".mat":                                   # what MATLAB users load: cell arrays of char
        raw = scipy.io.loadmat(path)
        assert raw["StateName"].dtype == object and raw["StateName"].shape == (18, 1)
        assert str(raw["InputName"][6, 0][0]) == "slider.joint.tau"
    with pytest.raises(TitopError, match="write .mat or .npz"):
        model.save(tmp_path / "lin.txt")


def test_empty_inputs_and_outputs_round_trip(tmp_path):
    model = linearize(balloon.system(), inputs=[], outputs=[])
    for suffix in (".mat", ".npz"):
        model.save(tmp_path / f"e{suffix}")
        back = LinearModel.load(tmp_path / f"e{suffix}")
        assert back.B.shape == (18, 0) and back.C.shape == (0, 18) and back.D.shape == (0, 0)


def test_a_system_without_states_linearizes_to_an_empty_a(tmp_path, capsys):
    """A lone loop closure (no state; it was ValueError: not enough values to unpack): A is 0 x 0,
    and D is the closure's feedthrough, -[D K] from the left part's twist and pose (its wrench
    -K (x_l - x_r) - D (v_l - v_r)), nothing from its accelerations."""
    from titop_fmu.cli import main
    (tmp_path / "lone.toml").write_text(LONE_CLOSURE)
    out = tmp_path / "lone.npz"
    assert main(["linearize", str(tmp_path / "lone.toml"), "--inputs", "lc.l.m", "--out", str(out)]) == 0
    assert "0 states, 0 zero eigenvalue(s)" in capsys.readouterr().out
    model = LinearModel.load(out)
    assert model.A.shape == (0, 0) and model.B.shape == (0, 18) and model.C.shape == (12, 0)
    K, D = np.diag([100.0] * 3 + [10.0] * 3), np.eye(6)
    assert np.array_equal(model.D[:6, :6], np.zeros((6, 6)))
    assert np.array_equal(model.D[:6, 6:], -np.hstack([D, K]))
    for cols in (slice(6, 9), slice(12, 15)):                      # the forces on the two parts: opposite
        assert np.array_equal(model.D[6:9, cols], -model.D[:3, cols])
    assert model.y0[:6] == pytest.approx([-1, 0, 0, 0, 0, 0]) and model.y0[6:] == pytest.approx([1, 0, 0, 0, 0, 0])
    assert main(["linearize", str(tmp_path / "lone.toml"), "--trim", "--out", str(out), "--quiet"]) == 0


def test_python_control_state_space_carries_the_names():
    control = pytest.importorskip("control")
    model = linearize(balloon.system(), inputs=["slider.joint.tau"], outputs=["slider.joint.q[3]"])
    sys = model.to_control()
    assert isinstance(sys, control.StateSpace)
    assert sys.state_labels == [n.replace(".", "_") for n in model.states]     # python-control reserves '.'
    assert sys.input_labels == ["slider_joint_tau"] and sys.output_labels == ["slider_joint_q[3]"]
    assert np.allclose(np.sort_complex(sys.poles()), np.sort_complex(model.eigenvalues))


def test_python_control_names_are_one_to_one():
    """'.' written '_', nothing else (docs/linear-models.md); two names written the same refused."""
    from titop_fmu.errors import TitopError
    from titop_fmu.linear.model import control_names
    assert control_names(["bus.ext.w[2]", "bus.rotvec_x"]) == ["bus_ext_w[2]", "bus_rotvec_x"]
    with pytest.raises(TitopError, match=r"a_b.c, a.b_c are all 'a_b_c' for python-control"):
        control_names(["a_b.c", "x.y", "a.b_c"])


def test_a_linearizer_is_reused_along_input_values():
    lin = Linearizer(balloon.build(), ["balloon.ext.w[2]"], [])
    a = lin.at(lin.system.initial_state(), outputs=False)
    lin.set_inputs([0.0])
    b = lin.at(lin.system.initial_state(), outputs=False)
    assert b["xdot"][1] == pytest.approx(a["xdot"][1] - 156.96 * a["B"][1, 0], abs=1e-12)   # affine in ext.w
