"""Observed order of the co-simulation coupling error (step halving).

    python benchmarks/cosim_order.py [--stop 1] [--h 0.04] [--levels 4] [--fmu]

The balloon (docs/balloon-scenario.md) through the co-simulation master with
a fixed macro step ``H``, halved ``--levels - 1`` times, against the in-process
monolithic run (exact loop solve, DOP853 at 1e-12: no coupling error). For
each scheme the maximum error of the nine CSV columns (positions [m], angles
[rad]) over ``[0, --stop]`` on the points every ``--h`` s, which every level
reaches, and the observed order ``log2(e(H) / e(H/2))``:

* ``hold``: inputs held at their start value, no iteration (first order,
  the usual "Jacobi" coupling, for comparison);
* ``midpoint``: the master's base step, inputs held at the midpoint of their
  values at both ends, iterated with state restore (second order);
* ``extrapolated (1,2)`` and ``(1,2,3)``: the master's default scheme with two
  and three runs (orders 4 and 6).

Units run in process by default (the coupling error alone, no FMI overhead);
``--fmu`` runs the same through the FMUs.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

from titop_fmu.cosim import simulate
from titop_fmu.errors import ParameterWarning
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits
from titop_fmu.validate import Series, errors, run_inprocess

SCHEMES = [
    ("hold", dict(hold=True)),
    ("midpoint", dict(sequence=(1,))),
    ("extrapolated (1,2)", dict(sequence=(1, 2))),
    ("extrapolated (1,2,3)", dict(sequence=(1, 2, 3))),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=1.0)
    ap.add_argument("--h", type=float, default=0.04, help="coarsest macro step [s]")
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--fmu", action="store_true", help="FMU units instead of in-process blocks")
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    cs = balloon.system()
    s, tr = run_inprocess(args.stop)
    k = int(round(args.h / 0.01))
    ref = Series("inprocess", tr.t[::k], balloon.columns(s, tr.y)[::k])
    engine = "fmu" if args.fmu else "inprocess"
    print(f"balloon, [0, {args.stop:g}] s, {engine} units; max error of the nine CSV columns vs the "
          f"monolithic run on the {args.h:g} s grid")
    print(f"{'scheme':22s} {'H [s]':>9s} {'error':>10s} {'order':>6s} {'wall [s]':>9s}")
    for label, kw in SCHEMES:
        prev = None
        for level in range(args.levels):
            H = args.h / 2 ** level
            opt = balloon.options(fixed=True, h0=H, h_max=H, tol=1e-9, unit_rtol=1e-13, **kw)
            t0 = time.perf_counter()
            res = simulate(cs, args.stop, TitopUnits(engine), output_interval=args.h, options=opt)
            wall = time.perf_counter() - t0
            _, e, att = errors(Series(engine, res.t, res.values), ref)
            err = float(max(e.max(), att.max()))
            order = f"{math.log2(prev / err):6.2f}" if prev else ""
            print(f"{label:22s} {H:9.5f} {err:10.3e} {order:>6s} {wall:9.2f}")
            prev = err


if __name__ == "__main__":
    main()
