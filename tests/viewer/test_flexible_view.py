"""Flexible bodies drawn deformed in the 3-D view: the beam's line through its nodes, displaced
by its modal coordinates (eq. (F11)), against the tip position the engine records
(``beam.c1.position``); the route through the ports' recorded displacements; a mode of a clamped
beam against the Euler-Bernoulli mode shape; the scale said on the page; the page in Chromium."""

import copy
from pathlib import Path

import numpy as np
import pytest

from browser import dom, scene_of, screenshot
from test_browser import expected_pixel, colour_near, loaded, no_messages
from test_poses import decoded
from titop_fmu.cli import main
from titop_fmu.io import read_result
from titop_fmu.simulation import read_file
from titop_fmu.titop import monolithic
from titop_fmu.titop.flexible import drawn_beams
from titop_fmu.viewer import deform, poses

ROOT = Path(__file__).resolve().parents[2]
SPINUP = ROOT / "examples" / "spinup_beam.toml"
#: long enough for the beam to lag the hub by decimetres (0.34 m at the tip at 4 s)
STOP = 4.0

#: a beam clamped to a fixed base, bending stiffer in y than in z: its first mode bends along z
CLAMPED = """
links = [["base.c1", "beam.p"]]
[units.base]
model = "imposed_motion_base_c1"
mass = 1.0
inertia = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
com = [0, 0, 0]
"c1.r" = [0, 0, 0]
gravity = [0, 0, 0]
[units.beam]
model = "welded_c1"
gravity = [0, 0, 0]
[units.beam.flexible]
beam = { length = 10.0, EA = 2.8e7, EIy = 1.4e4, EIz = 5.6e4, GJ = 1.4e4, rhoA = 1.2, rhoJ = 6e-4 }
elements = 20
modes = 4
ports = [10.0]
[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
"beam.c1.w" = [0, 0, 0, 0, 0, 0]
"""


def drawn_points(data: dict, name: str = "beam") -> tuple:
    """``(t, world positions (n, N, 3), body-frame points (N, 3), displacements (n, N, 3))`` of a
    flexible body's drawn points, decoded from a view's scene JSON as viewer.js decodes them."""
    body = next(b for b in data["bodies"] if b["name"] == name)
    t, p, R = decoded(body, data)
    points = np.array(body["flex"]["points"])
    d = (np.cumsum(np.array(body["flex"]["d"], dtype=float), axis=1).T * data["p_quantum"]).reshape(len(t), -1, 3)
    return t, p[:, None, :] + np.einsum("kij,klj->kli", R, points[None] + d), points, d


@pytest.fixture(scope="module")
def spinup_run(tmp_path_factory):
    """The spin-up beam's first seconds: its CSV (``beam.c1.position``, ``beam.c1.u`` and the hub's
    pose ``hub.p.m``: what places the bodies) and its view at scale 1."""
    folder = tmp_path_factory.mktemp("spinup")
    text = SPINUP.read_text()
    assert 'record = ["beam.c1.position", "beam.c1.u", ' in text
    (folder / "spinup.toml").write_text(text.replace('record = [', 'record = ["hub.p.m", ', 1))
    assert main(["simulate", str(folder / "spinup.toml"), "--stop", str(STOP), "--out", str(folder / "run.csv"),
                 "--quiet", "--animate", str(folder / "view.html"), "--scale", "1"]) == 0
    return folder


def test_the_drawn_beam_tip_is_where_the_engine_puts_it(spinup_run):
    data = scene_of(spinup_run / "view.html")
    assert data["flex_scale"] == 1.0 and data["notes"][0] == "elastic deformation drawn x1"
    t, world, points, d = drawn_points(data)
    assert len(points) == 42 and np.allclose(points[-1], [10, 0, 0])      # P and the 41 nodes of 40 elements
    rt, columns = read_result(spinup_run / "run.csv")
    rows = np.searchsorted(rt, t - 1e-9)
    assert np.allclose(rt[rows], t, atol=1e-6)
    tip = np.column_stack([columns[f"beam.c1.position[{k}]"] for k in (1, 2, 3)])[rows]
    q = data["p_quantum"]
    assert np.max(np.abs(world[:, -1] - tip)) <= 2.5 * q                  # the quanta of p, d and the attitude
    body = next(b for b in data["bodies"] if b["name"] == "beam")
    _, p, R = decoded(body, data)
    rigid_tip = p + np.einsum("kij,j->ki", R, points[-1])
    assert np.max(np.linalg.norm(rigid_tip - tip, axis=1)) > 0.3         # undeformed, the tip would be off
    assert np.max(np.abs(d[:, 0])) == 0.0                                  # P is clamped


def test_the_deformation_is_the_model_s_to_rounding():
    """Unrounded: the drawn tip, ``P + P_a/i (PC + Phi_C eta - 1/2 eta^T K0F_C eta)`` from the
    states, is the engine's ``beam.c1.position`` (eq. (F11))."""
    cs = read_file(SPINUP).system
    m = poses.model(cs, drawn_beams(SPINUP))
    run = copy.copy(cs)
    run.recorded = ["beam.c1.position"]
    tr, values = monolithic.run(run, 2.0, 0.05)
    states = deform.modal_states(m, tr.system.state_names, tr.y)
    run.recorded = poses.needed(m, states)
    assert not any(".u[" in x for x in run.recorded)                       # the states make the ports' u unneeded
    _, placing = monolithic.run(run, 2.0, 0.05)
    columns = {**dict(zip(run.recorded, placing.T)), **states}
    R, p = poses.poses(m, columns)["beam"]
    deformed, notes = deform.deformations(m, columns, len(tr.t))
    shape, u = deformed["beam"]
    assert notes == [] and shape.line and shape.ports == (41,)
    tip = p + np.einsum("kij,kj->ki", R, shape.points[-1] + u[:, -1])
    assert np.max(np.abs(tip - values)) <= 1e-12
    assert np.max(np.abs(u[:, -1])) > 0.01


def test_a_csv_with_the_ports_displacements_is_drawn_through_them(spinup_run, tmp_path, capsys):
    """``beam.c1.u`` recorded, no modal coordinates: the line ``P`` -> tip, exact at the tip."""
    out = tmp_path / "csv.html"
    assert main(["animate", str(spinup_run / "spinup.toml"), str(spinup_run / "run.csv"), "--out", str(out),
                 "--scale", "1", "--quiet"]) == 0
    data = scene_of(out)
    assert "beam: deformed through its ports" in " ".join(data["notes"])
    t, world, points, _ = drawn_points(data)
    assert len(points) == 2
    rt, columns = read_result(spinup_run / "run.csv")
    tip = np.column_stack([columns[f"beam.c1.position[{k}]"] for k in (1, 2, 3)])[np.searchsorted(rt, t - 1e-9)]
    assert np.max(np.abs(world[:, -1] - tip)) <= 2.5 * data["p_quantum"]


def test_the_automatic_scale_makes_the_largest_displacement_a_tenth_of_the_body(spinup_run, tmp_path):
    out = tmp_path / "auto.html"
    assert main(["animate", str(SPINUP), "--stop", "2", "--out", str(out), "--quiet"]) == 0
    data = scene_of(out)
    _, _, points, d = drawn_points(data)
    scale = data["flex_scale"]
    assert scale > 1 and data["notes"][0].startswith(f"elastic deformation drawn x{scale:g} (")
    largest = np.max(np.linalg.norm(d, axis=2)) / scale                    # the displacement itself
    ratio = deform.FRACTION * 10.0 / largest
    assert scale <= ratio < 2.5 * scale                                    # the round number below


def first_cantilever_mode(x, length):
    """The first clamped-free Euler-Bernoulli mode shape, ``phi(x) / phi(L)``."""
    b = 1.875104068711961 / length
    s = (np.cosh(b * length) + np.cos(b * length)) / (np.sinh(b * length) + np.sin(b * length))
    phi = lambda y: np.cosh(b * y) - np.cos(b * y) - s * (np.sinh(b * y) - np.sin(b * y))   # noqa: E731
    return phi(x) / phi(length)


def test_a_bending_mode_bends_the_beam_as_euler_bernoulli(tmp_path, capsys):
    (tmp_path / "clamped.toml").write_text(CLAMPED)
    out = tmp_path / "mode.html"
    assert main(["animate", str(tmp_path / "clamped.toml"), "--mode", "1", "--out", str(out)]) == 0
    assert "mode 1, 0.6044 Hz" in capsys.readouterr().err          # (1.8751/10)^2 sqrt(EIy/rhoA) / 2 pi
    data = scene_of(out)
    assert data["flex_scale"] == 1.0
    t, world, points, d = drawn_points(data)
    k = int(np.argmax(np.abs(d[:, -1, 2])))                         # the largest swing, along z
    tip = d[k, -1, 2]
    assert abs(tip) > 0.5 and np.max(np.abs(d[:, :, 1])) < 1e-9  # a tenth of the system's size, all in x-z
    shape = d[k, :, 2] / tip
    assert np.max(np.abs(shape - first_cantilever_mode(points[:, 0], 10.0))) <= 5e-3
    assert np.max(np.abs(d[k, :, 0])) > 1e-2                       # the foreshortening, second order


@pytest.mark.slow
def test_the_page_draws_the_bent_beam(spinup_run, tmp_path):
    """In Chromium, at x10: the beam's colour at the deformed tip, not where the undeformed tip is."""
    out = tmp_path / "x10.html"
    assert main(["animate", str(spinup_run / "spinup.toml"), "--stop", str(STOP), "--out", str(out),
                 "--scale", "10", "--quiet"]) == 0
    page, console = dom(out, "t=4")
    no_messages(console)
    assert loaded(page) and "elastic deformation drawn x10" in page
    data = scene_of(out)
    body = next(b for b in data["bodies"] if b["name"] == "beam")
    t, world, points, _ = drawn_points(data)
    _, p, R = decoded(body, data)
    k = int(np.argmin(np.abs(t - 4.0)))
    bent, scale = expected_pixel(data, world[k, -1])
    straight, _ = expected_pixel(data, p[k] + R[k] @ points[-1])
    assert np.linalg.norm(bent - straight) > 40
    img, console = screenshot(out, "t=4&az=0&el=0&labels=0&frames=0&trace=0", tmp_path / "x10.png")
    no_messages(console)
    assert colour_near(img, bent, 4, body["color"]) > 10
    assert colour_near(img, straight, 4, body["color"]) == 0


@pytest.mark.parametrize("scale", ["0", "-2", "nan"])
def test_a_bad_scale_is_one_line(scale, tmp_path, capsys):
    assert main(["animate", str(SPINUP), "--out", str(tmp_path / "v.html"), "--scale", scale]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("titop-fmu: error:") and "\n" not in err and "--scale" in err, err
    assert not (tmp_path / "v.html").exists()


def test_a_mode_of_a_beam_set_by_name_is_drawn_through_its_nodes(tmp_path, capsys):
    """``--set beam.flexible.beam.EIy`` (the table's value): the frequency scales as sqrt(EI)
    (0.6044 Hz x sqrt(0.4)), and the view draws the beam so made through its 21 nodes."""
    (tmp_path / "clamped.toml").write_text(CLAMPED)
    out = tmp_path / "mode.html"
    assert main(["animate", str(tmp_path / "clamped.toml"), "--mode", "1", "--set", "beam.flexible.beam.EIy=5.6e3",
                 "--out", str(out)]) == 0
    assert "mode 1, 0.3823 Hz" in capsys.readouterr().err
    _, _, points, d = drawn_points(scene_of(out))
    assert len(points) == 22 and np.max(np.abs(d[:, 10, 2])) > 0.1
