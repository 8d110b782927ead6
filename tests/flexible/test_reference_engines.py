"""Flexible bodies against an independent geometrically exact engine (Exudyn's
ObjectBeamGeometricallyExact2D, validation/engines/exudyn_beam.py) and a closed form:

* the spin-up beam (examples/spinup_beam.toml), 20 s: the tip's transverse position in the hub
  frame within 1e-3 m of the reference at every 0.01 s; without stiffening more than 1 m off;
* the free-floating hub with two appendages (examples/free_floating_hub.toml), 30 s: the hub's
  angle within 1e-4 rad and the tips' transverse positions within 1e-4 m of the reference; after
  the torque the angular momentum constant to 1e-8 relative; its flexible frequencies at rest,
  coupled with the hub's rotation (antisymmetric) and translation (symmetric), against the
  closed form of Euler-Bernoulli beams on a rigid hub.

The deflection compared is ``d = [-sin theta, cos theta] . (r_tip - r_hub)``: the tip's position
in the hub frame, transverse component (``exudyn_beam.transverse``); for a TITOP beam it is its
port's elastic displacement ``c1.u[2]`` (checked here to rounding).

Each reference run comes with the coarser runs that show it converged (half the elements, twice
the time step: the solver and the elements are second order, so a third of the difference
bounds the reference's own error)."""

from pathlib import Path

import numpy as np
import pytest
from free_hub_modes import hub_beam_frequencies

from titop_fmu.cli import main
from titop_fmu.simulation import read_file

pytest.importorskip("exudyn", reason="Exudyn (the crosscheck extra) is the reference engine")
from validation.engines import exudyn_beam as ex

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def hub_torque(t):
    """The torque pulse of examples/free_floating_hub.toml [N m]."""
    return 100.0 * (1 - np.cos(2 * np.pi * t / 5.0)) if t < 5.0 else 0.0


def simulate(tmp_path, path, text=None):
    """``titop-fmu simulate`` of ``path`` (or of ``text``, its edited contents): the CSV's rows
    and its header."""
    if text is not None:
        path = tmp_path / path.name
        path.write_text(text)
    out = tmp_path / (path.stem + ".csv")
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 0
    header = out.read_text().splitlines()[0].split(",")
    return np.loadtxt(out, delimiter=",", skiprows=1), header


def converged(run, elements, step):
    """``(t, fine, errors)``: the reference ``fine = run(elements, step)[1:]`` (its arrays after
    ``t``) and, per coarsening (twice the step, half the elements), the estimate of each array's
    error: a third of its largest difference from the coarser run (second order in both)."""
    t, *fine = run(elements, step)
    errors = {}
    for label, args in (("step x 2", (elements, 2 * step)), ("elements / 2", (elements // 2, step))):
        _, *coarse = run(*args)
        errors[label] = [float(np.max(np.abs(a - b))) / 3 for a, b in zip(fine, coarse)]
    print(f"\nreference: {elements} elements, step {step} s; its error estimated from", errors)
    return t, fine, errors


def test_the_modes_of_a_free_hub_with_two_beams_at_rest(tmp_path):
    """The free hub's linear model at rest (titop-fmu linearize, 10 clamped modes per beam): the
    flexible frequencies coupled with the hub's rotation (antisymmetric: 7.9987, 25.034, 67.068
    rad/s) and with its translation (symmetric: 4.0450, 24.308, 67.142 rad/s), each once in
    the plane and once out of it, within 1e-5 of the closed form (measured 1.3e-6); a model
    without the coupling would give the clamped 3.7977 rad/s."""
    from scipy.io import loadmat
    out = tmp_path / "X.mat"
    assert main(["linearize", str(EXAMPLES / "free_floating_hub.toml"), "--out", str(out)]) == 0
    lam = np.linalg.eigvals(loadmat(out)["A"])
    w = np.sort(lam[lam.imag > 1e-6].imag)
    rotation = hub_beam_frequencies("rotation", 200.0, 3)
    translation = hub_beam_frequencies("translation", 100.0, 3)
    exact = np.sort(np.concatenate([rotation, translation]))
    print("\nfree hub at rest [rad/s]: titop", np.round(w[0:12:2], 6), "closed form", np.round(exact, 6))
    np.testing.assert_allclose(w[0:12:2], exact, rtol=1e-5)
    np.testing.assert_allclose(w[1:12:2], exact, rtol=1e-5)


@pytest.mark.slow
def test_spinup_beam_against_geometrically_exact_beams(tmp_path):
    """examples/spinup_beam.toml (10 modes of a 40-element beam, stiffening on), 20 s, in
    process: the tip's transverse position in the hub frame within 1e-3 m of Exudyn's
    geometrically exact beam at every 0.01 s; the same model with ``stiffening = false``
    departs from it by more than 1 m (it diverges once the spin passes the first bending
    frequency)."""
    t, (ref,), errors = converged(lambda n, h: ex.spinup(n, h, 20.0), 40, 0.0025)
    assert max(e for es in errors.values() for e in es) < 1e-4         # converged well below 1e-3 m
    path = EXAMPLES / "spinup_beam.toml"
    rows, header = simulate(tmp_path, path)
    theta = np.array([ex.theta_spinup(x)[0] for x in rows[:, 0]])
    col = header.index
    d = ex.transverse(theta, np.zeros((len(rows), 2)),
                      rows[:, [col("beam.c1.position[1]"), col("beam.c1.position[2]")]])
    np.testing.assert_allclose(rows[:, col("beam.c1.u[2]")], d, rtol=0, atol=1e-9)
    np.testing.assert_allclose(rows[:, 0], t, rtol=0, atol=1e-9)
    err = np.abs(d - ref)
    off, _ = simulate(tmp_path, path, path.read_text().replace("stiffening = true", "stiffening = false"))
    departure = np.abs(off[:, col("beam.c1.u[2]")] - ref)
    print(f"spin-up beam: |d - ref| <= {err.max():.3g} m (at t = {t[err.argmax()]:.2f} s; "
          f"|ref| up to {np.abs(ref).max():.3f} m); without stiffening {departure.max():.3g} m off "
          f"(1 m passed at t = {t[np.argmax(departure > 1)]:.2f} s)")
    assert np.abs(ref).max() > 0.5                                   # the deflection is there
    assert err.max() < 1e-3
    assert departure.max() > 1.0


@pytest.mark.slow
def test_free_floating_hub_against_geometrically_exact_beams(tmp_path):
    """examples/free_floating_hub.toml, 30 s in process: the hub's angle within 1e-4 rad and
    both tips' transverse positions in the hub frame within 1e-4 m of Exudyn's; after the
    torque (t >= 5 s) the angular momentum (``titop_fmu.invariants``, eq. (F18), from the
    states of the run) constant to 1e-8 of its value."""
    from titop_fmu.invariants import momenta
    from titop_fmu.titop.closedloop import ClosedLoop
    from titop_fmu.titop.records import Records

    def reference(n, h):
        return ex.free_hub(hub_torque, 100.0, 200.0, n, h, 30.0)

    t, (theta_ref, plus_ref, minus_ref), errors = converged(reference, 80, 0.0025)
    assert max(e for es in errors.values() for e in es) < 4e-5      # converged well below 1e-4
    cs = read_file(EXAMPLES / "free_floating_hub.toml").system
    loop = ClosedLoop(cs)
    tr = loop.simulate(30.0, 0.01, rtol=1e-12, atol=1e-12)
    rows = loop.recorded(tr, Records(cs, loop.types))
    names = list(cs.recorded)
    theta = np.unwrap(rows[:, names.index("hub.euler[3]")])
    plus, minus = rows[:, names.index("wing1.c1.u[2]")], rows[:, names.index("wing2.c1.u[2]")]
    np.testing.assert_allclose(tr.t, t, rtol=0, atol=1e-9)
    e_theta, e_plus, e_minus = (np.max(np.abs(a - b)) for a, b in
                                ((theta, theta_ref), (plus, plus_ref), (minus, minus_ref)))
    plant = loop.plant
    plant.set_input("hub.ext.w", np.zeros(6))
    n = len(plant.initial_state())
    after = tr.t >= 5.0
    H = np.array([momenta(plant, y[:n])[1] for y in tr.y[after]])
    dH = np.max(np.abs(H - H[0])) / np.linalg.norm(H[0])
    print(f"free hub, 30 s: hub angle {e_theta:.3g} rad off (it turns {theta_ref[-1]:.3f} rad), tips "
          f"{e_plus:.3g} m and {e_minus:.3g} m off (|d| up to {np.abs(plus_ref).max():.3f} m); "
          f"angular momentum after the torque {H[0, 2]:.9g} kg m2/s, constant to {dH:.2g}")
    assert abs(H[0, 2] - 500.0) < 1e-6 * 500                         # the torque's impulse
    assert dH < 1e-8
    assert e_theta < 1e-4 and e_plus < 1e-4 and e_minus < 1e-4
