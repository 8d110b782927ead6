"""A system file through the co-simulation master vs its in-process monolithic twin.

    python benchmarks/cosim_two_branch.py [SYSTEM_FILE] [--stop 10] [--tol 3e-5]

Default file ``examples/two_branch.toml``: a floating hub with a pendulum and a
welded boom carrying a double pendulum and a slider (a topology other than the
balloon's, run with no code change). The twin is the same blocks wired in
:class:`titop_fmu.system.System` (exact loop solve, DOP853 at 1e-12). Prints
the wall time, the statistics and the largest error of every recorded output (its
inertial quantities too: titop_fmu.titop.records.simulate).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from titop_fmu.errors import ParameterWarning
from titop_fmu.cosim import Options, systemfile
from titop_fmu.titop import TitopUnits, monolithic, records

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("system", nargs="?", default=str(ROOT / "examples" / "two_branch.toml"))
    ap.add_argument("--stop", type=float, default=None, help="default: the file's [simulation] stop")
    ap.add_argument("--tol", type=float, default=Options.tol)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    sf = systemfile.read(args.system)
    stop = args.stop or sf.simulation.get("stop", 10.0)
    dt = sf.simulation.get("output_interval", 0.01)

    t0 = time.perf_counter()
    t_ref, y_ref = monolithic.simulate(sf.system, stop, dt)
    print(f"{Path(args.system).name}: monolithic twin, {stop:g} s in {time.perf_counter() - t0:.2f} s wall")
    t0 = time.perf_counter()
    res = records.simulate(sf.system, stop, TitopUnits("fmu"), output_interval=dt,
                           options=Options(tol=args.tol, workers=args.workers))
    wall = time.perf_counter() - t0
    n = min(len(res.t), len(t_ref))
    err = np.abs(res.values[:n] - y_ref[:n]).max(axis=0)
    print(f"FMUs + master, tol {args.tol:g}: {stop:g} s in {wall:.2f} s wall")
    for label, e in zip(res.labels, err):
        print(f"  {label:24s} max error {e:.2e}")
    print(res.stats.summary())


if __name__ == "__main__":
    main()
