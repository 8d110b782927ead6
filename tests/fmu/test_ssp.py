"""SSP export (``titop-fmu export SYSTEM --ssp NAME.ssp``) and the master running an ``.ssp``.

The package is read back by FMPy's own SSP reader (``fmpy.ssp.ssd.read_ssd``, which also
validates it against the SSP 1.0 schemas) and compared with the system file it was written
from; the master's run of the package equals its run of the system file.
"""

import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from fmu_fixtures import fmu_dir, fmu_paths, standalone_dir, standalone_paths  # noqa: F401
from titop_fmu.cli import main
from titop_fmu.cosim import ssp, systemfile
from titop_fmu.cosim.names import port_names

from fmpy import read_model_description  # noqa: E402  (fmu_fixtures skips without FMPy)
from fmpy.ssp.ssd import read_ssd  # noqa: E402


ROOT = Path(__file__).resolve().parents[2]
BALLOON = ROOT / "examples" / "balloon.toml"


@pytest.fixture(scope="module")
def balloon_ssp(tmp_path_factory, standalone_dir):
    """The package of the default kind of block FMUs (standalone)."""
    out = tmp_path_factory.mktemp("ssp") / "balloon.ssp"
    assert main(["export", str(BALLOON), "--ssp", str(out), "--fmu-dir", str(standalone_dir)]) == 0
    return out


def test_the_block_fmus_of_a_kind_go_into_the_package(fmu_dir, standalone_dir, tmp_path, capsys):
    """--fmu-kind chooses the block FMUs the package holds (default standalone: no Python inside);
    an FMU of the other kind in the --fmu-dir named is one clear error."""
    for kind, folder in (("pythonfmu", fmu_dir), ("standalone", standalone_dir)):
        out = tmp_path / f"{kind}.ssp"
        assert main(["export", str(BALLOON), "--ssp", str(out), "--fmu-dir", str(folder), "--fmu-kind", kind]) == 0
        with zipfile.ZipFile(out) as z:
            fmu = tmp_path / "base.fmu"
            fmu.write_bytes(z.read("resources/floating_base_c1.fmu"))
        assert read_model_description(str(fmu)).coSimulation.needsExecutionTool == (kind == "pythonfmu")
    capsys.readouterr()
    assert main(["export", str(BALLOON), "--ssp", str(tmp_path / "x.ssp"), "--fmu-dir", str(fmu_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "floating_base_c1.fmu is a pythonfmu FMU, not standalone" in err, err


def expected_connections(cs) -> set:
    """Every scalar connection of the file's links (motion down, wrench up), written out here."""
    out = set()
    for child, parent in cs.links:
        a, _, ci = child.partition(".")
        b, _, p = parent.partition(".")
        out |= {(a, f"{ci}.m[{k}]", b, f"{p}.m[{k}]") for k in range(1, 19)}
        out |= {(b, f"{p}.w[{k}]", a, f"{ci}.w[{k}]") for k in range(1, 7)}
    return out


def test_fmpy_reads_the_same_system(balloon_ssp):
    cs = systemfile.read(BALLOON).system
    ssd = read_ssd(str(balloon_ssp))                     # validates against the SSP 1.0 schemas
    comps = {c.name: c for c in ssd.system.elements}
    assert list(comps) == list(cs.units)
    with zipfile.ZipFile(balloon_ssp) as z:
        for name, c in comps.items():
            with z.open(c.source) as f, open(balloon_ssp.parent / f"{name}.fmu", "wb") as g:
                g.write(f.read())
            md = read_model_description(str(balloon_ssp.parent / f"{name}.fmu"))
            assert md.coSimulation.modelIdentifier == cs.units[name].model
    conns = {(c.startElement, c.startConnector, c.endElement, c.endConnector) for c in ssd.system.connections}
    assert conns == expected_connections(cs)
    with zipfile.ZipFile(balloon_ssp) as z:                 # the recorded outputs: an annotation
        note = ElementTree.fromstring(z.read("SystemStructure.ssd")).find(
            "ssd:System/ssd:Annotations/ssc:Annotation", ssp.NS)
    assert note.get("type") == ssp.RECORD_ANNOTATION
    assert [f"{v.get('element')}.{v.get('name')}" for v in note.iter("Variable")] == cs.recorded
    for name, c in comps.items():
        (binding,) = c.parameterBindings
        values = {p.name: float(p.value) for p in binding.parameterValues[0].parameters}
        given = dict(cs.units[name].parameters)
        for ref, v in cs.inputs.items():                 # constant inputs: start values of the inputs
            unit, _, port = ref.partition(".")
            if unit == name:
                given.update(zip(port_names({port: len(v)}), v))
        assert values == {k: float(v) for k, v in given.items()}


def test_the_reader_gives_the_system_of_the_file(balloon_ssp, tmp_path):
    sf = ssp.read(balloon_ssp, tmp_path)
    cs = systemfile.read(BALLOON).system
    assert list(sf.system.units) == list(cs.units)
    for name, spec in sf.system.units.items():
        assert read_model_description(spec.model).coSimulation.modelIdentifier == cs.units[name].model
        assert spec.parameters == cs.units[name].parameters
    assert {tuple(c) for c in sf.system.connections} == \
        {(f"{a}.{o}", f"{b}.{i}") for a, o, b, i in expected_connections(cs)}
    assert sf.system.recorded == cs.recorded
    assert sf.system.inputs == {f"balloon.ext.w[{k}]": v for k, v in
                                enumerate(cs.inputs["balloon.ext.w"], 1)}
    assert sf.simulation == {"stop": 20.0}


@pytest.mark.slow
def test_the_master_runs_the_ssp_as_the_system_file(balloon_ssp, standalone_dir, tmp_path):
    """Same FMUs, same parameters, connections per scalar instead of per port: the same bits."""
    runs = {}
    for what in (balloon_ssp, BALLOON):
        out = tmp_path / f"{Path(what).suffix[1:]}.csv"
        assert main(["simulate", str(what), "--engine", "fmu", "--stop", "1", "--fmu-dir", str(standalone_dir),
                     "--workers", "0", "--quiet", "--out", str(out)]) == 0
        runs[what] = (out.read_text().splitlines()[0], np.loadtxt(out, delimiter=",", skiprows=1))
    (head_ssp, a), (head_toml, b) = runs.values()
    assert head_ssp == head_toml and a.shape == (101, 7)
    assert np.array_equal(a, b)


def test_system_file_round_trip():
    """systemfile.to_dict then from_dict gives the system back (the assembly FMU carries it so)."""
    cs = systemfile.read(ROOT / "examples" / "two_branch.toml").system
    back, _ = systemfile.from_dict(systemfile.to_dict(cs))
    assert {n: (s.model, s.parameters) for n, s in back.units.items()} == \
        {n: (s.model, s.parameters) for n, s in cs.units.items()}
    assert (back.connections, back.links, back.recorded) == (cs.connections, cs.links, cs.recorded)
    assert {k: list(v) for k, v in back.inputs.items()} == {k: list(v) for k, v in cs.inputs.items()}


def test_libcosim_loads_the_ssp(balloon_ssp, tmp_path):
    """libcosim's own SSP reader (C++) loads the package: the four units with their FMUs, and
    after one short step (it has no loop solver: not a run) the parameter sets applied."""
    pytest.importorskip("libcosimpy", reason="libcosim runs need libcosimpy (pip install -e '.[hosts]')")
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    log_output_level(CosimLogLevel.WARNING)
    ex = CosimExecution.from_ssp_file(ssp_path=str(balloon_ssp), step_size=int(1e7))    # ns
    from libcosimpy.CosimObserver import CosimObserver
    cs = systemfile.read(BALLOON).system
    unpacked = ssp.read(balloon_ssp, tmp_path).system
    index = {s.name.decode(): s.index for s in ex.slave_infos()}
    assert sorted(index) == sorted(cs.units)
    observer = CosimObserver.create_last_value()
    ex.add_observer(observer=observer)
    assert ex.step()
    for unit, name in (("balloon", "inertia[2,3]"), ("slider", "k"), ("pendulum1", "mass"), ("pendulum2", "q0")):
        md = read_model_description(unpacked.units[unit].model)
        vr = next(v.valueReference for v in md.modelVariables if v.name == name)
        assert observer.last_real_values(slave_index=index[unit], variable_references=[vr]) == \
            [pytest.approx(cs.units[unit].parameters[name], rel=1e-15)], (unit, name)


@pytest.mark.slow
def test_inertial_outputs_travel_in_the_package(standalone_dir, tmp_path):
    """examples/two_branch.toml records inertial quantities (a position, a velocity, a DCM): the
    package lists them as written (they used to be dropped without a word), and the master
    computes them from its TITOP block FMUs as from the file's (the same bits)."""
    two = ROOT / "examples" / "two_branch.toml"
    out = tmp_path / "two.ssp"
    assert main(["export", str(two), "--ssp", str(out), "--fmu-dir", str(standalone_dir)]) == 0
    sf = ssp.read(out, tmp_path / "unpacked")
    assert sf.system.recorded == systemfile.read(two).system.recorded
    assert {"tip.com.position", "pend.c1.velocity", "boom.dcm"} <= set(sf.system.recorded)
    runs = []
    for what in (out, two):
        csv = tmp_path / f"{what.suffix[1:]}.csv"
        assert main(["simulate", str(what), "--engine", "fmu", "--stop", "0.2", "--fmu-dir", str(standalone_dir),
                     "--workers", "0", "--quiet", "--out", str(csv)]) == 0
        runs.append((csv.read_text().splitlines()[0], np.loadtxt(csv, delimiter=",", skiprows=1)))
    assert runs[0][0] == runs[1][0] and "boom.dcm[9]" in runs[0][0]
    assert np.array_equal(runs[0][1], runs[1][1])
