"""The campaign report: envelopes, summary values, worst samples and rank correlations equal
to their definitions computed here from the stored trajectories; the files a person reads."""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

from titop_fmu import campaign  # noqa: E402
from titop_fmu.campaign.report import summarize  # noqa: E402
from titop_fmu.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """12 short balloon runs over an initial angle and a mass, one of them invalid."""
    root = tmp_path_factory.mktemp("report") / "store"
    assert main(["sweep", "balloon", "--vary", "theta1_0=uniform(160deg,180deg)", "--vary", "m_P2=[3.0,2.5,-1.0]",
                 "--sampling", "lhs", "--samples", "12", "--seed", "4", "--stop", "0.2", "--workers", "0", "--quiet",
                 "--out", str(root), "--report", str(root.parent / "report")]) == 0
    assert "## Sensitivities" in (root.parent / "report" / "report.md").read_text()
    return campaign.open(root)


@pytest.mark.slow
def test_summaries_follow_their_definitions(store):
    sm = summarize(store)
    ok = store.samples.index[store.samples.status == "ok"]
    assert list(sm.samples) == list(ok) and 0 < len(ok) < 12
    Y = np.array([store.trajectory(i).to_numpy()[:, 1:] for i in ok])
    assert np.array_equal(sm.envelope["min"], Y.min(axis=0).T) and np.array_equal(sm.envelope["max"], Y.max(axis=0).T)
    assert np.allclose(sm.envelope["p50"], np.median(Y, axis=0).T, rtol=0, atol=1e-15)
    assert np.array_equal(sm.values["final"], Y[:, -1, :])
    dev = np.abs(Y - np.median(Y, axis=0)).max(axis=1)
    assert np.array_equal(sm.values["dev"], dev)
    j = sm.outputs.index("theta1")
    assert sm.worst(j, 1)[0] == ok[np.argmax(dev[:, j])]
    x = store.samples.loc[ok, "theta1_0"].to_numpy()
    for a, name in enumerate(sm.names):                        # Spearman = Pearson of the ranks
        v = store.samples.loc[ok, name].to_numpy()
        for jj in range(len(sm.outputs)):
            ref = np.corrcoef(rankdata(v), rankdata(sm.values["final"][:, jj]))[0, 1]
            assert sm.rho["final"][a, jj] == pytest.approx(ref, abs=1e-12)
    # 0.2 s after release the pendulum angle still orders as its initial value: rho = +1
    assert sm.rho["final"][sm.names.index("theta1_0"), j] == pytest.approx(1.0, abs=1e-12)
    assert np.ptp(x) > 0


@pytest.mark.slow
def test_report_files(store, tmp_path):
    out = tmp_path / "report"
    assert main(["report", str(store.root), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "## Failed runs" in md and "parameter 'm_P2': must be >= 0.0, got -1.0" in md
    assert "## Sensitivities" in md and "## Worst samples" in md
    assert "| theta1 [rad] |" in md and "| y [m] |" in md                      # outputs, with their units
    assert "| theta1_0 [rad] | m_P2 [kg] |" in md                              # varied values, SI as stored
    for png in ("envelopes.png", "sensitivity.png"):
        assert (out / png).stat().st_size > 10_000
    import pandas as pd
    rows = pd.read_csv(out / "summaries.csv", index_col="sample")
    assert list(rows.index) == list(store.samples.index[store.samples.status == "ok"])


def test_every_balloon_value_has_its_unit_stated():
    from titop_fmu.scenarios import balloon
    assert list(balloon.PARAMETER_UNITS) == list(balloon.DEFAULTS)


@pytest.mark.slow
def test_a_system_files_report_gives_its_units_and_without_the_file_none(tmp_path):
    """Units of a system file's parameters and outputs from its units' models (a joint's q in
    rad, a position in m, a mass in kg); the report of a store whose system file is gone
    still written, without units."""
    from titop_fmu.campaign.report import units
    arm = tmp_path / "arm.toml"
    arm.write_text((Path(__file__).resolve().parents[2] / "examples" / "arm.toml").read_text())
    root = tmp_path / "store"
    assert main(["sweep", str(arm), "--vary", "link1.mass=uniform(1.5,2.5)", "--samples", "3", "--stop", "0.05",
                 "--workers", "0", "--quiet", "--out", str(root)]) == 0
    u = units(campaign.open(root))
    assert u == {"link1.mass": "kg", "link1.joint.q[3]": "rad", "link2.joint.q[3]": "rad", "link3.joint.q[3]": "rad",
                 **{f"link3.c1.position[{k}]": "m" for k in (1, 2, 3)}}, u
    arm.unlink()
    assert units(campaign.open(root)) == {}
    assert main(["report", str(root), "--out", str(tmp_path / "report")]) == 0
    assert "| link1.joint.q[3] |" in (tmp_path / "report" / "report.md").read_text()


@pytest.fixture(scope="module")
def spacecraft_store(tmp_path_factory):
    """Three short runs of examples/spacecraft.toml: 44 recorded columns of seven bodies."""
    root = tmp_path_factory.mktemp("spacecraft") / "store"
    assert main(["sweep", str(ROOT / "examples" / "spacecraft.toml"), "--vary", "panel.mass=uniform(1.5,2.5)",
                 "--samples", "3", "--stop", "0.05", "--workers", "0", "--quiet", "--out", str(root)]) == 0
    return campaign.open(root)


def figures(md: str) -> list:
    """``(caption, file)`` of the figures report.md shows."""
    return re.findall(r"!\[([^]]*)\]\(([^)]*)\)", md)


@pytest.mark.slow
def test_figures_are_readable_at_any_number_of_outputs(spacecraft_store, tmp_path):
    """44 outputs (the user's 94 made figures of 1320 x 8960 and 7024 x 320 px): pages of envelopes
    and of sensitivities, twelve outputs at most on a page, a body's outputs together (the bus's
    twelve, the panel's eight, the slider's five with link1's and link2's one, link3's eight, the
    boom's nine); every output on one page; each page at most 1500 px wide and high."""
    import matplotlib.image
    out = tmp_path / "report"
    assert main(["report", str(spacecraft_store.root), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    outputs = spacecraft_store.header[1:]
    assert len(outputs) == 44
    shown = figures(md)
    bodies = list(dict.fromkeys(o.split(".")[0] for o in outputs))
    for kind in ("envelopes", "sensitivity"):
        pages = [(caption, f) for caption, f in shown if f.startswith(kind)]
        assert [caption.split(": ")[1] for caption, _ in pages] == [
            "bus (1/5)", "panel (2/5)", "slider, link1, link2 (3/5)", "link3 (4/5)", "boom (5/5)"], pages
        assert sorted(b for caption, _ in pages for b in caption.split(": ")[1].split(" (")[0].split(", ")) == \
            sorted(bodies)
        for _, f in pages:
            height, width = matplotlib.image.imread(out / f).shape[:2]
            assert width <= 1500 and height <= 1500, (f, width, height)
    listed = re.findall(r"^Outputs on (\S+): (.*)$", md, re.M)
    for kind in ("envelopes", "sensitivity"):
        on_pages = [o.strip("`") for f, names in listed if f.startswith(kind) for o in names.split(", ")]
        assert sorted(on_pages) == sorted(outputs)
        for f, names in listed:
            assert len(names.split(", ")) <= 12


def test_report_outputs_chooses_what_is_reported(spacecraft_store, tmp_path, capsys):
    """report --outputs NAME-OR-PATTERN ...: those outputs alone, in the tables and the figures; a
    pattern that matches nothing is one line, and no report is written."""
    out = tmp_path / "report"
    assert main(["report", str(spacecraft_store.root), "--out", str(out), "--outputs", "bus.p.m[1?]",
                 "link3.joint.q[3]"]) == 0
    md = (out / "report.md").read_text()
    chosen = [o for o in spacecraft_store.header if o.startswith("bus.p.m[1")] + ["link3.joint.q[3]"]
    assert len(chosen) == 10
    assert re.findall(r"^\| (\S+) \[", md, re.M)[:len(chosen)] == chosen                    # the envelope table
    assert "panel.joint.q[3]" not in md
    assert [f for _, f in figures(md)] == ["envelopes.png", "sensitivity.png"]      # ten outputs: one page
    bad = tmp_path / "bad"
    assert main(["report", str(spacecraft_store.root), "--out", str(bad), "--outputs", "bus.p.x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("titop-fmu: error: --outputs bus.p.x: no such output") and err.count("\n") == 1, err
    assert not bad.exists()
