"""Attitudes through the master: 3-2-1 Euler angles known from the units (no observer, no
mask given), extrapolated, averaged, iterated and interpolated on the rotation group, right
across +-pi and through a near gimbal lock; the master says so when its own estimate shows
an error beyond the tolerance."""

import copy
from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.cosim import CoSystem, Options, charts, clib, simulate, systemfile
from titop_fmu.cosim.charts import Chart
from titop_fmu.cosim.numerics import wrap
from titop_fmu.spatial import dcm_from_euler
from titop_fmu.titop import TitopUnits, monolithic, records

ROOT = Path(__file__).resolve().parents[2]
SPACECRAFT = ROOT / "examples" / "spacecraft.toml"


def errors(labels, values, truth):
    """``(max error of the Euler angles (wrapped), of the rotation matrices, of the rest)``; the
    Euler angles of a motion vector, ``m[16..18]``, by angle and by matrix, a body's
    ``euler[1..3]`` by matrix (link3 spins within 3.7 deg of gimbal lock: phi and psi move 15
    times its attitude error there)."""
    triples = [[i, i + 1, i + 2] for i, name in enumerate(labels) if name.endswith(("m[16]", "euler[1]"))]
    ang = [i for t in triples for i in t]
    rest = [i for i in range(len(labels)) if i not in ang]
    euler = [i for t in triples for i in t if labels[t[0]].endswith("m[16]")]
    d = np.abs(wrap(values[:, euler] - truth[:, euler]))
    R = max(np.abs(dcm_from_euler(a) - dcm_from_euler(b)).max() for t in triples
            for a, b in zip(values[:, t], truth[:, t]))
    scale = np.maximum(1.0, np.abs(truth[:, rest]).max(axis=0))       # relative for what travels far:
    for j, i in enumerate(rest):                                        # a position in R_i as a vector (an
        if ".position[" in labels[i]:                                   # attitude error moves every component
            k = i - int(labels[i][-2]) + 1                              # by the distance to the origin)
            scale[j] = max(1.0, np.linalg.norm(truth[:, k:k + 3], axis=1).max())
    return d.max(), R, (np.abs(values[:, rest] - truth[:, rest]) / scale).max()


def spinning_body():
    s = CoSystem()
    s.add("body", "floating_base_c0", gravity=[0.0, 0.0, 0.0], inertia=np.diag([1.0, 2.0, 3.0]),
          **{"twist0": [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]})
    s.set_input("body.ext.w", np.zeros(6))
    s.record("body.p.m")
    return s


def test_euler_angles_are_interpolated_across_pi():
    """A body spinning at 1 rad/s about z: psi passes +-pi at t = pi. The recorded angles come
    from the units' own declaration (TITOP motion ports), with no observer and no mask; the
    dense output used to average -3.13 and 3.13 into 0.008."""
    s = spinning_body()
    t, truth = monolithic.simulate(s, 4.0, 0.01)
    res = simulate(s, 4.0, TitopUnits("inprocess"), output_interval=0.01, options=Options(workers=0))
    near = np.abs(t - np.pi) < 0.05
    assert np.ptp(truth[near, 17]) > 6.0                    # psi jumps from pi to -pi there
    e_ang, e_R, e_rest = errors(res.labels, res.values, truth)
    assert e_ang <= 1e-8 and e_R <= 1e-8 and e_rest <= 1e-8, (e_ang, e_R, e_rest)


@pytest.fixture(params=["compiled", "python"])
def arithmetic(request, monkeypatch):
    """The charts' arithmetic in C (where it can be had), or in Python."""
    if request.param == "compiled" and clib.library() is None:
        pytest.skip("no C compiler for the master's C library")
    monkeypatch.setattr(charts, "COMPILED", request.param == "compiled")
    return request.param


@pytest.mark.slow
def test_the_compiled_charts_are_the_python_bit_for_bit():
    """``minus``, ``plus`` and ``offset`` in C (the master's library) give the Python's bits: random vectors
    with angles and three attitudes, at and near gimbal lock, turned by up to pi and by nothing."""
    if clib.library() is None:
        pytest.skip("no C compiler for the master's C library")
    made = {}
    for compiled in (True, False):
        charts.COMPILED = compiled
        try:
            made[compiled] = Chart(12, angles=[False, True] + [False] * 10, triples=[(2, 3, 4), (8, 6, 7), (9, 10, 11)])
            assert bool(made[compiled]._compiled()) == compiled
        finally:
            charts.COMPILED = True
    rng = np.random.default_rng(11)

    def vector():
        v = 3.0 * rng.standard_normal(12)
        v[3], v[6] = rng.uniform(-np.pi / 2, np.pi / 2, 2)
        v[10] = np.pi / 2 * (1 - rng.choice([0.0, 1e-9, 1e-13])) * rng.choice([-1, 1])
        return v
    for _ in range(3000):
        a, b, refs = vector(), vector(), [vector() for _ in range(5)]
        d = rng.standard_normal(12) * rng.choice([0.0, 1e-14, 1e-6, 1.0, 3.0])
        w = rng.standard_normal(5)
        for name, args in (("minus", (a, b)), ("plus", (b, d)), ("offset", (w, refs, a)), ("combine", (w, refs, a))):
            x, y = (getattr(made[c], name)(*args) for c in (True, False))
            assert np.array_equal(x, y), (name, args)


@pytest.mark.slow
def test_the_master_runs_the_same_on_compiled_and_python_charts(tmp_path, monkeypatch):
    """The balloon through the master (in-process units, one process): the same outputs, bit for
    bit, with the charts' arithmetic in C and in Python."""
    out = {}
    for arithmetic in ("compiled", "python"):
        monkeypatch.setattr(charts, "COMPILED", arithmetic == "compiled")
        out[arithmetic] = tmp_path / f"{arithmetic}.csv"
        assert main(["simulate", "balloon", "--inprocess-units", "--stop", "1", "--workers", "0", "--quiet",
                     "--out", str(out[arithmetic])]) == 0
    assert out["compiled"].read_bytes() == out["python"].read_bytes()


def test_a_chart_moves_attitudes_on_the_rotation_group(arithmetic):
    """``a (-) b`` is ``b^-1 a`` as a rotation vector (checked with scipy's rotations),
    ``b (+) (a (-) b)`` is ``a`` as a rotation, at any attitude, gimbal lock included; plain
    values are untouched, plain angles wrapped."""
    from scipy.spatial.transform import Rotation
    chart = Chart(5, angles=[False, True, False, False, False], triples=[(2, 3, 4)])
    rng = np.random.default_rng(3)
    for theta in (0.3, np.pi / 2 - 1e-7, -np.pi / 2):
        a = np.array([1.0, 3.1, 0.4, theta, -2.9])
        b = a + 0.05 * rng.standard_normal(5)
        d = chart.minus(a, b)
        assert d[0] == a[0] - b[0] and d[1] == pytest.approx(wrap(a[1] - b[1]))
        Ra, Rb = (Rotation.from_euler("ZYX", x[[4, 3, 2]]) for x in (a, b))     # psi, theta, phi
        assert np.allclose(d[2:], (Rb.inv() * Ra).as_rotvec(), rtol=0, atol=1e-13)
        back = chart.plus(b, d)
        assert back[0] == a[0] and np.allclose(dcm_from_euler(back[2:]), dcm_from_euler(a[2:]), atol=1e-13)



def test_a_chart_combines_attitudes_on_the_rotation_group(arithmetic):
    """``combine`` with weights (1/2, 1/2) of two attitudes about one axis is the attitude
    half-way along the geodesic (scipy's Slerp), near gimbal lock too, where averaging Euler
    angles component-wise is far off; plain values are averaged, angles across +-pi too."""
    from scipy.spatial.transform import Rotation, Slerp
    chart = Chart(5, angles=[False, True, False, False, False], triples=[(2, 3, 4)])
    for theta in (0.3, np.pi / 2 - 1e-3):
        a = np.array([1.0, 3.1, 0.4, theta, -2.9])
        b = np.array([2.0, -3.1, -0.5, theta - 0.02, 2.8])
        m = chart.combine([0.5, 0.5], [a, b], b)
        assert m[0] == 1.5 and abs(wrap(m[1] - np.pi)) < 1e-12
        ends = Rotation.from_euler("ZYX", np.array([a[[4, 3, 2]], b[[4, 3, 2]]]))
        half = Slerp([0.0, 1.0], ends)([0.5])[0]
        got = Rotation.from_euler("ZYX", m[[4, 3, 2]])
        assert (half.inv() * got).magnitude() < 1e-12
    # and the weights [1] give the value itself (the angle modulo 2 pi); Euler angles averaged
    # component-wise are far from the geodesic
    assert np.allclose(wrap(chart.combine([1.0], [a], b) - a), 0.0, atol=1e-13)
    naive = Rotation.from_euler("ZYX", 0.5 * (a + b)[[4, 3, 2]])
    assert (half.inv() * naive).magnitude() > 0.1

def test_a_chart_offset_is_the_weighted_sum_of_its_differences(arithmetic):
    """``offset`` (the attitudes' rotation vectors summed on floats) is, bit for bit, the sum
    ``sum_i w_i (v_i (-) ref)`` of :meth:`Chart.minus` in order, with angles, two attitudes
    and plain values."""
    chart = Chart(9, angles=[False, True] + [False] * 7, triples=[(2, 3, 4), (8, 6, 7)])
    rng = np.random.default_rng(5)
    for _ in range(50):
        ref = rng.uniform(-3, 3, 9)
        ref[[3, 7]] = rng.uniform(-1.5, 1.5, 2)
        values = [ref + 0.1 * rng.standard_normal(9) for _ in range(6)]
        weights = rng.standard_normal(6)
        out = np.zeros(9)
        for w, v in zip(weights, values):
            out += w * chart.minus(v, ref)
        assert np.array_equal(chart.offset(weights, values, ref), out)


@pytest.mark.slow
@pytest.mark.parametrize("gravity,engine", [(True, "inprocess"), (False, "fmu")])
def test_spacecraft_through_the_master_at_default_settings(gravity, engine):
    """examples/spacecraft.toml (the bus within 0.5 deg of gimbal lock near t = 12.2 s, with
    gravity or without) through the master at default settings against its monolithic twin over
    20 s: attitude (Euler angles wrapped, rotation matrix) and every other recorded output
    (relative where it travels far) within 1e-4. Component-wise Euler angles gave up to 8e-3
    here. With gravity on in-process units (the master's base steps in Python), without on the
    standalone FMUs (its base steps and charts in C)."""
    cs = copy.deepcopy(systemfile.read(SPACECRAFT).system)
    if not gravity:
        for u in cs.units.values():
            u.parameters.update({f"gravity[{i}]": 0.0 for i in (1, 2, 3)})
    t, truth = monolithic.simulate(cs, 20.0, 0.01)
    res = records.simulate(cs, 20.0, TitopUnits(engine), output_interval=0.01, options=Options())
    e_ang, e_R, e_rest = errors(res.labels, res.values, truth)
    print(f"\n[spacecraft, gravity {gravity}] Euler {e_ang:.2e}, rotation matrix {e_R:.2e}, others {e_rest:.2e}")
    assert e_ang <= 1e-4 and e_R <= 1e-4 and e_rest <= 1e-4
    assert not res.warning


@pytest.mark.slow
def test_the_master_warns_when_its_global_estimate_exceeds_the_tolerance(tmp_path, capsys):
    """The spacecraft with light links: from t = 4 s its motion multiplies every error by two
    every tenth of a second until t = 9 s (the in-process engine's own, at rtol 1e-9 against
    1e-12, too). The step control holds the local errors; the errors already made outgrow the
    tolerance, and the run's own estimate says so, also with --quiet."""
    text = SPACECRAFT.read_text()
    for link, inertia in (("link1", "[[0.02, 0.001, 0.0], [0.001, 0.005, 0.0], [0.0, 0.0, 0.02]]"),
                          ("link2", "[[0.015, 0.0, 0.002], [0.0, 0.004, 0.0], [0.002, 0.0, 0.015]]"),
                          ("link3", "[[0.01, 0.0, 0.0], [0.0, 0.002, 0.0], [0.0, 0.0, 0.01]]")):
        head, _, tail = text.partition(f"[units.{link}]")
        lines = tail.splitlines(keepends=True)
        k = next(i for i, line in enumerate(lines) if line.startswith("inertia"))
        lines[k] = f"inertia = {inertia}\n"
        text = head + f"[units.{link}]" + "".join(lines)
    text = text.replace('modelica = "../validation/modelica/Spacecraft.mo"\n', "")
    light = tmp_path / "light.toml"
    light.write_text(text)
    assert main(["simulate", str(light), "--inprocess-units", "--stop", "10", "--quiet",
                 "--out", str(tmp_path / "l.csv")]) == 0
    err = capsys.readouterr().err
    assert "warning: the co-simulation error may exceed the tolerance 3e-05" in err, err
