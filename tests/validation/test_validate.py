"""The validation report (titop-fmu validate) and the committed references."""

from pathlib import Path

import numpy as np
import pytest

from titop_fmu.scenarios import balloon
from titop_fmu.cli import main
from titop_fmu.validate import OUTPUTS, Series, default_reference_dir, errors, load_reference

REFERENCE = Path(__file__).resolve().parents[2] / "validation" / "reference" / "balloon_pinocchio.csv"


def test_committed_reference_matches_the_inprocess_run(balloon_run):
    """Independent engine vs TITOP in-process over the full 20 s: <= 1e-8 on all nine outputs."""
    s, tr = balloon_run
    ref = load_reference(REFERENCE)
    assert ref.info["tool"].startswith("pinocchio") and ref.t[-1] == 20.0
    t, e, att = errors(Series("inprocess", tr.t, balloon.columns(s, tr.y)), ref)
    assert len(t) == 2001
    assert e.max() <= 1e-8 and att.max() <= 1e-8


def test_errors_wrap_angles_and_compare_attitudes():
    t = np.array([0.0, 0.01])
    a = np.zeros((2, 9))
    b = np.zeros((2, 9))
    a[1, 3], b[1, 3] = np.pi - 1e-3, -np.pi + 1e-3           # phi across the wrap
    _, e, att = errors(Series("a", t, a), Series("b", t, b))
    assert np.isclose(e[1, 3], 2e-3) and np.isclose(att[1], 2e-3)


@pytest.mark.slow
def test_validate_writes_figures_and_table(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))       # FMUs built here, not in the user's cache
    assert main(["validate", "--out", str(tmp_path), "--stop", "2"]) == 0
    assert list((tmp_path / "cache" / "titop-fmu").glob("fmus-*/floating_base_c1.fmu"))
    for name in OUTPUTS:
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    report = (tmp_path / "report.md").read_text()
    assert "| inprocess vs pinocchio | [0, 2] s |" in report
    row = next(line for line in report.splitlines() if line.startswith("| inprocess vs pinocchio"))
    values = [float(v) for v in row.strip("|").split("|")[2:]]
    assert len(values) == 10 and max(values) <= 1e-9
    row = next(line for line in report.splitlines() if line.startswith("| fmu vs pinocchio"))
    values = [float(v) for v in row.strip("|").split("|")[2:]]
    assert len(values) == 10 and max(values) <= 1e-5          # the master's default tolerance
    assert "| fmu vs inprocess | [0, 2] s |" in report
    assert "centre of mass drift" in report
    assert default_reference_dir().is_dir()
