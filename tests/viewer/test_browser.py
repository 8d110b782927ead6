"""The HTML views in a real browser (Chromium headless; skipped without it): they load offline
with no console message, and screenshots at two times show the bodies where the data puts
them, so in different places."""

from pathlib import Path

import numpy as np
import pytest

from browser import dom, scene_of, screenshot
from test_poses import decoded, undrawable_view
from titop_fmu.cli import main
from titop_fmu.scenarios import balloon
from titop_fmu.viewer import Animation

ROOT = Path(__file__).resolve().parents[2]
SIZE = (900, 600)

#: every kind of thing the view draws: a fixed base (its box), a revolute arm with a child, a
#: prismatic slider, a welded stub, a loop closure tying the arm back to the base, a pendulum on
#: a fixed support given as a constant motion vector
GALLERY = """
links = [["ground.c1", "arm.p"], ["arm.c1", "slide.p"], ["ground.c3", "stub.p"], ["arm.c2", "tie.l"],
         ["ground.c2", "tie.r"]]
record = ["arm.joint.q[3]"]
[units.ground]
model = "imposed_motion_base_c3"
mass = 5.0
inertia = [[0.5, 0, 0], [0, 0.8, 0], [0, 0, 0.4]]
com = [0.0, 0.0, 0.0]
"c1.r" = [0.0, 0.0, 0.0]
"c2.r" = [1.0, -1.0, 0.0]
"c3.r" = [-0.5, 0.0, 0.3]
[units.arm]
model = "revolute_c2"
mass = 1.0
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0.0, -1.0, 0.0]
axis = [0.0, 0.0, 1.0]
"c1.r" = [0.0, -1.0, 0.0]
"c2.r" = [0.0, -1.0, 0.0]
q0 = "30 deg"
[units.slide]
model = "prismatic_c0"
mass = 0.5
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0.0, -0.5, 0.0]
axis = [1.0, 0.0, 0.0]
q0 = 0.2
k = 20.0
[units.stub]
model = "welded_c0"
mass = 0.3
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0.3, 0.0, 0.2]
mount = [0.0, 0.0, 0.5]
[units.tie]
model = "loop_closure"
K = [[200, 0, 0, 0, 0, 0], [0, 200, 0, 0, 0, 0], [0, 0, 200, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
D = [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
[units.hang]
model = "revolute_c0"
mass = 1.0
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0.0, -0.8, 0.0]
axis = [0.0, 0.0, 1.0]
q0 = "50 deg"
[inputs]
"ground.p.a" = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"hang.p.m" = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -2.0, 0.5, 0.0, 0, 0, 0]
"""


def no_messages(console):
    assert console == [], "the page wrote to the console:\n" + "\n".join(console)


def loaded(page: str) -> bool:
    return 'data-ready="1"' in page and '<div id="error"></div>' in page


@pytest.fixture(scope="module")
def balloon_view(balloon_run, tmp_path_factory):
    s, tr = balloon_run
    out = tmp_path_factory.mktemp("view") / "balloon.html"
    Animation(out, balloon.system(), "balloon").write_balloon(tr.t, balloon.columns(s, tr.y))
    return out


def test_the_view_opens_offline_with_no_console_message(balloon_view):
    text = balloon_view.read_text()
    assert "http:" not in text and "https:" not in text and "src=" not in text   # nothing to fetch
    page, console = dom(balloon_view, "t=2.5")
    no_messages(console)
    assert loaded(page) and 'data-t="2.5"' in page


def expected_pixel(data, point, size=SIZE):
    """Where the view's camera, reset and turned to ``az = el = 0`` (looking along -z, x to the
    right, y up), puts a world point: the projection written out independently of viewer.js."""
    lo, hi = np.array(data["bounds"][0]), np.array(data["bounds"][1])
    target = (lo + hi) / 2
    fov = np.radians(40.0)
    dist = max(0.5 * np.linalg.norm(hi - lo), 0.5 * data["size"]) / np.sin(fov / 2) * 1.1
    F = size[1] / 2 / np.tan(fov / 2)
    x, y, z = point - target
    depth = dist - z
    return np.array([size[0] / 2 + F * x / depth, size[1] / 2 - F * y / depth]), F / depth


def colour_near(img, centre, radius, colour, tol=80.0):
    """How many pixels within ``radius`` of ``centre`` have the body's ``colour`` (shaded: within
    ``tol`` of it, where the background, the grid and the other bodies' colours are not)."""
    h, w, _ = img.shape
    yy, xx = np.mgrid[0:h, 0:w]
    disc = (xx - centre[0]) ** 2 + (yy - centre[1]) ** 2 <= radius ** 2
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int(np.sum(disc & (np.linalg.norm(img.astype(float) - rgb, axis=2) < tol)))


@pytest.mark.slow
def test_screenshots_at_two_times_show_the_pendulum_where_it_is(balloon_view, tmp_path):
    data = scene_of(balloon_view)
    assert not data["follow"]
    body = next(b for b in data["bodies"] if b["name"] == "pendulum2")
    t, p, R = decoded(body, data)
    times = (1.0, 2.3)
    bobs = []
    for when in times:
        k = int(np.argmin(np.abs(t - when)))
        assert abs(t[k] - when) < 1e-9
        bob, scale = expected_pixel(data, p[k] + R[k] @ body["com"])
        bobs.append((bob, max(4.0, body["radius"] * scale)))
    assert np.linalg.norm(bobs[0][0] - bobs[1][0]) > 4 * max(r for _, r in bobs)     # far apart
    images = []
    for when in times:
        img, console = screenshot(balloon_view, f"t={when}&az=0&el=0&labels=0&frames=0&trace=0",
                                  tmp_path / f"t{when}.png")
        no_messages(console)
        images.append(img)
    changed = np.mean(np.any(np.abs(images[0].astype(int) - images[1].astype(int)) > 30, axis=2))
    assert changed > 0.003, f"only {changed:.2%} of the pixels changed"
    at = [[colour_near(img, c, r, body["color"]) for c, r in bobs] for img in images]
    area = [np.pi * r * r for _, r in bobs]
    assert at[0][0] > 0.4 * area[0] and at[1][1] > 0.4 * area[1], at    # the bob is where it should be
    assert at[0][1] < 0.1 * area[1] and at[1][0] < 0.1 * area[0], at    # and not where it is not


@pytest.mark.slow
@pytest.mark.parametrize("system, fragment", [
    ("examples/spacecraft.toml", "t=3.5"),             # falls 80 m: the camera follows
    ("examples/two_branch.toml", "t=3&az=120&el=-20"),
    ("gallery", "t=0.7&az=30&el=60"),
])
def test_every_kind_of_body_draws_without_a_message(system, fragment, tmp_path):
    if system == "gallery":
        (tmp_path / "gallery.toml").write_text(GALLERY)
        path = tmp_path / "gallery.toml"
    else:
        path = ROOT / system
    out = tmp_path / "view.html"
    assert main(["animate", str(path), "--stop", "4", "--out", str(out), "--quiet"]) == 0
    data = scene_of(out)
    if system == "gallery":
        assert {b["joint"] for b in data["bodies"]} == {"base", "revolute", "prismatic", "welded"}
        assert len(data["closures"]) == 1 and data["bodies"][-1]["name"] == "hang"
    else:
        assert data["follow"] == (system == "examples/spacecraft.toml")
    page, console = dom(out, fragment)
    no_messages(console)
    assert loaded(page)
    img, console = screenshot(out, fragment, tmp_path / "shot.png")
    no_messages(console)
    assert np.mean(np.any(img < 200, axis=2)) > 0.01          # something is drawn


@pytest.mark.slow
def test_a_run_of_one_sample_shows_its_configuration(tmp_path):
    """One row (the initial state): no time to play, a still view."""
    run = tmp_path / "one.csv"
    run.write_text("t,x,y,z,phi,theta,psi,p,theta1,theta2\n0,0,0,0,0,0,0,0,2.96,-2.96\n")
    out = tmp_path / "one.html"
    assert main(["animate", "balloon", str(run), "--out", str(out), "--quiet"]) == 0
    page, console = dom(out)
    no_messages(console)
    assert loaded(page) and 'data-t="0"' in page


@pytest.mark.slow
def test_the_units_not_drawn_are_named_on_the_page(tmp_path):
    page, console = dom(undrawable_view(tmp_path / "v.html"))
    no_messages(console)
    assert loaded(page) and "<div>ext: not drawn: not a TITOP block" in page and "<div>arm: not drawn" in page
