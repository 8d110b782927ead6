"""Wall time of an assembly FMU of each kind through FMPy's ``simulate_fmu``, in one run.

    python benchmarks/assembly_kinds.py [SYSTEM] [--stop 20] [--repeat 3] [--me-rtol 1e-14]

Exports ``SYSTEM`` (``balloon``, the default, or a system file of TITOP units) as the
pythonfmu assembly FMU and as the standalone one (``titop-fmu export [--standalone]``) into
a temporary folder, then times ``--repeat`` runs of ``--stop`` s at a 0.01 s step in FMPy:
each kind as co-simulation at the default tolerance (1e-10), and the standalone kind as Model
Exchange with CVode at ``--me-rtol``. Prints the best and the median of each, and the ratio of
the kinds' co-simulation medians; the pythonfmu FMU runs in this interpreter (FMPy is a
Python host). Figures: fmus/README.md (*Assembly FMUs*).
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fmpy import simulate_fmu


def timed(repeat, run):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("system", nargs="?", default="balloon")
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--me-rtol", type=float, default=1e-14)
    args = ap.parse_args()
    from titop_fmu.cli import main as cli
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for kind in ("pythonfmu", "standalone"):
            paths[kind] = Path(tmp) / kind / "assembly.fmu"
            paths[kind].parent.mkdir()
            standalone = ["--standalone"] if kind == "standalone" else []
            if cli(["export", args.system, "--out", str(paths[kind]), *standalone]):
                sys.exit(1)
        runs = {f"{kind} co-simulation": (lambda p=path: simulate_fmu(str(p), stop_time=args.stop, step_size=0.01,
                                                                      output_interval=0.01))
                for kind, path in paths.items()}
        runs[f"standalone Model Exchange (CVode {args.me_rtol:g})"] = lambda: simulate_fmu(
            str(paths["standalone"]), fmi_type="ModelExchange", solver="CVode", relative_tolerance=args.me_rtol,
            stop_time=args.stop, output_interval=0.01)
        print(f"{args.system}, {args.stop:g} s, {args.repeat} runs each: best / median wall time [s]")
        medians = {}
        for name, run in runs.items():
            best, medians[name] = timed(args.repeat, run)
            print(f"  {name:45s} {best:8.3f} {medians[name]:8.3f}")
        ratio = medians["pythonfmu co-simulation"] / medians["standalone co-simulation"]
        print(f"  co-simulation, pythonfmu / standalone: {ratio:.1f}")


if __name__ == "__main__":
    main()
