"""The balloon through the TITOP FMUs and the co-simulation master vs the in-process
monolithic run: wall time, statistics and maximum error of the nine CSV columns.

    python benchmarks/cosim_balloon.py [--stop 20] [--tol 3e-5 5e-8] [--dt-max 0.025 0.01] [--inprocess-units]

Each run is timed as a user sees it (units created, FMUs loaded, worker
processes started, the 20 s simulated, output interpolated); FMUs are built
into the cache first so that the build is not counted. The error is the
largest absolute difference over [0, stop] on the 0.01 s grid (m, rad; angles
wrapped) against the in-process monolithic run (exact loop, DOP853, 1e-12).
"""

from __future__ import annotations

import argparse
import time
import warnings

from titop_fmu.cosim import simulate
from titop_fmu.errors import ParameterWarning
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits
from titop_fmu.validate import Series, errors, run_inprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--tol", type=float, nargs="+", default=[3e-5, 5e-8],
                    help="master tolerances to run (default: the default 3e-5, and 5e-8)")
    ap.add_argument("--dt-max", type=float, nargs="+", default=[0.025, 0.01],
                    help="largest macro step of each run (default: the default 0.025, and 0.01)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--inprocess-units", action="store_true", help="the same master without FMI")
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    engine = "inprocess" if args.inprocess_units else "fmu"

    t0 = time.perf_counter()
    s, tr = run_inprocess(args.stop)
    ref = Series("inprocess", tr.t, balloon.columns(s, tr.y))
    print(f"in-process monolithic run: {time.perf_counter() - t0:.2f} s wall")
    units = TitopUnits(engine)
    units.unit_types(balloon.system())          # the FMUs built now if absent, not inside the timing

    if len(args.dt_max) != len(args.tol):
        ap.error("give one --dt-max per --tol")
    for tol, dt_max in zip(args.tol, args.dt_max):
        t0 = time.perf_counter()
        res = simulate(balloon.system(), args.stop, units, output_interval=0.01,
                       options=balloon.options(tol=tol, h_max=dt_max, workers=args.workers))
        wall = time.perf_counter() - t0
        _, e, att = errors(Series(engine, res.t, res.values), ref)
        worst = e.max(axis=0)
        print(f"\n{engine} units, tol {tol:g}, dt-max {dt_max:g}: {args.stop:g} s in {wall:.2f} s wall "
              f"({wall / args.stop:.2f} s per simulated second)")
        print("max error: " + ", ".join(f"{c} {v:.1e}" for c, v in zip(balloon.COLUMNS[1:], worst))
              + f"; attitude angle {att.max():.1e}; overall {max(worst.max(), att.max()):.2e}")
        print(res.stats.summary())


if __name__ == "__main__":
    main()
