"""Cost of the monolithic engine against the number of bodies: chains, binary trees and
stars (the base the parent of every body) of N = 4 ... 64 revolute bodies on a floating
base (:mod:`titop_fmu.scenarios.generate`).

    python benchmarks/scaling.py [--n 4 8 16 32 64] [--solvers kernel recursive dense]
                                 [--stop 0.5] [--repeats 200] [--no-run] [--cosim [inprocess|fmu]]
                                 [--fmu-kind standalone|pythonfmu|both]

Solvers: ``kernel``, the recursive loop solve on the C kernel (:mod:`titop_fmu.kernel`,
what ``System.simulate`` runs by default); ``recursive`` and ``dense``, the NumPy blocks
with the O(N) recursive solve or the dense one. For each system and solver it prints
the cost of one right-hand side (kinematics + exact loop solve; the median of
``--repeats`` evaluations at the initial state),
the wall time of the monolithic run (DOP853, rtol = atol = 1e-11, the
``System.simulate`` default) per simulated second over ``--stop`` seconds, and
for chains and stars the ratio RHS(64)/RHS(8) (O(N) gives 8). With ``--cosim``, the
co-simulation master's wall time per simulated second over ``--stop`` seconds
(in-process units, or ``--cosim fmu`` the FMUs of ``--fmu-kind``, default standalone, ``both``
a column per kind, built into the cache before any timing; default options; units created,
run, terminated) on the same chains and trees
(:func:`titop_fmu.scenarios.generate.cosystem`), and per body, with what drives it:
coupling iterations per base step, step-sensitivity measurements (each one
``doStep`` per coupling input) and ``doStep``s per unit per simulated second; for
chains, the ratio of the cost per body of the largest and the smallest chain. BLAS
runs on one thread throughout.
"""

from __future__ import annotations

import argparse
import statistics
import time

from titop_fmu.cosim.numerics import single_threaded_blas
from titop_fmu.titop.units import DEFAULT_FMU_KIND as DEFAULT, FMU_KINDS as KINDS
from titop_fmu.scenarios import generate


#: solver -> (System solver, System.simulate kernel)
SOLVERS = {"kernel": ("recursive", "c"), "recursive": ("recursive", "numpy"), "dense": ("dense", "numpy")}


def rhs_cost(system, kernel, repeats):
    """Median wall time [s] of one right-hand side at the initial state."""
    y = system.initial_state()
    rhs = system.compiled_rhs() if kernel == "c" else system.rhs   # the plan (and kernel) made here
    rhs(0.0, y)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rhs(0.0, y)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_cost(system, kernel, stop):
    """``(wall [s] per simulated second, RHS evaluations)`` of the monolithic run."""
    tr = system.simulate(stop, dt=stop / 10, kernel=kernel)
    return tr.wall / stop, tr.nfev


def cosim_cost(n, branching, stop, engine, kind=DEFAULT):
    """``(wall time [s] per simulated second, Stats)`` of the co-simulation master (``engine`` units,
    FMUs of ``kind``)."""
    from titop_fmu.cosim import simulate
    from titop_fmu.titop import TitopUnits
    cs = generate.cosystem(n, branching)
    t0 = time.perf_counter()
    res = simulate(cs, stop, TitopUnits(engine, fmu_kind=kind))
    return (time.perf_counter() - t0) / stop, res.stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    ap.add_argument("--stop", type=float, default=0.5, help="simulated time of the runs [s]")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--no-run", action="store_true", help="right-hand sides only")
    ap.add_argument("--cosim", nargs="?", const="inprocess", choices=["inprocess", "fmu"],
                    help="also the co-simulation master, on in-process units (default) or the FMUs")
    ap.add_argument("--fmu-kind", default=DEFAULT, choices=[*KINDS, "both"],
                    help=f"the FMUs of --cosim fmu (default {DEFAULT}; both: a column per kind)")
    args = ap.parse_args()
    kinds = [None] if args.cosim != "fmu" else list(KINDS) if args.fmu_kind == "both" else [args.fmu_kind]
    head = f"{'system':>8} {'N':>4} {'solver':>9} {'RHS [us]':>10} {'us/body':>8}"
    if not args.no_run:
        head += f" {'run [s/sim s]':>14} {'RHS evals':>10}"
    for kind in kinds if args.cosim else []:
        label = f" ({kind})" if kind else ""
        head += (f" {'cosim [s/sim s]' + label:>16} {'per body':>9} {'it/base':>8} {'P meas.':>8}"
                 f" {'doSteps/body/sim s':>19}")
    print(head)
    rhs, cosim = {}, {}
    if args.cosim == "fmu":                 # the FMUs built into the cache now, not inside a timing
        from titop_fmu.titop import TitopUnits
        for kind in kinds:
            for branching in (1, 2):
                TitopUnits("fmu", fmu_kind=kind).unit_types(generate.cosystem(max(args.n), branching))
    with single_threaded_blas():
        for kind, branching in (("chain", 1), ("tree", 2), ("star", None)):
            for n in args.n:
                for solver in args.solvers:
                    loop, kernel = SOLVERS[solver]
                    s = generate.tree(n, branching or n, solver=loop)
                    c = rhs[kind, n, solver] = rhs_cost(s, kernel, args.repeats)
                    line = f"{kind:>8} {n:4d} {solver:>9} {c * 1e6:10.1f} {c * 1e6 / n:8.2f}"
                    if not args.no_run:
                        per_s, nfev = run_cost(s, kernel, args.stop)
                        line += f" {per_s:14.3f} {nfev:10d}"
                    for fmu_kind in kinds if args.cosim and solver == args.solvers[0] and branching else []:
                        c, st = cosim_cost(n, branching, args.stop, args.cosim, fmu_kind or DEFAULT)
                        cosim[kind, n, fmu_kind] = c
                        steps = sum(st.unit_steps.values()) / (n + 1) / args.stop
                        line += (f" {c:16.3f} {c / n:9.3f} {st.step_iterations / max(1, st.base_steps):8.2f}"
                                 f" {st.P_refreshes:8d} {steps:19.0f}")
                    print(line, flush=True)
    if {8, 64} <= set(args.n):
        for kind in ("chain", "star"):
            for solver in args.solvers:
                print(f"{kind} RHS(64)/RHS(8), {solver}: {rhs[kind, 64, solver] / rhs[kind, 8, solver]:.1f}")
    if args.cosim and len(args.n) > 1:
        lo, hi = min(args.n), max(args.n)
        for fmu_kind in kinds:
            print(f"chain co-simulation cost per body, N={hi} / N={lo} ({args.cosim} units"
                  f"{', ' + fmu_kind + ' FMUs' if fmu_kind else ''}): "
                  f"{cosim['chain', hi, fmu_kind] / hi / (cosim['chain', lo, fmu_kind] / lo):.2f}")


if __name__ == "__main__":
    main()
