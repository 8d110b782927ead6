"""The master's tolerance as a user reads it (issue 33): every recorded output within a
small factor of ``--tol`` of the in-process run, relative to the output's range or absolute
below one unit."""

from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.io import read_result

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(path, out, *options):
    assert main(["simulate", str(path), "--stop", "60", "--out", str(out), "--quiet", *options]) == 0
    _, columns = read_result(out)
    return list(columns), np.column_stack(list(columns.values()))


@pytest.mark.slow
def test_the_gimbal_spacecraft_through_the_master_is_within_three_times_its_tolerance(tmp_path):
    """examples/spacecraft_gimbal.toml (a bus, two wings, a 2 kg two-axis gimbal) over 60 s
    through the standalone FMUs at the default tolerance 3e-5: measured 9.9e-6 on the
    azimuth's rate (the issue measured 2.5e-4 on its angle, 13 % of its range)."""
    path = EXAMPLES / "spacecraft_gimbal.toml"
    labels, ref = _run(path, tmp_path / "inprocess.csv")
    _, got = _run(path, tmp_path / "master.csv", "--engine", "fmu")
    size = np.maximum(1.0, ref.max(axis=0) - ref.min(axis=0))
    err = np.abs(got - ref).max(axis=0) / size
    print(f"\n[master accuracy] gimbal spacecraft, 60 s, tol 3e-5: {dict(zip(labels, err.round(9)))}")
    assert err.max() <= 3 * 3e-5
