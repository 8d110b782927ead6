"""Wall time of a system file's in-process run, its recorded outputs included, against the
same at another git revision (before/after a change, in one command).

    python benchmarks/monolithic_outputs.py [--against REV] [--n 16 64] [--stop 20] [--dt 0.01]
                                            [--repeats 3] [--system examples/spacecraft.toml ...]

Per code tree (the revision ``REV``, checked out from git into a temporary folder, then this
working tree), each in a fresh Python process:

* ``monolithic.run`` of the ``--n``-body chains (:func:`titop_fmu.scenarios.generate.cosystem`,
  a floating base carrying revolute bodies, recording every ``joint.q`` and the base's
  ``p.m``), ``--stop`` seconds every ``--dt``: its wall time and, inside it, the integration's
  (``Trajectory.wall``); the rest is mostly the recorded outputs;
* ``titop-fmu simulate SYSTEM --quiet --out ...`` of each ``--system`` file: the wall time of
  the whole command (interpreter start, imports, run, CSV written).

Runs alternate between the trees, ``--repeats`` times; the medians are printed, with their
ratio (REV / this tree) and the largest difference between the two trees' recorded values.
The C kernel is built into the cache by a short run before any timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: run in a fresh process with the tree on PYTHONPATH: the chain's timings, its values saved
CHAIN = """
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import titop_fmu
from titop_fmu.scenarios import generate
from titop_fmu.titop import monolithic
n, stop, dt, out = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
cs = generate.cosystem(n, 1)
monolithic.run(cs, 2 * dt, dt)                       # the kernel built or loaded, the imports done
t0 = time.perf_counter()
tr, values = monolithic.run(cs, stop, dt)
wall = time.perf_counter() - t0
np.save(out, values)
print(json.dumps({"wall": wall, "integration": tr.wall, "rows": len(tr.t), "kernel": tr.kernel,
                  "package": titop_fmu.__file__}))
"""
CLI = "import sys; from titop_fmu.cli import main; sys.exit(main(sys.argv[1:]))"


def checkout(rev: str, dest: Path) -> Path:
    """The package ``titop_fmu`` at the git revision ``rev`` extracted under ``dest``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "titop_fmu"], capture_output=True, check=True)
    tar = dest / "tree.tar"
    tar.write_bytes(archive.stdout)
    with tarfile.open(tar) as t:
        t.extractall(dest / "src", filter="data")
    return dest / "src"


def python(tree: Path, args: list):
    """Run ``python args`` on the code of ``tree`` (``-c`` puts the working folder first on the
    path: the tree's own)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=True)


def chain(tree: Path, n: int, stop: float, dt: float, out: Path) -> dict:
    run = json.loads(python(tree, ["-c", CHAIN, str(n), str(stop), str(dt), str(out)]).stdout)
    if not Path(run["package"]).is_relative_to(tree):
        raise RuntimeError(f"ran {run['package']}, not the code of {tree}")
    return run


def cli(tree: Path, system: Path, out: Path) -> float:
    t0 = time.perf_counter()
    python(tree, ["-c", CLI, "simulate", str(system), "--quiet", "--out", str(out)])
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="REV", help="git revision to compare with (e.g. main, HEAD~1)")
    ap.add_argument("--n", type=int, nargs="+", default=[16, 64], help="bodies of the chains")
    ap.add_argument("--stop", type=float, default=20.0, help="simulated time of the chains [s]")
    ap.add_argument("--dt", type=float, default=0.01, help="output interval of the chains [s]")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--system", nargs="+", default=["examples/spacecraft.toml"], help="system files run by the CLI")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="titop_bench_") as tmp:
        tmp = Path(tmp)
        trees = {"this tree": ROOT}
        if args.against:
            (tmp / "rev").mkdir()
            trees = {args.against: checkout(args.against, tmp / "rev"), **trees}
        for tree in trees.values():                      # the kernel in the cache, before any timing
            chain(tree, 2, 0.02, 0.01, tmp / "warm.npy")
        chains = {(name, n): [] for name in trees for n in args.n}
        systems = [Path(s).resolve() for s in args.system]
        clis = {(name, s): [] for name in trees for s in systems}
        for r in range(args.repeats):
            order = list(trees.items())[::(-1) ** r]     # alternate: both trees see the same load
            for n in args.n:
                for name, tree in order:
                    out = tmp / f"{n}-{list(trees).index(name)}.npy"
                    chains[name, n].append(chain(tree, n, args.stop, args.dt, out))
            for k, s in enumerate(systems):
                for name, tree in order:
                    clis[name, s].append(cli(tree, s, tmp / f"cli-{k}-{list(trees).index(name)}.csv"))
        load = os.getloadavg()[0]
        print(f"chains: monolithic.run, {args.stop:g} s every {args.dt:g} s; medians of {args.repeats}; "
              f"load average {load:.1f}")
        print(f"{'N':>4} {'tree':>12} {'rows':>6} {'kernel':>6} {'run [s]':>8} {'integration [s]':>16} "
              f"{'rest [s]':>9}")
        for n in args.n:
            for name in trees:
                runs = chains[name, n]
                wall = statistics.median(x["wall"] for x in runs)
                integ = statistics.median(x["integration"] for x in runs)
                print(f"{n:4d} {name:>12} {runs[0]['rows']:6d} {runs[0]['kernel']:>6} {wall:8.2f} {integ:16.2f} "
                      f"{wall - integ:9.2f}")
            if args.against:
                ref, new = (statistics.median(x["wall"] for x in chains[name, n]) for name in trees)
                a, b = (np.load(tmp / f"{n}-{i}.npy") for i in range(2))
                err = np.max(np.abs(a - b))
                print(f"{n:4d} run time {args.against} / this tree: {ref / new:.2f}; recorded values: max "
                      f"|difference| {err:.2e}, relative to the largest value {err / np.max(np.abs(a)):.2e}")
        for k, (system, s) in enumerate(zip(args.system, systems)):
            print(f"titop-fmu simulate {system} --quiet --out FILE (whole command, wall; medians of {args.repeats})")
            for name in trees:
                print(f"{name:>12} {statistics.median(clis[name, s]):8.2f} s")
            if args.against:
                ref, new = (statistics.median(clis[name, s]) for name in trees)
                a, b = (np.loadtxt(tmp / f"cli-{k}-{i}.csv", delimiter=",", skiprows=1) for i in range(2))
                print(f"ratio {args.against} / this tree: {ref / new:.2f}; CSV values: max |difference| "
                      f"{np.max(np.abs(a - b)):.2e}")


if __name__ == "__main__":
    main()
