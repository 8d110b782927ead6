"""benchmarks/flexible.py in a tiny configuration, so that it cannot rot: it runs, prints its
table, and its check holds: our flexible body (without stiffening, as the mesh gives none) and
Exudyn's ObjectFFRFreducedOrder built from the same mesh and modes give the same accelerations
of the frame and the modes at a moving, deformed state. No time is asserted."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("exudyn", reason="Exudyn (the crosscheck extra) is the other engine of the benchmark")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_benchmark_runs_and_both_engines_give_the_same_accelerations():
    out = subprocess.run([sys.executable, "benchmarks/flexible.py", "--modes", "2", "6", "--bodies", "1", "2",
                          "--repeats", "1", "--steps", "300", "--mesh", "8", "1", "1"], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=600).stdout
    rows = re.findall(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", out, re.M)
    assert [int(r[0]) for r in rows] == [2, 6], out
    for row in rows:
        assert float(row[1]) < 1e-9                     # the same accelerations, relative to the largest
        assert all(np.isfinite(float(x)) for x in row[2:])   # every cost printed (no time is asserted)
    assert "cost ~ n^p, ours C: p =" in out and "k = 2:" in out
