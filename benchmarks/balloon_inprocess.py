"""Wall time of the in-process monolithic balloon run (docs/balloon-scenario.md).

    python benchmarks/balloon_inprocess.py [--stop 20] [--rtol 1e-12]

Prints, on the C kernel and on the NumPy blocks (``System.simulate(kernel=...)``), the
cost of one right-hand-side evaluation (each one solves the algebraic loop exactly),
and per ``--rtol`` the wall time, the number of evaluations and the error against the
committed Pinocchio reference.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from titop_fmu.scenarios import balloon
from titop_fmu.errors import ParameterWarning

REF = Path(__file__).resolve().parents[1] / "validation" / "reference" / "balloon_pinocchio.csv"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--rtol", type=float, nargs="+", default=[1e-12, 1e-10, 1e-8])
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        s = balloon.build()
    y = s.initial_state()
    ref = np.loadtxt(REF, delimiter=",", skiprows=1)
    for kernel, rhs in (("c", s.compiled_rhs()), ("numpy", s.rhs)):
        n = 300
        t0 = time.perf_counter()
        for _ in range(n):
            rhs(0.0, y)
        per_rhs = (time.perf_counter() - t0) / n
        print(f"{'C kernel' if kernel == 'c' else 'NumPy blocks'}: one right-hand side (kinematics + exact "
              f"loop solve) {per_rhs * 1e6:.1f} us")
        print(f"{'rtol':>8} {'wall [s]':>9} {'wall/sim s':>10} {'RHS evals':>10} {'max |err| vs Pinocchio':>24}")
        for rtol in args.rtol:
            tr = s.simulate(args.stop, 0.01, rtol=rtol, atol=rtol, kernel=kernel)
            cols = balloon.columns(s, tr.y)
            err = np.max(np.abs(cols - ref[:len(cols), 1:]))
            print(f"{rtol:8.0e} {tr.wall:9.2f} {tr.wall / args.stop:10.3f} {tr.nfev:10d} {err:24.2e}")

if __name__ == "__main__":
    main()
