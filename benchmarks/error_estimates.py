"""The master's printed global-error estimate against its true error, system by system.

    python benchmarks/error_estimates.py [--systems balloon spacecraft hover gimbal chain8:5 chain8:10]
                                         [--tol 3e-5] [--workers 0]

Each system runs twice: in process (the monolithic engine at rtol 1e-12, the reference)
and through the co-simulation master on the standalone FMUs at the default settings (or
``--tol``); the error of each recorded output is its largest difference from the
reference, relative to the output's range or absolute below one unit, as the master's
``--tol`` reads it. Printed per system: the largest error and where, the run's printed
estimate, their ratio (at or above 1: the estimate bounds the error), the macro steps and
the master's wall time.

* ``balloon`` (20 s), ``spacecraft`` (``examples/spacecraft.toml``, 20 s), ``hover``
  (``examples/spacecraft_hover.toml``, 20 s), ``gimbal`` (``examples/spacecraft_gimbal.toml``,
  a light two-axis antenna gimbal, 60 s): ``titop-fmu simulate`` as a user runs it, in
  process and ``--engine fmu``;
* ``chainN:T``: a chain of ``N`` bodies on a floating base (``generate.cosystem(N, 1)``) over
  ``T`` s, its monolithic twin against the master (a chain of 8 tumbles after 8 s: its
  errors grow as a chaotic system's).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FILES = {"balloon": ("balloon", 20.0), "spacecraft": (ROOT / "examples" / "spacecraft.toml", 20.0),
         "hover": (ROOT / "examples" / "spacecraft_hover.toml", 20.0),
         "gimbal": (ROOT / "examples" / "spacecraft_gimbal.toml", 60.0)}


def scaled_errors(got, ref):
    """Per column: the largest |got - ref| over the range of ``ref`` (absolute below one unit)."""
    size = np.maximum(1.0, ref.max(axis=0) - ref.min(axis=0))
    return np.abs(got - ref).max(axis=0) / size


def file_system(system, stop, options):
    """``(labels, errors, estimate, macro steps, master wall)`` of a system file (or a built-in
    name) through the command line, in process and through the FMUs."""
    from titop_fmu.cli import main
    from titop_fmu.io import read_result

    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for engine, extra in (("inprocess", ["--quiet"]), ("fmu", ["--engine", "fmu", *options])):
            out = Path(tmp) / f"{engine}.csv"
            said = io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stderr(said):
                code = main(["simulate", str(system), "--stop", str(stop), "--out", str(out), *extra])
            wall = time.perf_counter() - t0
            if code:
                sys.exit(f"{system} ({engine}) failed: {said.getvalue()}")
            _, columns = read_result(out)
            runs[engine] = (list(columns), np.column_stack(list(columns.values())), said.getvalue(), wall)
    labels, ref, _, _ = runs["inprocess"]
    _, got, said, wall = runs["fmu"]
    estimate = float(re.search(r"estimated global error \([^)]*\): (\S+)", said).group(1))
    steps = int(re.search(r"macro steps (\d+)", said).group(1))
    return labels, scaled_errors(got, ref), estimate, steps, wall


def chain(n, stop, tol, workers):
    """The same for the chain of ``n`` bodies, through the Python interface."""
    from titop_fmu.cosim import Options
    from titop_fmu.scenarios import generate
    from titop_fmu.titop import monolithic, records
    from titop_fmu.titop.units import TitopUnits

    cs = generate.cosystem(n, 1)
    _, truth = monolithic.simulate(cs, stop, 0.01)
    options = Options(**{k: v for k, v in (("tol", tol), ("workers", workers)) if v is not None})
    t0 = time.perf_counter()
    res = records.simulate(cs, stop, TitopUnits("fmu"), output_interval=0.01, options=options)
    wall = time.perf_counter() - t0
    return res.labels, scaled_errors(np.asarray(res.values), truth), res.stats.error_estimate, \
        res.stats.macro_steps, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", nargs="+", default=["balloon", "spacecraft", "hover", "gimbal", "chain8:5",
                                                      "chain8:10"])
    ap.add_argument("--tol", type=float, help="the master's tolerance (default: its default)")
    ap.add_argument("--workers", type=int, help="the master's worker processes (default: its default)")
    args = ap.parse_args(argv)
    for name in args.systems:                       # every name checked before the first run
        if name not in FILES and not re.fullmatch(r"chain\d+:\d+(\.\d*)?", name):
            sys.exit(f"unknown system {name!r}: balloon, spacecraft, hover, gimbal or chainN:T (e.g. chain8:5)")
    options = ([] if args.tol is None else ["--tol", str(args.tol)]) + \
        ([] if args.workers is None else ["--workers", str(args.workers)])
    print("| system | simulated | largest error (where) | estimate | estimate / error | macro steps | master wall |")
    print("|---|---|---|---|---|---|---|")
    for name in args.systems:
        if name.startswith("chain"):
            n, stop = name[len("chain"):].split(":")
            labels, err, estimate, steps, wall = chain(int(n), float(stop), args.tol, args.workers)
            what, stop = f"a chain of {n}", float(stop)
        else:
            system, stop = FILES[name]
            labels, err, estimate, steps, wall = file_system(system, stop, options)
            what = name if name == "balloon" else f"`{Path(system).relative_to(ROOT)}`"
        k = int(np.argmax(err))
        ratio = estimate / err[k] if err[k] > 0 else float("inf")
        print(f"| {what} | {stop:g} s | {err[k]:.2g} (`{labels[k]}`) | {estimate:.2g} | {ratio:.2g} | {steps} | "
              f"{wall:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
