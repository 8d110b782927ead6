"""Whole-process wall time of the balloon's in-process monolithic run against Pinocchio.

    python benchmarks/vs_pinocchio.py [--stop 20] [--repeats 3] [--pin-rtol 1e-10] [--titop-rtol 1e-12]

Both are timed as separate processes, as a user runs them (interpreter start,
imports, the run, the CSV written), alternately, ``--repeats`` times each; the
medians and their ratio are printed:

* TITOP: ``titop-fmu simulate balloon --engine inprocess --stop 20 --out ... --quiet``
  (the exact loop solve on the C kernel, DOP853 at ``--titop-rtol``, the command's
  default 1e-12, and like for like at Pinocchio's ``--pin-rtol``; and at the default
  rtol on the NumPy blocks, ``--kernel numpy``), run as ``python -m titop_fmu.cli`` so
  that the package of this checkout is used;
* Pinocchio: ``validation/engines/pinocchio_balloon.py`` (ABA, the same
  scenario), scipy DOP853 at ``--pin-rtol`` (rtol = atol), the same output grid.

With ``--fmu``, also the FMUs through the co-simulation master, on both kinds of FMU
(``titop-fmu simulate balloon --engine fmu --fmu-kind standalone|pythonfmu``, default
settings, and the standalone FMUs with the tight recipe ``--tol 5e-8 --dt-max 0.01``),
timed in the same rounds (the FMUs are built into the cache first, outside the timing);
``--workers 1 2``: the standalone FMUs at default settings on that many processes too.

With ``--c-host``, also the balloon as one standalone assembly FMU (``titop-fmu export balloon
--standalone``, its loop solved exactly inside, exported outside the timing) stepped at 0.01 s
by the project's C host (``tests/fmu/c/fmu_harness.c``, built with ``cc``; an empty
environment, as the standalone FMUs need none), timed in the same rounds: what the same
blocks cost without a master.

Also printed: each TITOP run's largest error against the committed Pinocchio
reference (``validation/reference/balloon_pinocchio.csv``, DOP853 at 1e-12; the
angles are not wrapped, which these runs never need), and each command's CPU time
(user + system, of the process and its worker) beside its wall time: on a busy
machine the wall time of a run on two processes suffers more than a single process's.
The commands run with Python's bytecode caches written and read, as an installed package
has them (``PYTHONDONTWRITEBYTECODE`` dropped: without them every start compiles the
package's sources, 0.25 s of CPU).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "validation" / "reference" / "balloon_pinocchio.csv"

PINOCCHIO = """
import sys
import numpy as np
from validation.engines import pinocchio_balloon as pb
stop, rtol, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
run = pb.simulate(t_stop=stop, dt=0.01, rtol=rtol, atol=rtol)
np.savetxt(out, np.column_stack([run[k] for k in pb.OUTPUTS]), delimiter=",",
           header=",".join(pb.OUTPUTS), comments="", fmt="%.17g")
"""


def timed(cmd, env):
    """``(wall time, CPU time of the process and its children)`` of ``cmd`` [s]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def c_host(tmp, stop, env):
    """The command running the balloon's standalone assembly FMU (exported into ``tmp``) for
    ``stop`` s in the project's C host (built into ``tmp``)."""
    fmu, exe, d = tmp / "balloon.fmu", tmp / "fmu_harness", tmp / "assembly"
    subprocess.run([sys.executable, "-m", "titop_fmu.cli", "export", "balloon", "--standalone", "--out", str(fmu)],
                   check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["cc", "-O2", "-o", str(exe), str(ROOT / "tests" / "fmu" / "c" / "fmu_harness.c"), "-ldl"],
                   check=True)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(d)
    md = (d / "modelDescription.xml").read_text()
    mid, guid = (md.split(f'{key}="', 1)[1].split('"', 1)[0] for key in ("modelIdentifier", "guid"))
    return [str(exe), str(d), mid, guid, "-n", str(round(stop / 0.01)), "-h", "0.01"]


def figures(runs):
    """``median wall, "runs ..." text, median CPU``."""
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return (statistics.median(walls), f"runs {', '.join(f'{x:.2f}' for x in walls)}; CPU "
            f"{statistics.median(cpus):.2f} s", statistics.median(cpus))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pin-rtol", type=float, default=1e-10)
    ap.add_argument("--titop-rtol", type=float, default=1e-12)
    ap.add_argument("--fmu", action="store_true",
                    help="also the FMUs through the master, both kinds: default settings, and the tight recipe")
    ap.add_argument("--kinds", nargs="+", default=["standalone", "pythonfmu"], choices=["standalone", "pythonfmu"],
                    help="the kinds of FMU of --fmu (default both)")
    ap.add_argument("--no-tight", action="store_true", help="with --fmu: without the tight recipe")
    ap.add_argument("--fmu-only", action="store_true", help="with --fmu: Pinocchio and the FMU runs only")
    ap.add_argument("--c-host", action="store_true",
                    help="also the standalone assembly FMU of the balloon in the project's C host")
    ap.add_argument("--workers", type=int, nargs="+", default=[],
                    help="with --fmu: the standalone FMUs at default settings also with --workers N, each N "
                         "timed in the same rounds (default: the command's own default only)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PYTHONWARNINGS="ignore")
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # both sides from their bytecode caches, as installed
    with tempfile.TemporaryDirectory() as tmp:
        pin_csv = Path(tmp) / "pinocchio.csv"
        runs = [] if args.fmu and args.fmu_only else list(dict.fromkeys([
            (args.titop_rtol, "c"), (args.pin_rtol, "c"), (args.titop_rtol, "numpy")]))    # and like for like
        titop_cmds = {(r, kern): [sys.executable, "-m", "titop_fmu.cli", "simulate", "balloon", "--engine",
                                  "inprocess", "--kernel", kern, "--stop", str(args.stop), "--rtol", str(r),
                                  "--out", str(Path(tmp) / f"titop{k}.csv"), "--quiet"]
                      for k, (r, kern) in enumerate(runs)}
        pin_cmd = [sys.executable, "-c", PINOCCHIO, str(args.stop), str(args.pin_rtol), str(pin_csv)]
        fmu_base = [sys.executable, "-m", "titop_fmu.cli", "simulate", "balloon", "--engine", "fmu", "--quiet"]
        fmu_cmds = {}
        for kind in args.kinds if args.fmu else []:
            master = fmu_base + ["--fmu-kind", kind, "--stop", str(args.stop)]
            fmu_cmds[f"{kind} FMUs + master, default settings"] = master + ["--out", str(Path(tmp) / f"{kind}.csv")]
            for w in args.workers if kind == "standalone" else ():
                fmu_cmds[f"{kind} FMUs + master, --workers {w}"] = master + [
                    "--workers", str(w), "--out", str(Path(tmp) / f"{kind}-w{w}.csv")]
            if kind == "standalone" and not args.no_tight:
                fmu_cmds[f"{kind} FMUs + master, --tol 5e-8 --dt-max 0.01"] = master + [
                    "--tol", "5e-8", "--dt-max", "0.01", "--out", str(Path(tmp) / f"{kind}-tight.csv")]
            timed(master[:-2] + ["--stop", "0.01", "--out", str(Path(tmp) / "warm.csv")], env)   # FMUs built here
        host_cmds = {"standalone assembly FMU in the C host, 0.01 s steps": c_host(Path(tmp), args.stop, env)} \
            if args.c_host else {}
        titop, pin, fmu = {r: [] for r in runs}, [], {k: [] for k in [*fmu_cmds, *host_cmds]}
        for _ in range(args.repeats):
            for r, cmd in titop_cmds.items():
                titop[r].append(timed(cmd, env))
            pin.append(timed(pin_cmd, env))
            for k, cmd in fmu_cmds.items():
                fmu[k].append(timed(cmd, env))
            for k, cmd in host_cmds.items():
                fmu[k].append(timed(cmd, {}))
        ref = np.loadtxt(REF, delimiter=",", skiprows=1)
        errors = {}
        for k, cmd in [*titop_cmds.items(), *fmu_cmds.items()]:
            run = np.loadtxt(cmd[cmd.index("--out") + 1], delimiter=",", skiprows=1)
            errors[k] = np.max(np.abs(run[:, 1:] - ref[:len(run), 1:]))
    p, text, p_cpu = figures(pin)
    print(f"Pinocchio + DOP853 at {args.pin_rtol:g}, whole process: {p:.2f} s ({text})")
    for (r, kern), runs in titop.items():
        t, text, cpu = figures(runs)
        print(f"TITOP in-process monolithic ({'C kernel' if kern == 'c' else 'NumPy blocks'}) at {r:g}, whole "
              f"process: {t:.2f} s ({text}); ratio to Pinocchio {t / p:.2f} (CPU {cpu / p_cpu:.2f}); "
              f"max |error| vs the Pinocchio reference {errors[r, kern]:.1e}")
    for k, runs in fmu.items():
        m, text, cpu = figures(runs)
        error = f"; max |error| vs the Pinocchio reference {errors[k]:.1e}" if k in errors else ""
        print(f"{k}, whole process: {m:.2f} s ({text}); ratio to Pinocchio {m / p:.2f} (CPU {cpu / p_cpu:.2f})"
              + error)


if __name__ == "__main__":
    main()
