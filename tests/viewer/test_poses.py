"""Where the 3-D view puts the bodies, against independent computations: Pinocchio's frame
placements of the balloon, a pendulum's hand geometry, the blocks' own motion outputs on
systems with mount angles, oblique axes and prismatic joints; the data written in the HTML,
decoded; what a run must record."""

import copy
from pathlib import Path

import numpy as np
import pytest

from browser import scene_of
from titop_fmu.cli import main
from titop_fmu.cosim import CoSystem, systemfile
from titop_fmu.errors import TitopError
from titop_fmu.io import read_result
from titop_fmu.scenarios import balloon
from titop_fmu.spatial import Rz, dcm_from_euler, inertial_position
from titop_fmu.titop import monolithic
from titop_fmu.titop.records import Records
from titop_fmu.viewer import Animation, poses, scene

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

PENDULUM = """
record = ["arm.joint.q[3]"]
[units.arm]
model = "revolute_c0"
mass = 2.0
inertia = [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]
com = [0.0, -1.5, 0.0]
axis = [0.0, 0.0, 1.0]
q0 = "60 deg"
[inputs]
# a fixed support: its point at [1, 2, 0.5] in its own frame, turned by psi = 0.3 rad about z
"arm.p.m" = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 2.0, 0.5, 0, 0, 0.3]
"""


def decoded(body: dict, data: dict) -> tuple:
    """``(t, positions (n, 3), DCMs (n, 3, 3))`` of a body in a view's scene JSON."""
    t = np.cumsum(data["t"]) * data["t_quantum"]
    p = np.cumsum(np.array(body["p"], dtype=float), axis=1).T * data["p_quantum"]
    q = np.cumsum(np.array(body["q"], dtype=float), axis=1).T * data["q_quantum"]
    q /= np.linalg.norm(q, axis=1)[:, None]
    w, x, y, z = q.T
    R = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                  2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                  2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=1).reshape(-1, 3, 3)
    return t, p, R


def pinocchio_frames(cols):
    """Pinocchio's placement ``(R, p)`` of the pendulum-2 joint frame (at P1) for the balloon
    columns ``x..theta2`` (``validation/engines/pinocchio_balloon.py``: its own model)."""
    pin = pytest.importorskip("pinocchio")
    from validation.engines import pinocchio_balloon as pb
    model = pb.build_model()
    data = model.createData()
    out = []
    for row in cols:
        x, y, z, w = pin.Quaternion(dcm_from_euler(row[3:6])).coeffs()
        pin.forwardKinematics(model, data, np.concatenate([row[0:3], [x, y, z, w], row[6:9]]))
        out.append((data.oMi[4].rotation.copy(), data.oMi[4].translation.copy()))
    return np.array([r for r, _ in out]), np.array([p for _, p in out])


def test_the_balloon_pendulum_tip_is_where_pinocchio_puts_it(balloon_run):
    s, tr = balloon_run
    cols = balloon.columns(s, tr.y[::50])
    R_pin, p_pin = pinocchio_frames(cols)
    placed = poses.poses(poses.model(balloon.system()), balloon.motion_outputs(cols))
    R, p = placed["pendulum2"]
    P1P2 = np.array(balloon.DEFAULTS["P1P2"])
    tip = p + np.einsum("kij,j->ki", R, P1P2)
    tip_pin = p_pin + np.einsum("kij,j->ki", R_pin, P1P2)
    assert np.max(np.abs(R - R_pin)) <= 1e-12
    assert np.max(np.abs(p - p_pin)) <= 1e-12
    assert np.max(np.abs(tip - tip_pin)) <= 1e-12
    assert np.ptp(tip, axis=0).max() > 1.0                     # the tip moves: a test that can fail


def test_the_system_file_route_agrees_with_pinocchio(tmp_path):
    """examples/balloon.toml through the generic outputs (the bodies' own c1.m, the joints)."""
    cs = systemfile.read(EXAMPLES / "balloon.toml").system
    m = poses.model(cs)
    run = copy.copy(cs)
    run.recorded = poses.needed(m)
    tr, values = monolithic.run(run, 3.0, 0.1)
    placed = poses.poses(m, dict(zip(run.recorded, values.T)))
    R_pin, p_pin = pinocchio_frames(balloon.columns(tr.system, tr.y))
    assert np.max(np.abs(placed["pendulum2"][0] - R_pin)) <= 1e-12
    assert np.max(np.abs(placed["pendulum2"][1] - p_pin)) <= 1e-12


def test_the_written_view_holds_the_frames_to_its_quantum(balloon_run, tmp_path):
    s, tr = balloon_run
    out = tmp_path / "view.html"
    anim = Animation(out, balloon.system(), "balloon")
    anim.write_balloon(tr.t, balloon.columns(s, tr.y))
    data = scene_of(out)
    body = next(b for b in data["bodies"] if b["name"] == "pendulum2")
    t, p, R = decoded(body, data)
    rows = np.searchsorted(tr.t, t - 1e-9)
    assert np.allclose(tr.t[rows], t, atol=1e-6)
    R_pin, p_pin = pinocchio_frames(balloon.columns(s, tr.y[rows]))
    assert np.max(np.abs(p - p_pin)) <= data["p_quantum"]          # rounded to its quantum
    assert np.max(np.abs(R - R_pin)) <= 5 * data["q_quantum"]
    assert np.max(np.diff(t)) <= 0.02 + 1e-9 and np.min(np.diff(t)) >= 1 / scene.FPS - 1e-9
    assert out.stat().st_size < 150_000


@pytest.mark.slow
def test_attitudes_are_written_without_sign_jumps(tmp_path):
    """Quaternions of consecutive samples on the same side (the viewer interpolates between
    them): the spacecraft's link3 turns several times."""
    cs = systemfile.read(EXAMPLES / "spacecraft.toml").system
    anim = Animation(tmp_path / "v.html", cs, "spacecraft")
    anim.write_twin(monolithic.run(cs, 10.0, 0.01)[0])
    data = scene_of(tmp_path / "v.html")
    link3 = next(b for b in data["bodies"] if b["name"] == "link3")
    q = np.cumsum(np.array(link3["q"], dtype=float), axis=1).T * data["q_quantum"]
    assert np.min(np.sum(q[1:] * q[:-1], axis=1)) > 0.9
    assert np.min(q[:, 0]) < -0.5                               # w changed sign: turned past pi


def test_a_pendulum_on_a_turned_support_by_hand(tmp_path):
    path = tmp_path / "pendulum.toml"
    path.write_text(PENDULUM)
    cs = systemfile.read(path).system
    tr, values = monolithic.run(cs, 2.0, 0.05)
    q = values[:, 0]
    R, p = poses.poses(poses.model(cs), {"arm.joint.q[3]": q})["arm"]
    pivot = Rz(0.3) @ [1.0, 2.0, 0.5]
    tip = p + np.einsum("kij,j->ki", R, [0.0, -1.5, 0.0])
    hand = pivot + 1.5 * np.column_stack([np.sin(q + 0.3), -np.cos(q + 0.3), np.zeros_like(q)])
    assert np.max(np.abs(p - pivot)) <= 1e-14
    assert np.max(np.abs(tip - hand)) <= 1e-14
    assert np.ptp(q) > 1.0


@pytest.mark.parametrize("name", ["spacecraft.toml", "two_branch.toml"])
def test_forward_kinematics_equals_the_blocks_own_outputs(name):
    """Mount angles, oblique axes, a prismatic rail, a welded boom, a spinning joint: each body
    placed from its parent and its joint equals its own motion outputs (every ``ci.m``, the
    base's ``p.m``), the blocks' kinematics."""
    cs = systemfile.read(EXAMPLES / name).system
    m = poses.model(cs)
    fk = poses.needed(m)
    own = [f"{n}.{port}[{k}]" for n, b in m.bodies.items() for port in b.motion_ports() for k in poses.POSE]
    run = copy.copy(cs)
    run.recorded = fk + own
    tr, values = monolithic.run(run, 4.0, 0.1)
    columns = dict(zip(run.recorded, values.T))
    by_fk = poses.poses(m, {k: columns[k] for k in fk})
    checked = 0
    for n, b in m.bodies.items():
        for port in b.motion_ports():                                   # each output on its own
            by_port = poses.poses(poses.Model({n: b}, [], {}),
                                  {k: columns[k] for k in poses.pose_labels(n, port)})[n]
            assert np.max(np.abs(by_fk[n][0] - by_port[0])) <= 1e-12, (n, port)
            assert np.max(np.abs(by_fk[n][1] - by_port[1])) <= 1e-11, (n, port)
            checked += 1
    assert checked >= 5
    # and the points: the position of a child point is what spatial.inertial_position reads
    b = m.bodies[next(n for n, b in m.bodies.items() if b.children and b.joint != "base")]
    y = tr.system.outputs(tr.y[-1])[b.name]["c1.m"]
    R, p = by_fk[b.name]
    assert np.allclose(p[-1] + R[-1] @ b.children[0], inertial_position(y), rtol=0, atol=1e-12)


def test_what_a_run_must_record():
    cs = systemfile.read(EXAMPLES / "balloon.toml").system
    m = poses.model(cs)
    joints = [f"{n}.joint.q[3]" for n in ("slider", "pendulum1", "pendulum2")]
    assert poses.needed(m) == [f"balloon.p.m[{k}]" for k in range(13, 19)] + joints
    # the file records the joints and the balloon's attitude, not its position: the pose is added
    assert Animation("x.html", cs, "x").extra() == [f"balloon.p.m[{k}]" for k in range(13, 19)]
    cs.record("balloon.c1.m")                   # a whole motion port places the balloon
    assert poses.needed(m, Records(cs).labels) == []


def test_a_csv_without_the_placing_outputs_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "run.csv").write_text("t,arm.joint.q[2]\n0,0\n0.1,0.1\n")
    path = tmp_path / "pendulum.toml"
    path.write_text(PENDULUM)
    assert main(["animate", str(path), str(tmp_path / "run.csv"), "--out", str(tmp_path / "v.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("titop-fmu: error:") and "\n" not in err
    assert "arm.joint.q[3]" in err and "leave out" in err
    assert not (tmp_path / "v.html").exists()


@pytest.mark.parametrize("spec, message", [
    ("nobody", "no body 'nobody'; bodies: balloon, slider, pendulum1, pendulum2"),
    ("pendulum2.c1", "pendulum2 has no point 'c1'; points: com, p"),
])
def test_a_bad_trace_is_one_line_before_the_run(spec, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("titop_fmu.system.System.simulate", lambda *a, **k: pytest.fail("a run started"))
    assert main(["animate", "balloon", "--trace", spec, "--out", str(tmp_path / "v.html")]) == 2
    assert message in capsys.readouterr().err


def test_frames_are_sampled_for_the_eye():
    t = np.linspace(0, 20, 2001)
    k = scene.frames(t)
    assert k[0] == 0 and k[-1] == 2000 and np.min(np.diff(t[k])) >= 1 / 60 - 1e-12
    long = np.linspace(0, 1000, 100_001)
    assert len(scene.frames(long)) <= scene.MAX_FRAMES
    assert list(scene.frames(np.array([0.0]))) == [0]


def test_the_equivalent_box_has_the_inertia():
    m, h = 3.0, np.array([0.5, 0.2, 0.1])
    I = m / 3 * np.diag([h[1] ** 2 + h[2] ** 2, h[0] ** 2 + h[2] ** 2, h[0] ** 2 + h[1] ** 2])
    Q = dcm_from_euler([0.3, -0.2, 1.0])
    half, axes = scene.equivalent_box(m, Q @ I @ Q.T)
    order = np.argsort(half)
    assert np.allclose(half[order], np.sort(h))
    assert np.allclose(np.abs(axes[:, order[::-1]].T @ Q), np.eye(3), atol=1e-12)


def test_a_run_without_csv_is_refused_to_read(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    with pytest.raises(TitopError, match="not a result CSV"):
        read_result(bad)


def undrawable_view(path):
    """A view of a system with a unit that is an FMU file and a body linked below it."""
    cs = CoSystem()
    cs.add("base", "floating_base_c1", mass=2.0, inertia=np.eye(3))
    cs.add("ext", "other.fmu")
    cs.add("arm", "revolute_c0", com=[0.0, -1.0, 0.0])
    cs.link("ext.c1", "arm.p")
    Animation(path, cs, "x").write([0.0, 0.1], {f"base.p.m[{k}]": [0.0, 0.1] for k in range(13, 19)})
    return path


def test_units_the_view_cannot_draw_are_named_in_it(tmp_path):
    data = scene_of(undrawable_view(tmp_path / "v.html"))
    assert [b["name"] for b in data["bodies"]] == ["base"]
    assert data["notes"] == ["ext: not drawn: not a TITOP block (an FMU file or a function)",
                             "arm: not drawn: its parent is not a TITOP body and it has no motion output"]


@pytest.mark.parametrize("name", ["spacecraft.toml", "two_branch.toml"])
def test_a_recorded_inertial_pose_places_a_body_as_its_motion_does(name):
    """Each body placed from the position of one of its points and its attitude as a run records
    them in the inertial frame (its centre of mass with its DCM, its port point or a child point
    with its Euler angles) equals its forward kinematics from the joints."""
    cs = systemfile.read(EXAMPLES / name).system
    m = poses.model(cs)
    fk = poses.needed(m)
    recorded = []
    for k, (n, b) in enumerate(m.bodies.items()):
        point = list(b.points())[k % len(b.points())]
        recorded += [f"{n}.{point}.position", f"{n}.{'dcm' if k % 2 else 'euler'}"]
    run = copy.copy(cs)
    run.recorded = fk + recorded
    _, values = monolithic.run(run, 4.0, 0.1)
    columns = dict(zip(Records(run).labels, values.T))
    by_fk = poses.poses(m, {k: columns[k] for k in fk})
    inertial = {k: v for k, v in columns.items() if k not in fk}
    rules, missing = poses.rules(m, inertial)
    assert not missing and {r[0] for r in rules.values()} == {"inertial"}
    by_record = poses.poses(m, inertial)
    for n in m.bodies:
        assert np.max(np.abs(by_fk[n][0] - by_record[n][0])) <= 1e-12, n
        assert np.max(np.abs(by_fk[n][1] - by_record[n][1])) <= 1e-11 * max(1.0, np.abs(by_fk[n][1]).max()), n


def test_animate_takes_a_csv_with_the_bus_centre_of_mass_and_dcm(tmp_path, capsys):
    """The spacecraft's CSV records its bus's centre of mass and DCM (not its p.m) and its
    joints: `animate` draws it (it refused before), the bus where its p.m puts it."""
    text = (EXAMPLES / "spacecraft.toml").read_text()
    start = text.index("record = [")
    end = text.index("]\n", start) + 2
    joints = ", ".join(f'"{n}.joint.q[3]"' for n in ("panel", "slider", "link1", "link2", "link3"))
    path = tmp_path / "sc.toml"
    path.write_text(text[:start] + f'record = ["bus.com.position", "bus.dcm", {joints}]\n' + text[end:])
    run = tmp_path / "sc.csv"
    assert main(["simulate", str(path), "--stop", "2", "--out", str(run), "--quiet"]) == 0
    assert main(["animate", str(path), str(run), "--out", str(tmp_path / "v.html"), "--quiet"]) == 0
    data = scene_of(tmp_path / "v.html")
    cs = systemfile.read(path).system
    cs.recorded[:] = [f"bus.p.m[{k}]" for k in range(13, 19)]
    _, values = monolithic.run(cs, 2.0, 0.01)
    t, p, R = decoded(data["bodies"][0], data)
    rows = np.searchsorted(np.arange(len(values)) * 0.01, t - 1e-9)
    truth = np.array([inertial_position(np.r_[np.zeros(12), v]) for v in values[rows]])
    assert np.abs(p - truth).max() <= 2 * data["p_quantum"]
