"""``titop-fmu simulate SYSTEM``: one run of a system, on either engine, written as a CSV
(and a 3-D view with ``--animate``); the same code as every run of a campaign
(:class:`~titop_fmu.simulation.Target`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..errors import Interrupted, TitopError
from ..simulation import DEFAULTS, RTOL_MIN, TOL_MIN, Target, resolve_options
from ..simulation import run_master as master_run
from ..titop.units import DEFAULT_FMU_KIND
from .options import (RESULT, VIEW, animation_options, command, drawing, cooperative_interrupt, engine_options,
                      fmu_kind_option, named_file, view_options, writable_folder, write_result)


def run_master(args, system, observe=None):
    """The co-simulation master on ``system`` (FMUs, or in-process units), Ctrl-C stopping it
    at the end of a macro step; returns ``(result, engine, {unit: UnitType})``."""
    from ..titop import TitopUnits
    engine = "inprocess" if args.inprocess_units else "fmu"
    units = TitopUnits(engine, args.fmu_dir, args.fmu_kind or DEFAULT_FMU_KIND)
    try:
        with cooperative_interrupt(args.own_process) as asked:
            res, types = master_run(system, units, args, observe, progress=not args.quiet, stop_requested=asked)
    except KeyboardInterrupt as e:
        if not hasattr(e, "t"):                 # before the run started
            raise
        raise Interrupted(f"interrupted at t = {e.t:.6g} s; nothing written") from None
    return res, engine, types


def run(args):
    start = time.perf_counter()
    from ..titop.checks import wired
    from ..titop.records import Records
    master = args.engine == "fmu" or args.inprocess_units
    path = Path(args.system)
    if args.system != "balloon" and path.suffix == ".ssp" and path.is_file() and not master:
        raise TitopError(f"{path}: an SSP package runs through its FMUs: add --engine fmu")
    target = Target(args.system, recorded=bool(args.out))
    overrides = target.overrides(args.set)      # scenario values, or unit parameters and free inputs by name
    engine_options(args)
    resolve_options(args, target.simulation)
    out = named_file("--out", args.out, *RESULT) if args.out else None
    if args.fmu_dir is not None:
        writable_folder("--fmu-dir", args.fmu_dir)
    system = target.system(overrides)
    if target.file is not None:
        from ..titop import monolithic
        monolithic.check_start(system)          # a state that diverges at once: said before any work
    anim = animation(args, system, "co-simulation master" if master else "in-process monolithic run")
    if master:
        observe = target.observed(overrides)
        if observe is None:                     # a system file: its record list, and the view's outputs after it
            recs = Records(anim.recording() if anim else system)
            system = wired(recs.raw_system())[0]
        res, engine, types = run_master(args, system, observe)
        values, labels = (res.values, res.labels) if observe is not None else \
            recs.finish(res.values, res.labels, types)
        n = len(labels)
        if observe is None and anim:                # the outputs added for the view come last
            n -= sum(len(e.labels) for e in recs.entries[len(target.file.system.recorded):])
            anim.write(res.t, dict(zip(labels, values.T)))
        elif anim:
            anim.write_balloon(res.t, res.values)
        if out:
            write_result(out, res.t, values[:, :n], ["t"] + labels[:n])
        rows = len(res.t)
        if res.warning:                             # printed even with --quiet
            print(f"titop-fmu: {res.warning}", file=sys.stderr)
        if not args.quiet and args.stats:
            units = f"{args.fmu_kind or DEFAULT_FMU_KIND} FMUs" if engine == "fmu" else "inprocess units"
            print(f"co-simulation ({units}, sequence {args.sequence}, tol {args.tol:g}): "
                  f"{args.stop:g} s simulated in {time.perf_counter() - start:.2f} s", file=sys.stderr)
            print(res.stats.summary(), file=sys.stderr)
    else:
        t, values, tr = target.run(overrides, args, "inprocess", progress=not args.quiet)
        if anim and target.file is None:
            anim.write_balloon(t, values)
        elif anim:
            anim.write_twin(tr)
        if out:
            write_result(out, t, values, target.header)
        rows = len(t)
        if not args.quiet:
            print(f"in-process monolithic run ({'C kernel' if tr.kernel == 'c' else 'NumPy blocks'}): "
                  f"{args.stop:g} s simulated in {tr.wall:.2f} s wall, {tr.nfev} right-hand-side evaluations",
                  file=sys.stderr)
    if not args.quiet:
        for path in (out, anim and anim.path):
            if path:
                print(f"wrote {path}" + (f" ({rows} rows)" if path == out else ""), file=sys.stderr)


def defaults(system: str):
    """simulate's arguments for ``system``, every option at its default (as ``titop-fmu
    simulate SYSTEM`` has them)."""
    import argparse
    sub = argparse.ArgumentParser().add_subparsers()
    add(sub)
    return sub.choices["simulate"].parse_args([system])


def animation(args, system, engine):
    """The :class:`~titop_fmu.viewer.Animation` that ``--animate`` asks for (None without it),
    checked before the run."""
    view_options(args)
    if not args.animate:
        return None
    if args.out and Path(args.animate).resolve() == Path(args.out).resolve():
        raise TitopError(f"--animate {args.animate}: the same file as --out")
    from ..viewer import Animation
    name = "balloon" if args.system == "balloon" else Path(args.system).stem
    return Animation(named_file("--animate", args.animate, *VIEW), system, args.title or f"{name}: {engine}, "
                     f"{args.stop:g} s", args.trace, **drawing(args))


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "simulate", help="simulate a system and write a CSV")
    p.add_argument("system", help="'balloon' (the paper's system, docs/balloon-scenario.md), a "
                                  "system file (TOML or JSON, see examples/) or an SSP package (.ssp)")
    p.add_argument("--engine", choices=["inprocess", "fmu"], default="inprocess",
                   help="inprocess: the monolithic run (exact loop solve, no coupling error); "
                        "fmu: the co-simulation master on the TITOP FMUs")
    p.add_argument("--stop", type=float, help=f"stop time [s] (default: the file's, else {DEFAULTS['stop']:g})")
    p.add_argument("--dt", type=float, help=f"output interval [s] (default: the file's, else {DEFAULTS['dt']:g})")
    p.add_argument("--rtol", type=float, help=f"integration tolerance of the in-process run (default "
                                              f"{DEFAULTS['rtol']:g}, at least {RTOL_MIN:g})")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"],
                   help="right-hand side and recorded outputs of the in-process run: c, the C kernel (built "
                        "with the C compiler on first use); numpy, the reference blocks; auto (default): c "
                        "when it covers the system and a compiler is there, else numpy")
    p.add_argument("--out", default="run.csv", help="CSV file to write (default run.csv)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a value: SI units, or with its unit (theta1_0=170deg, \"link1.com=[0, -35 mm, 0]\"); "
                        "repeatable")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    g = p.add_argument_group("co-simulation master (--engine fmu)")
    g.add_argument("--tol", type=float,
                   help=f"coupling tolerance (default: the file's, else {DEFAULTS['tol']:g}; at least "
                        f"{TOL_MIN:g}; on the balloon 5e-8 with --dt-max 0.01 gives below 1e-8)")
    g.add_argument("--dt-max", type=float, help=f"largest macro step [s] (default {DEFAULTS['dt_max']:g})")
    g.add_argument("--workers", type=int,
                   help="processes computing the extrapolated runs, this one included (default 1: all in "
                        "this one; 2: this one and a worker, 5 to 31 %% more CPU for the same run)")
    g.add_argument("--fmu-dir", default=None,
                   help="folder of the TITOP FMUs (titop-fmu build); missing ones are built there "
                        "(default: a cache under ~/.cache/titop-fmu)")
    fmu_kind_option(g, "the TITOP FMUs the master runs")
    g.add_argument("--sequence", help="base steps per macro step of the extrapolated runs (default 1,2,3: order 6)")
    g.add_argument("--inprocess-units", action="store_true",
                   help="the master on the in-process blocks instead of the FMUs (no FMI; implies the master)")
    g.add_argument("--no-stats", dest="stats", action="store_false", help="no statistics summary")
    g = p.add_argument_group("3-D view (titop-fmu animate)")
    g.add_argument("--animate", metavar="VIEW.html", help="also write a 3-D view of the run: one HTML file that "
                                                          "opens offline in a browser (docs/animation.md)")
    animation_options(g)
    p.set_defaults(func=run)
