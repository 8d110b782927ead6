"""Bodies drawn with a shape: a box, a cylinder or a panel given in the system file, by default
the box of the body's inertia; the shapes' geometry, the file's mistakes in one line, and a
panel on screen where its corners project."""

import numpy as np
import pytest

from browser import scene_of, screenshot
from test_browser import SIZE, expected_pixel, no_messages
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.viewer import poses, scene

#: a fixed base holding a welded wing (a panel), an antenna on a revolute (a cylinder), a box
SHAPES = """
links = [["base.c1", "wing.p"], ["base.c2", "antenna.p"]]
record = ["antenna.joint.q[3]"]
[units.base]
model = "imposed_motion_base_c2"
mass = 100.0
inertia = [[10.0, 0, 0], [0, 12.0, 0], [0, 0, 8.0]]
com = [0.0, 0.0, 0.0]
"c1.r" = [0.5, 0.0, 0.0]
"c2.r" = [0.0, 0.5, 0.0]
shape = { box = ["1000 mm", 1.0, 1.0] }
[units.wing]
model = "welded_c0"
mass = 20.0
inertia = [[1.0, 0, 0], [0, 20.0, 0], [0, 0, 19.0]]
com = [2.0, 0.0, 0.0]
shape = { panel = [3.0, 1.5], normal = "z" }
gravity = [0.0, 0.0, 0.0]
[units.antenna]
model = "revolute_c0"
mass = 2.0
inertia = [[0.1, 0, 0], [0, 0.05, 0], [0, 0, 0.1]]
com = [0.0, 0.4, 0.0]
axis = [0.0, 1.0, 0.0]
qd0 = 1.0
shape = { cylinder = [0.2, 0.1], axis = "y", at = [0.0, 0.6, 0.0] }
gravity = [0.0, 0.0, 0.0]
[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
"""


def system(tmp_path, text=SHAPES):
    path = tmp_path / "shapes.toml"
    path.write_text(text)
    return path, systemfile.read(path).system


def outward(points, faces, centre):
    for f in faces:
        p = points[f]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        assert n.dot(p.mean(axis=0) - centre) > 0, f


def test_shapes_are_read_and_drawn_as_given(tmp_path):
    _, cs = system(tmp_path)
    m = poses.model(cs)
    points, faces = scene.mesh(m.bodies["base"])                      # a box of 1 m, at the centre of mass
    assert np.allclose(np.sort(np.abs(points), axis=0), 0.5) and len(faces) == 6
    outward(points, faces, np.zeros(3))
    points, faces = scene.mesh(m.bodies["wing"])                      # a panel in x-y, centred on com
    assert np.allclose(points[:, 2], 0) and np.allclose(np.ptp(points, axis=0), [3.0, 1.5, 0.0])
    assert np.allclose(points.mean(axis=0), [2.0, 0.0, 0.0]) and faces == [[0, 1, 2, 3], [3, 2, 1, 0]]
    points, faces = scene.mesh(m.bodies["antenna"])                   # a dish along y, at 0.6
    centre = np.array([0.0, 0.6, 0.0])
    radial = np.hypot(points[:, 0], points[:, 2])
    assert np.allclose(radial, 0.2) and np.allclose(np.sort(np.unique(points[:, 1].round(12))), [0.55, 0.65])
    outward(points, faces, centre)
    assert len(faces) == 2 + scene.CYLINDER_SIDES


def test_by_default_every_body_is_the_box_of_its_inertia_and_a_point_mass_has_none(tmp_path):
    text = SHAPES.replace('shape = { panel = [3.0, 1.5], normal = "z" }\n', "")
    _, cs = system(tmp_path, text)
    wing = poses.model(cs).bodies["wing"]
    points, faces = scene.mesh(wing)
    half, axes = scene.equivalent_box(wing.mass, wing.inertia)
    assert np.allclose(np.sort(np.abs((points - wing.com) @ axes), axis=0)[-1], half)
    outward(points, faces, wing.com)
    point_mass = poses.Body("m", "revolute", 1.0, np.zeros((3, 3)), np.zeros(3), (), None, None, None, None, np.eye(3))
    assert scene.mesh(point_mass) is None


@pytest.mark.parametrize("shape, message", [
    ("{ sphere = 1.0 }", "one of {box = [lx, ly, lz]}"),
    ("{ box = [1.0, 1.0] }", "units.base.shape.box: 3 sizes > 0 [m], got [1.0, 1.0]"),
    ("{ box = [1.0, -1.0, 1.0] }", "3 sizes > 0 [m]"),
    ('{ box = [1.0, "1 kg", 1.0] }', "units.base.shape.box: '1 kg' is a mass, not a length"),
    ("{ box = [1.0, 1.0, 1.0], axis = \"z\" }", "a box takes box, at; not 'axis'"),
    ('{ cylinder = [0.2, 1.0], axis = "w" }', "units.base.shape.axis: \"x\", \"y\", \"z\" or a non-zero vector"),
    ("{ panel = [1.0, 1.0], normal = [0, 0, 0] }", "units.base.shape.normal"),
    ("{ box = [1.0, 1.0, 1.0], at = [0, 0] }", "units.base.shape.at: a point [x, y, z]"),
    ("3", "one of {box = [lx, ly, lz]}"),
])
def test_a_wrong_shape_is_one_line(tmp_path, capsys, shape, message):
    path, _ = system(tmp_path)
    path.write_text(SHAPES.replace('shape = { box = ["1000 mm", 1.0, 1.0] }', f"shape = {shape}"))
    assert main(["simulate", str(path), "--stop", "0.1", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_shapes_survive_set_and_a_system_written_out(tmp_path):
    from titop_fmu.titop import overrides as ov
    _, cs = system(tmp_path)
    again, _ = systemfile.from_dict(systemfile.to_dict(ov.apply(cs, {"wing.mass": 25.0})))
    assert {n: u.appearance for n, u in again.units.items()} == {n: u.appearance for n, u in cs.units.items()}


@pytest.mark.slow
def test_the_panel_is_on_screen_where_its_corners_project(tmp_path):
    """Seen along -z (az = el = 0) the wing's panel, in the x-y plane, covers the rectangle its
    corners project to: its pixels are drawn (not the background), and those just outside it
    are not its colour; no console message."""
    path, _ = system(tmp_path)
    out = tmp_path / "shapes.html"
    assert main(["animate", str(path), "--stop", "1", "--out", str(out), "--quiet"]) == 0
    data = scene_of(out)
    wing = next(b for b in data["bodies"] if b["name"] == "wing")
    at = np.array([0.5, 0.0, 0.0])                          # the wing's frame: base.c1, the base's axes
    corners = np.array([expected_pixel(data, at + c)[0] for c in wing["mesh"]["points"]])
    img, console = screenshot(out, "t=0&az=0&el=0&labels=0&frames=0&trace=0", tmp_path / "shot.png", SIZE)
    no_messages(console)
    (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
    assert x1 - x0 > 100 and y1 - y0 > 40
    inside = img[int(y0) + 4:int(y1) - 4, int(x0) + 4:int(x1) - 4].reshape(-1, 3).astype(int)
    colour = np.array([int(wing["color"][i:i + 2], 16) for i in (1, 3, 5)])
    tinted = np.abs(inside - inside.mean(axis=1, keepdims=True)).max(axis=1) > 8        # not grey
    assert np.mean(tinted) > 0.9, np.mean(tinted)
    towards = (inside[tinted] - 245).dot(colour - 245) > 0                               # its hue
    assert np.mean(towards) > 0.9
    beyond = img[int(y0) + 4:int(y1) - 4, int(x1) + 12:int(x1) + 40].reshape(-1, 3).astype(int)
    assert np.mean(np.abs(beyond - beyond.mean(axis=1, keepdims=True)).max(axis=1) > 8) < 0.3
