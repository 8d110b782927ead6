"""The system's totals as recorded outputs (system.momentum, system.com.momentum, system.energy,
system.com): conservation laws on the in-process engine, the co-simulation master's values,
and an independent engine (Pinocchio's centroidal momentum, centre of mass and energies)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.titop import TitopUnits, monolithic, records
from titop_fmu.titop import overrides as ov
from titop_fmu.titop.records import Records

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TOTALS = ["system.momentum", "system.com.momentum", "system.energy", "system.com"]
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def example(name, overrides=None, record=TOTALS):
    cs = systemfile.read(EXAMPLES / name).system
    cs = ov.apply(cs, overrides or {})
    cs.recorded[:] = list(record)
    return cs


def columns(cs, values):
    return {label: values[:, j] for j, label in enumerate(Records(cs).labels)}


def vectors(c, name, n):
    return np.column_stack([c[f"{name}[{k}]"] for k in range(1, n + 1)])


def free(name):
    """The example with no gravity on any unit and no external load: a free system."""
    cs = systemfile.read(EXAMPLES / name).system
    return {**{f"{u}.gravity": [0.0, 0.0, 0.0] for u in cs.units}, "bus.ext.w": [0.0] * 6}


def momentum_drift(name, overrides, rtol):
    """``({p, H_I, H_G: max |x(t) - x(0)| / |x(0)|}, t, columns)`` over 60 s in process."""
    cs = example(name, overrides)
    t, values = monolithic.simulate(cs, 60.0, 0.1, rtol, rtol)
    c = columns(cs, values)
    h, h_G = vectors(c, "system.momentum", 6), vectors(c, "system.com.momentum", 6)
    x = {"p": h[:, :3], "H_I": h[:, 3:], "H_G": h_G[:, 3:]}
    drift = {k: np.linalg.norm(v - v[0], axis=1).max() / max(np.linalg.norm(v[0]), 1e-300) for k, v in x.items()}
    print(f"\n[totals] {name}, 60 s in process at rtol {rtol:g}: relative drift " +
          ", ".join(f"{k} {d:.1e}" for k, d in drift.items() if np.linalg.norm(x[k][0])) +
          f"; |p| {np.linalg.norm(x['p'][0]):.4g} kg m/s, |H_I| {np.linalg.norm(x['H_I'][0]):.4g} kg m2/s")
    return drift, t, c, cs


def test_a_free_systems_momentum_is_constant_over_60_s():
    """The spacecraft (full inertias, offset centres of mass, oblique joints, a spring, dampers,
    a link spinning many turns) without gravity or thrust, drifting and tumbling: its linear
    momentum and its angular momenta about the origin and about the centre of mass stay what
    they were, to 1e-12 of their size over 60 s in process at rtol 1e-13 (the drift is the
    integrator's: 1.4e-12 at the default 1e-12); its centre of mass moves as p/m t. The
    satellite of the tutorial, spinning, at the default tolerance: its angular momentum too."""
    drift, t, c, cs = momentum_drift("spacecraft.toml", free("spacecraft.toml"), 1e-13)
    assert max(drift.values()) <= 1e-12
    p0 = vectors(c, "system.momentum", 3)[0]
    assert np.linalg.norm(p0) > 1.0
    mass = sum(float(u.parameters["mass"]) for u in cs.units.values())
    com = vectors(c, "system.com", 3)
    assert np.abs(com - (com[0] + np.outer(t, p0 / mass))).max() <= 1e-10 * np.abs(com).max()
    drift, *_ = momentum_drift("satellite.toml", {}, 1e-12)
    assert drift["H_I"] <= 1e-12 and drift["H_G"] <= 1e-12


def test_energy_is_constant_without_dampers_and_never_grows_with_them():
    """Undamped, the total energy (kinetic + gravity + the hover thrust's potential + the
    slider's spring) of the hovering spacecraft is constant; its parts exchange. With the
    dampers, it never increases."""
    dampers = {f"{u}.d": 0.0 for u in ("panel", "slider", "link1", "link2", "link3")}
    cs = example("spacecraft_hover.toml", dampers)
    _, values = monolithic.simulate(cs, 20.0, 0.05)
    E = vectors(columns(cs, values), "system.energy", 4)
    assert np.allclose(E[:, 0], E[:, 1:].sum(axis=1), rtol=0, atol=1e-12 * np.abs(E).max())
    drift = np.abs(E[:, 0] - E[0, 0]).max() / np.abs(E[:, 1:]).max()
    print(f"\n[totals] undamped hovering spacecraft, 20 s: energy drift {drift:.1e} of its largest part")
    assert drift <= 1e-10 and min(np.ptp(E[:, k]) for k in (1, 2, 3)) > 1e-3      # the parts exchange
    cs = example("spacecraft_hover.toml")
    _, values = monolithic.simulate(cs, 20.0, 0.05)
    E = vectors(columns(cs, values), "system.energy", 4)[:, 0]
    assert np.diff(E).max() <= 1e-10 * abs(E).max() and E[0] - E[-1] > 0.1


def test_the_loads_and_the_loop_closure_have_their_potentials():
    """An arm held by its constant shoulder torque, dampers off (potential -tau q), and a
    pendulum tied to the ground by a loop-closure spring (1/2 dx K dx): energy constant."""
    cs = example("arm.toml", {f"link{i}.d": 0.0 for i in (1, 2, 3)}, ["system.energy"])
    _, values = monolithic.simulate(cs, 5.0, 0.01)
    assert np.ptp(values[:, 1]) > 1.0                                       # it moves: energy is exchanged
    assert np.abs(values[:, 0] - values[0, 0]).max() <= 1e-10 * np.abs(values).max()
    path = ROOT / "tests" / "physics" / "tied.toml"
    cs = systemfile.read(path).system
    _, values = monolithic.simulate(cs, 5.0, 0.01)
    assert np.ptp(values[:, 3]) > 1.0                                       # the closure's spring works
    assert np.abs(values[:, 0] - values[0, 0]).max() <= 1e-10 * np.abs(values).max()


def test_the_master_records_the_totals_from_the_outputs_it_records():
    """Through the co-simulation master (its in-process units), the totals are computed on the
    output grid from the outputs it records: the in-process run's values within the coupling
    tolerance, and the master's own momentum constant to it."""
    cs = example("satellite.toml", record=["system.momentum", "system.energy", "panel1.joint.q[3]"])
    res = records.simulate(cs, 3.0, TitopUnits("inprocess"), output_interval=0.01)
    _, truth = monolithic.simulate(cs, 3.0, 0.01)
    assert res.labels == Records(cs).labels
    assert np.abs(res.values - truth).max() <= 1e-5 * np.abs(truth).max()
    H = res.values[:, 3:6]
    assert np.abs(H - H[0]).max() <= 1e-6 * np.linalg.norm(H[0])


@pytest.mark.parametrize("name", ["spacecraft.toml", "spacecraft_hover.toml"])
def test_the_totals_are_pinocchios(name):
    """At the states of a 10 s in-process run, every total equals Pinocchio's: the centroidal
    momentum (pin.computeCentroidalMomentum, about the centre of mass in the world's axes), the
    angular momentum about the origin from it, the centre of mass (pin.centerOfMass), the
    kinetic and gravity energies (pin.computeKineticEnergy, pin.computePotentialEnergy), plus
    the slider's spring and the hover thrust's potential written from the file's values."""
    pin = pytest.importorskip("pinocchio")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from validation.engines.pinocchio_titop import PinocchioTwin
    cs = example(name)
    tw = PinocchioTwin(cs)
    tr, values = monolithic.run(cs, 10.0, 0.05)
    c = columns(cs, values)
    s = tr.system
    k = float(cs.units["slider"].parameters["k"])
    thrust = np.asarray(cs.inputs["bus.ext.w"], dtype=float)
    force = thrust[:3] if cs.units["bus"].parameters.get("ext_frame", 0) == 0 else np.zeros(3)
    worst = {}
    for i, y in enumerate(tr.y):
        q, v = tw.configuration({n: y[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states})
        hg = pin.computeCentroidalMomentum(tw.model, tw.data, q, v)
        G = pin.centerOfMass(tw.model, tw.data, q, v).copy()
        T = pin.computeKineticEnergy(tw.model, tw.data, q, v)
        V = pin.computePotentialEnergy(tw.model, tw.data, q) - force @ tw.data.oMi[tw.model.getJointId("bus")].translation
        U = 0.5 * k * q[tw.joints["slider"][1]] ** 2
        theirs = {"system.momentum": np.concatenate([hg.linear, hg.angular + np.cross(G, hg.linear)]),
                  "system.com.momentum": np.concatenate([hg.linear, hg.angular]),
                  "system.com": G, "system.energy": np.array([T + V + U, T, V, U])}
        for total, value in theirs.items():
            mine = np.array([c[f"{total}[{j + 1}]"][i] for j in range(len(value))])
            worst[total] = max(worst.get(total, 0.0), np.abs(mine - value).max() / max(1.0, np.abs(value).max()))
    print(f"\n[totals] {name} against Pinocchio, 201 states over 10 s: " +
          ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) <= 1e-12


@pytest.mark.parametrize("record, args, message", [
    ("system.momentum[7]", ["simulate"], "system.momentum has 6 components"),
    ("system.impulse", ["simulate"], "the system records system.com, system.momentum"),
    ("sytem.momentum", ["simulate"], "did you mean 'system'"),
    ("system.momentum", ["export", "--out", "{tmp}/s.fmu"], "an exported FMU does not compute the system's totals"),
    ("system.energy", ["linearize", "--outputs", "system.energy", "--out", "{tmp}/s.npz"],
     "not outputs of a linear model"),
])
def test_a_total_asked_where_it_is_not_is_one_line(tmp_path, capsys, record, args, message):
    text = (EXAMPLES / "satellite.toml").read_text().replace('"panel1.joint.q[3]", "panel2.joint.q[3]",',
                                                               f'"{record}", "panel1.joint.q[3]",')
    path = tmp_path / "s.toml"
    path.write_text(text)
    argv = [args[0], str(path), *[a.format(tmp=tmp_path) for a in args[1:]]]
    if args[0] == "simulate":
        argv += ["--stop", "0.1", "--out", str(tmp_path / "s.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("s.*[!l]"))                           # nothing written but the file


def test_a_sensor_of_a_total_and_a_system_with_an_fmu_unit_are_refused(tmp_path):
    cs = example("satellite.toml")
    cs.add("gyro", "sensor", {"of": "system.momentum"})
    with pytest.raises(ConnectionError_, match="the system's totals are recorded, not measured"):
        from titop_fmu.titop.checks import check
        check(cs)
    cs = example("satellite.toml")
    fmu = tmp_path / "other.fmu"
    fmu.write_bytes(b"")
    cs.add("other", str(fmu))
    with pytest.raises(ConnectionError_, match="'other' is an FMU file"):
        Records(cs)


def test_the_linearized_record_list_leaves_the_totals_out(tmp_path, capsys):
    text = (EXAMPLES / "satellite.toml").read_text().replace('"panel1.joint.q[3]", "panel2.joint.q[3]",',
                                                               '"system.momentum", "panel1.joint.q[3]",')
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert main(["linearize", str(path), "--out", str(tmp_path / "s.npz")]) == 0
    assert "without the system's totals" in capsys.readouterr().out
    from titop_fmu.linear import LinearModel
    assert LinearModel.load(tmp_path / "s.npz").outputs[0] == "panel1.joint.q[3]"
