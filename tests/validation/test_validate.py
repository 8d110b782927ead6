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
def test_validate_writes_figures_and_table(tmp_path):
    """The FMUs come from the cache the other tests' runs fill, as a user's do (a cache of its
    own built them again: 25 of this test's 45 s); the FMU cache is
    ``test_titop_systems.py::test_the_fmu_cache_keys_the_kind``'s."""
    assert main(["validate", "--out", str(tmp_path), "--stop", "2"]) == 0
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
    if "- Modelica MultiBody: not run (" not in report:        # a Modelica compiler and the MSL are there
        rows = _report_rows(report, "| Modelica MultiBody (MSL 4.")
        assert len(rows) == 1 and " vs in-process | [0, 2] s |" in rows[0]
        values = [float(v) for v in rows[0].strip("|").split("|")[2:]]
        assert len(values) == 10 and max(values) <= 1e-9
        assert _report_rows(report, "| inprocess vs msl | [0, 2] s |")
        row = next(line for line in report.splitlines() if line.startswith("| FMUs + master vs Modelica | [0, 2] s |"))
        values = [float(v) for v in row.strip("|").split("|")[2:]]
        assert len(values) == 10 and max(values) <= 1e-5
    else:                                                      # only when Modelica cannot run here
        from titop_fmu.modelica import unavailable_reason
        assert unavailable_reason() is not None
    assert "centre of mass drift" in report
    assert default_reference_dir().is_dir()


def test_validate_missing_reference_folder_is_an_error(tmp_path, capsys):
    """A folder the user named that does not exist: exit 2 with the name, before any run."""
    missing = tmp_path / "nonexistent"
    assert main(["validate", "--out", str(tmp_path / "out"), "--references", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "does not exist" in err
    assert not (tmp_path / "out").exists()


def test_validate_bad_msl_folder_is_an_error(tmp_path, capsys):
    assert main(["validate", "--out", str(tmp_path / "out"), "--msl", str(tmp_path)]) == 2
    assert "no Modelica Standard Library" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _report_rows(report, start):
    return [line for line in report.splitlines() if line.startswith(start)]


def test_validate_without_matplotlib_or_modelica(tmp_path, monkeypatch):
    """A minimal install: report.md written, figures skipped with a note, Modelica in one line."""
    import importlib.util

    import titop_fmu.validate as v
    real = importlib.util.find_spec
    monkeypatch.setattr(v.importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "matplotlib" else real(name, *a))
    monkeypatch.setattr(v.modelica, "find_compiler", lambda: None)
    v.validate(tmp_path, stop=0.5, engines=("inprocess",), log=lambda *a: None)
    report = (tmp_path / "report.md").read_text()
    assert "Figures skipped: matplotlib is not installed" in report
    assert not list(tmp_path.glob("*.png"))
    assert "- Modelica MultiBody: not run (no Modelica compiler" in report
    assert _report_rows(report, "| inprocess vs pinocchio | [0, 0.5] s |")
