"""examples/spacecraft.toml against its Modelica MultiBody twin, validation/modelica/Spacecraft.mo
(an independent engine), executed: a floating bus with a full inertia, an offset centre of mass,
an initial attitude and twist (body frame, at P), gravity and a torque in the body frame
(ext_frame = 1); a welded boom at three mount angles with a damped panel on an oblique hinge; a
slider on an oblique rail; a three-link chain on oblique axes whose last link spins. The bus passes
within 0.5 deg of gimbal lock near t = 12.2 s: its attitude is compared as Euler angles and as a
matrix.

The runs skip with the reason (no compiler / no MSL) in pytest's summary.
"""

from pathlib import Path

import numpy as np
import pytest

from modelica_runs import ROOT, SPACECRAFT_MO, TEETH_RTOL, mutated_copy, need_modelica
from validation import compare_twin as twin   # the TITOP side (one import place)

SPACECRAFT = ROOT / "examples" / "spacecraft.toml"
BOUND = 1e-8


def report(title, r):
    i = r["info"]
    print(f"\n{title}: {i['compiler']} {i['compiler_version']}, MSL {i['msl_version']}, "
          f"compile {i['compile_s']:.2f} s, simulate {i['simulate_s']:.2f} s")
    for n, a, s in zip(r["names"], r["absolute"], r["scaled"]):
        print(f"  {n:<18} {a:9.2e} {s:9.2e}")
    for label, (e, to_lock, k) in r["attitude"].items():
        print(f"  attitude {label}: {e:.2e} rad (closest to lock {to_lock:.3f} deg at {r['t'][k]:g} s)")


def check(r, stop=20.0):
    assert r["t"][-1] == stop and len(r["t"]) == int(round(stop / 0.01)) + 1
    assert np.ptp(r["titop"], axis=0).min() > 1e-3                  # every recorded output moves
    assert r["scaled"].max() <= BOUND, dict(zip(r["names"], r["scaled"].tolist()))
    assert set(r["attitude"]) == {"bus.p.m[16..18]", "link3.euler[1..3]"}
    e, to_lock, k = r["attitude"]["bus.p.m[16..18]"]
    assert e <= BOUND and r["attitude"]["link3.euler[1..3]"][0] <= BOUND
    assert to_lock < 0.5 and 12.0 < r["t"][k] < 12.5                  # the near-lock passage is covered
    # the inertial outputs (positions, a velocity, a DCM, Euler angles of a spinning link) are there
    assert {"bus.com.position[1]", "boom.dcm[9]", "panel.com.velocity[6]", "link3.euler[3]"} <= set(r["names"])
    q3 = r["titop"][:, r["names"].index("link3.joint.q[3]")]
    assert np.ptp(q3) > 4 * np.pi                                     # link3 turns more than twice


@pytest.fixture(scope="module")
def spacecraft():
    need_modelica()
    return twin.compare_system_file(SPACECRAFT, stop=20.0)           # the twin named by the file


def test_system_file_names_its_twin():
    assert twin.twin_model_of(SPACECRAFT) == SPACECRAFT_MO
    names = [twin.modelica_name(r) for r in twin.system_file_records(SPACECRAFT)]
    text = SPACECRAFT_MO.read_text()
    for n in names:                                                   # one output per record entry
        assert f"output Real {n}(" in text, n


@pytest.mark.slow
def test_spacecraft_twin_matches_inprocess(spacecraft):
    """examples/spacecraft.toml in process vs its Modelica twin over [0, 20] s: <= 1e-8 on every
    column (absolute up to magnitude 1, relative above: the bus falls ~2 km), and the bus attitude
    matrices within 1e-8 rad through the near-lock passage."""
    report("spacecraft vs twin", spacecraft)
    check(spacecraft)


@pytest.mark.slow
def test_spacecraft_twin_without_gravity(tmp_path):
    """The same with gravity off on both sides (every unit's gravity = 0, the twin's g = 0)."""
    need_modelica()
    toml = SPACECRAFT.read_text()
    on = "gravity = [0.0, -9.81, 0.0]"
    assert toml.count(on) == 7                                        # every unit
    (tmp_path / "sc.toml").write_text(toml.replace(on, "gravity = [0.0, 0.0, 0.0]"))
    mo = mutated_copy(SPACECRAFT_MO, 'parameter Real g(unit="m/s2") = 9.81 ', 'parameter Real g(unit="m/s2") = 0 ',
                      tmp_path)
    r = twin.compare_system_file(tmp_path / "sc.toml", mo, stop=20.0)
    report("spacecraft without gravity vs twin", r)
    check(r)


@pytest.mark.slow
@pytest.mark.parametrize("old, new", [
    ("resolveInFrame=MB.Types.ResolveInFrameB.frame_b", "resolveInFrame=MB.Types.ResolveInFrameB.world"),
    ("v_0(start=P_bi0*v_P0", "v_0(start=v_P0"),
    ("w_a(start=w_P0, each fixed=true)", "w_0_fixed=true, w_0_start=w_P0"),
    ("sequence_start={3, 2, 1},", "sequence_start={1, 2, 3},"),
], ids=["torque_in_world", "v_P0_in_world", "omega_in_world", "Theta0_as_1-2-3"])
def test_spacecraft_teeth_wrong_convention(tmp_path, old, new):
    """The twin with one of the new mappings read the other way: caught within 2 s."""
    need_modelica()
    copy = mutated_copy(SPACECRAFT_MO, old, new, tmp_path)
    r = twin.compare_system_file(SPACECRAFT, copy, stop=2.0, rtol=TEETH_RTOL)
    assert r["scaled"].max() > 1e-3


def test_attitude_errors_see_through_gimbal_lock():
    """Near lock, phi and psi of two close attitudes differ much more than the attitudes: the
    matrix comparison gives the true angle (no compiler needed)."""
    from titop_fmu.spatial import axis_rotation, euler_from_dcm
    names = ["x.m[13]", "x.m[16]", "x.m[17]", "x.m[18]", "y.joint.q[3]"]
    assert twin.euler_triples(names) == [("x.m[16..18]", (1, 2, 3))]
    assert twin.euler_triples(["z.euler[1]", "z.euler[2]", "z.euler[3]"]) == [("z.euler[1..3]", (0, 1, 2))]
    assert twin.euler_triples(["phi", "theta", "psi", "p"]) == [("phi, theta, psi", (0, 1, 2))]
    assert twin.euler_triples(["x.m[16]", "x.m[17]"]) == []
    P = twin.dcm_from_euler([0.3, np.radians(89.99), -0.2])
    dP = axis_rotation(np.array([0.0, 0.0, 1.0]), 1e-9)
    a = np.array([[1.0, *euler_from_dcm(P @ dP), 0.0]])
    b = np.array([[1.0, *euler_from_dcm(P), 0.0]])
    euler = twin.column_errors(a, b, [False, True, True, True, False])[0]
    att = twin.attitude_errors(names, a, b)["x.m[16..18]"]
    assert euler[1] > 1e-6 and euler[3] > 1e-6                      # phi, psi: ~1e-9 / cos(theta)
    assert att[0] == pytest.approx(1e-9, rel=1e-5) and att[1] == pytest.approx(0.01, rel=1e-6)


def test_readme_lists_the_twin():
    readme = (ROOT / "validation" / "modelica" / "README.md").read_text()
    assert "`Spacecraft.mo`" in readme and "examples/spacecraft.toml" in readme
    assert Path(SPACECRAFT_MO).is_file()
