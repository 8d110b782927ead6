"""A mode of a linear model in the 3-D view (titop-fmu animate --mode N, linearize --animate):
the shape against the closed form of a double pendulum, the amplitude to scale, the page in a
browser, careless input in one line."""

import numpy as np
import pytest

from browser import dom, scene_of, screenshot
from test_browser import loaded, no_messages
from test_poses import decoded
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.linear import linearize
from titop_fmu.titop.monolithic import twin
from titop_fmu.viewer import modes, poses

#: a double pendulum of two point masses m on massless links l, hung from a fixed base
DOUBLE = """
links = [["base.c1", "upper.p"], ["upper.c1", "lower.p"]]
record = ["upper.joint.q[3]", "lower.joint.q[3]"]
[units.base]
model = "imposed_motion_base_c1"
mass = 1.0
inertia = [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]
com = [0.0, 0.0, 0.0]
"c1.r" = [0.0, 0.0, 0.0]
[units.upper]
model = "revolute_c1"
mass = 2.0
inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
com = [0.0, -0.8, 0.0]
"c1.r" = [0.0, -0.8, 0.0]
axis = [0.0, 0.0, 1.0]
[units.lower]
model = "revolute_c0"
mass = 2.0
inertia = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
com = [0.0, -0.8, 0.0]
axis = [0.0, 0.0, 1.0]
[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
"""


@pytest.fixture
def double(tmp_path):
    path = tmp_path / "double.toml"
    path.write_text(DOUBLE)
    return path


@pytest.mark.parametrize("number, ratio", [(1, np.sqrt(2)), (2, -np.sqrt(2))])
def test_a_double_pendulums_modes_move_as_the_closed_form_says(double, number, ratio):
    """Equal point masses m on equal links l, in the links' absolute angles theta: M = m l^2
    [[2, 1], [1, 1]], K = m g l [[2, 0], [0, 1]], so w^2 = (2 -/+ sqrt 2) g / l and theta2 /
    theta1 = +/- sqrt 2 (the lower joint's angle is relative: theta2 = q1 + q2). The motion
    shown keeps that ratio at every sample; the frequency in its title is the closed form's;
    the largest displacement of a point is a tenth of the pendulum's size (its length 1.6 m)."""
    cs = systemfile.read(double).system
    model = linearize(cs, outputs=[])
    m = poses.model(cs)
    t, columns, title = modes.mode_motion(m, twin(cs), model, number)
    q1, q2 = columns["upper.joint.q[3]"], columns["lower.joint.q[3]"]
    moving = np.abs(q1) > 0.1 * np.abs(q1).max()
    assert np.allclose((q1 + q2)[moving] / q1[moving], ratio, rtol=1e-9)
    w = np.sqrt((2 - ratio) * 9.81 / 0.8)
    assert f"{w / (2 * np.pi):.4g} Hz" in title and t[-1] == modes.CYCLES * modes.PERIOD
    elbow = 0.8 * np.column_stack([np.sin(q1), -np.cos(q1)])
    tip = elbow + 0.8 * np.column_stack([np.sin(q1 + q2), -np.cos(q1 + q2)])
    reach = max(np.linalg.norm(elbow - [0, -0.8], axis=1).max(), np.linalg.norm(tip - [0, -1.6], axis=1).max())
    assert reach == pytest.approx(0.16, rel=1e-6)


@pytest.mark.slow
def test_animate_mode_writes_a_view_that_moves(double, tmp_path, capsys):
    out = tmp_path / "mode.html"
    assert main(["animate", str(double), "--mode", "1", "--out", str(out)]) == 0
    assert "(double: mode 1, 0.4266 Hz, damping 0 (a turn in 2 s))" in capsys.readouterr().err
    data = scene_of(out)
    _, p, R = decoded(next(b for b in data["bodies"] if b["name"] == "lower"), data)
    assert np.ptp(p[:, 0]) > 0.1                                        # it swings
    page, console = dom(out, "t=0.5")
    no_messages(console)
    assert loaded(page)
    shots = [screenshot(out, f"t={t}&az=0&el=0", tmp_path / f"{t}.png")[0] for t in (0.5, 1.5)]
    assert np.mean(np.any(np.abs(shots[0].astype(int) - shots[1].astype(int)) > 30, axis=2)) > 0.002


def test_linearize_animate_shows_its_models_mode(double, tmp_path, capsys):
    view = tmp_path / "m.html"
    assert main(["linearize", str(double), "--trim", "--out", str(tmp_path / "m.npz"), "--animate", str(view),
                 "--mode", "2"]) == 0
    assert f"wrote {view} (double: mode 2, " in capsys.readouterr().out
    assert "mode 2, " in scene_of(view)["title"]


@pytest.mark.parametrize("argv, message", [
    (["animate", "{double}", "--mode", "3", "--out", "{tmp}/v.html"],
     "--mode 3: the linear model has 2 mode(s) that are not zero"),
    (["animate", "{double}", "{tmp}/run.csv", "--mode", "1", "--out", "{tmp}/v.html"],
     "--mode shows a mode of the linear model: no RUN.csv"),
    (["animate", "{double}", "--trim", "--out", "{tmp}/v.html"], "--trim applies to --mode"),
    (["linearize", "{double}", "--mode", "1", "--out", "{tmp}/v.npz"], "--mode N is the mode --animate shows"),
    (["linearize", "{double}", "--animate", "{tmp}/v.png", "--out", "{tmp}/v.npz"], "the 3-D view is an HTML page"),
])
def test_careless_mode_views_are_one_line(double, tmp_path, capsys, argv, message):
    (tmp_path / "run.csv").write_text("t,upper.joint.q[3],lower.joint.q[3]\n0,0,0\n1,0,0\n")
    assert main([a.format(double=double, tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "v.html").exists() and not (tmp_path / "v.npz").exists()
