"""Command line: ``titop-fmu simulate | sweep | report | build | export | validate``.

Every option is checked before any work (a one-line error, exit code 2); a
result file is written whole at the end or not at all; Ctrl-C stops a run
with one line and exit code 130.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from .errors import Interrupted, ParameterWarning, TitopError
from .io import write_csv
from .scenarios import balloon
from .simulation import DEFAULTS, MAX_CHILDREN, MAX_WORKERS, RTOL_MIN, TOL_MIN, Target, _number, resolve_options

def writable_file(option, path) -> Path:
    """``path`` can be written as a file: its folder exists and is writable, it is not a folder."""
    path = Path(path)
    if path.is_dir():
        raise TitopError(f"{option} {path}: is a folder, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise TitopError(f"{option} {path}: no folder {parent}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise TitopError(f"{option} {path}: not writable")
    return path


def writable_folder(option, path) -> Path:
    """``path`` is a writable folder or can be created as one."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise TitopError(f"{option} {path}: is a file, not a folder")
    existing = path
    while not existing.exists():
        existing = existing.parent if existing.parent != existing else Path(".")
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise TitopError(f"{option} {path}: cannot be written ({existing} is not a writable folder)")
    return path


def write_result(path: Path, t, values, header):
    """The CSV written to a temporary file beside ``path``, then moved in place: never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    os.close(fd)
    try:
        write_csv(tmp, t, values, header)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def cooperative_interrupt():
    """Ctrl-C asks the master to stop at the end of its macro step (units, FMUs in this
    process and worker processes are left consistent and terminated cleanly); a second
    Ctrl-C ends the process at once (the workers end when their pipe closes). Nothing is
    written either way. Yields the function the master polls."""
    asked = []

    def handler(signum, frame):
        if asked:
            print("\ntitop-fmu: interrupted; nothing written", file=sys.stderr)
            os._exit(130)
        asked.append(True)

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:                          # not in the main thread: Ctrl-C as usual
        yield lambda: False
        return
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)


def run_master(args, target, overrides):
    """The co-simulation master on ``target`` with ``overrides`` (FMUs, or in-process units);
    returns ``(result, engine)``. Ctrl-C stops it at the end of a macro step."""
    from .titop import TitopUnits
    engine = "inprocess" if args.inprocess_units else "fmu"
    with cooperative_interrupt() as asked:
        try:
            _, _, res = target.run(overrides, args, "fmu", TitopUnits(engine, args.fmu_dir), progress=not args.quiet,
                                   stop_requested=asked)
        except KeyboardInterrupt as e:
            raise Interrupted(f"interrupted {e}; nothing written") from None
    return res, engine


def cmd_simulate(args):
    start = time.perf_counter()
    target = Target(args.system)
    overrides = target.overrides(args.set)
    resolve_options(args, target.simulation)
    out = writable_file("--out", args.out)
    if args.engine == "fmu" or args.inprocess_units:
        res, engine = run_master(args, target, overrides)
        write_result(out, res.t, res.values, ["t"] + res.labels)
        rows = len(res.t)
        if res.warning:                             # printed even with --quiet
            print(f"titop-fmu: {res.warning}", file=sys.stderr)
        if not args.quiet and args.stats:
            print(f"co-simulation ({engine} units, sequence {args.sequence}, tol {args.tol:g}): "
                  f"{args.stop:g} s simulated in {time.perf_counter() - start:.2f} s", file=sys.stderr)
            print(res.stats.summary(), file=sys.stderr)
    else:
        t, values, tr = target.run(overrides, args, progress=not args.quiet)
        write_result(out, t, values, target.header)
        rows = len(t)
        if not args.quiet:
            print(f"in-process monolithic run ({'C kernel' if tr.kernel == 'c' else 'NumPy blocks'}): "
                  f"{args.stop:g} s simulated in {tr.wall:.2f} s wall, {tr.nfev} right-hand-side evaluations",
                  file=sys.stderr)
    if not args.quiet:
        print(f"wrote {out} ({rows} rows)", file=sys.stderr)


def cmd_build(args):
    if args.standalone:
        from .fmu.standalone import build_all
    else:
        from .fmu.build import build_all
    if not (0 <= args.children <= MAX_CHILDREN):
        raise TitopError(f"--children must be between 0 and {MAX_CHILDREN}, got {args.children}")
    out = writable_folder("--out", args.out)
    build_all(out, children=range(args.children + 1) if args.all_counts else [args.children], log=print)


def cmd_export(args):
    """``titop-fmu export {balloon | SYSTEM_FILE} --out NAME.fmu | --ssp NAME.ssp``: the whole
    system as one FMU, or its block FMUs as an SSP package."""
    from .cosim import systemfile
    from .titop.export import export_fmu, export_ssp
    for option, path in (("--out", args.out), ("--ssp", args.ssp)):
        if path:
            writable_file(option, path)
    if args.system == "balloon":
        system, simulation = balloon.system(), {"stop": DEFAULTS["stop"], "output_interval": DEFAULTS["dt"]}
    elif Path(args.system).is_file():
        sf = systemfile.read(args.system)
        system, simulation = sf.system, sf.simulation
    else:
        raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file")
    if not (args.out or args.ssp):
        raise TitopError("export: give --out NAME.fmu (one FMU) and/or --ssp NAME.ssp (SSP of the block FMUs)")
    if args.out:
        print(export_fmu(system, args.out, simulation))
    if args.ssp:
        print(export_ssp(system, args.ssp, simulation, args.fmu_dir))


def cmd_validate(args):
    from .validate import validate
    _number("--stop", args.stop)
    validate(writable_folder("--out", args.out), stop=args.stop, reference_dir=args.references,
             engines=args.engines, msl=args.msl)


def cmd_sweep(args):
    """``titop-fmu sweep {SYSTEM | CAMPAIGN.toml} --vary NAME=DISTRIBUTION ... --out STORE``."""
    from . import campaign
    from .campaign.spec import is_campaign_file, read_file
    settings = read_file(args.system) if is_campaign_file(args.system) else {"system": args.system}
    vary = dict(settings.pop("vary", {}))
    for item in args.vary or ():
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise TitopError(f"--vary {item}: expected NAME=DISTRIBUTION, e.g. m_P1=uniform(1.5,2.5)")
        vary[name.strip()] = text.strip()
    settings["vary"] = vary
    settings["set"] = list(settings.get("set", [])) + list(args.set or [])
    for key in ("samples", "seed", "sampling", "engine", "stop", "dt", "rtol", "tol", "dt_max", "sequence", "kernel"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.workers is not None and not (0 <= args.workers <= MAX_WORKERS):
        raise TitopError(f"--workers must be between 0 and {MAX_WORKERS}, got {args.workers}")
    if args.report:
        writable_folder("--report", args.report)
    spec = campaign.Sweep(**settings).resolved()
    c = campaign.run(spec, writable_folder("--out", args.out), workers=args.workers, scheduler=args.scheduler,
                     resume=args.resume, progress=not args.quiet)
    counts = c.samples.status.value_counts()
    if not args.quiet:
        print(f"{args.out}: {counts.get('ok', 0)} runs ok, {counts.get('failed', 0)} failed, "
              f"{counts.get('missing', 0)} missing, of {spec.samples}", file=sys.stderr)
    if args.report:
        cmd_report(argparse.Namespace(store=args.out, out=args.report))


def cmd_report(args):
    """``titop-fmu report STORE --out DIR``: a campaign's summaries and figures."""
    from .campaign import open as open_store
    from .campaign.report import report
    out = writable_folder("--out", args.out)
    print(report(open_store(args.store), out))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="titop-fmu", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("simulate", help="simulate a system and write a CSV")
    p.add_argument("system", help="'balloon' (the paper's system, shared/balloon-scenario.md), a "
                                  "system file (TOML or JSON, see examples/) or an SSP package (.ssp)")
    p.add_argument("--engine", choices=["inprocess", "fmu"], default="inprocess",
                   help="inprocess: the monolithic run (exact loop solve, no coupling error); "
                        "fmu: the co-simulation master on the TITOP FMUs")
    p.add_argument("--stop", type=float, help=f"stop time [s] (default: the file's, else {DEFAULTS['stop']:g})")
    p.add_argument("--dt", type=float, help=f"output interval [s] (default: the file's, else {DEFAULTS['dt']:g})")
    p.add_argument("--rtol", type=float, help=f"integration tolerance of the in-process run (default "
                                              f"{DEFAULTS['rtol']:g}, at least {RTOL_MIN:g})")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"], default="auto",
                   help="right-hand side of the in-process run: c, the C kernel (built with the C compiler "
                        "on first use); numpy, the reference blocks; auto (default): c when it covers the "
                        "system and a compiler is there, else numpy")
    p.add_argument("--out", default="run.csv", help="CSV file to write (default run.csv)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a scenario value, SI units or e.g. theta1_0=170deg (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    g = p.add_argument_group("co-simulation master (--engine fmu)")
    g.add_argument("--tol", type=float,
                   help=f"coupling tolerance (default: the file's, else {DEFAULTS['tol']:g}; at least "
                        f"{TOL_MIN:g}; on the balloon 5e-8 with --dt-max 0.01 gives below 1e-8)")
    g.add_argument("--dt-max", type=float, help=f"largest macro step [s] (default {DEFAULTS['dt_max']:g})")
    g.add_argument("--workers", type=int,
                   help="processes computing the extrapolated runs, this one included (default 2: this "
                        "one and a worker; 0 or 1: all in this one)")
    g.add_argument("--fmu-dir", default=None,
                   help="folder of the TITOP FMUs (titop-fmu build); missing ones are built there "
                        "(default: a cache under ~/.cache/titop-fmu)")
    g.add_argument("--sequence", help="base steps per macro step of the extrapolated runs (default 1,2,3: order 6)")
    g.add_argument("--inprocess-units", action="store_true",
                   help="the master on the in-process blocks instead of the FMUs (no FMI; implies the master)")
    g.add_argument("--no-stats", dest="stats", action="store_false", help="no statistics summary")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("sweep", help="run a campaign (Monte Carlo, sweep) of a system on Dask; store it as Parquet")
    p.add_argument("system", help="'balloon', a system file, or a campaign file (TOML with a [sweep] table: the "
                                  "options below as keys; options given here win)")
    p.add_argument("--vary", action="append", metavar="NAME=DISTRIBUTION",
                   help="a varied quantity (a --set name, e.g. m_P1 or link1.inertia[1,1]) and its distribution: "
                        "uniform(a,b), normal(mu,sigma), truncnormal(mu,sigma,a,b), [v1,v2,..], choice(..), "
                        "linspace(a,b,n); numbers in SI units or with a deg suffix (repeatable)")
    p.add_argument("--samples", type=int, help="number of samples (a grid: its combinations)")
    p.add_argument("--seed", type=int, help="seed of the campaign: sample i depends on it and i alone (default 0)")
    p.add_argument("--sampling", choices=["random", "lhs", "sobol", "grid"],
                   help="random (default): independent draws; lhs: Latin hypercube; sobol: scrambled Sobol "
                        "points; grid: every combination of the listed values")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="a fixed override, as simulate's (repeatable)")
    p.add_argument("--out", required=True, help="the store (a folder of Parquet files)")
    p.add_argument("--resume", action="store_true", help="complete the campaign in --out: run only the samples "
                                                         "it does not hold (the same campaign is required)")
    p.add_argument("--workers", type=int, help="local worker processes (default: one per core; 0: every run in "
                                               "this process, no Dask)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler's workers (e.g. "
                                                          "tcp://host:8786) instead of a local cluster")
    p.add_argument("--engine", choices=["inprocess", "fmu"], help="as simulate's (default inprocess)")
    p.add_argument("--stop", type=float, help="stop time [s] (default: the system file's, else 20)")
    p.add_argument("--dt", type=float, help="output interval [s] (default: the system file's, else 0.01)")
    p.add_argument("--rtol", type=float, help="in-process integration tolerance (default 1e-12)")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"], help="as simulate's (default auto)")
    p.add_argument("--tol", type=float, help="coupling tolerance of the master (--engine fmu)")
    p.add_argument("--dt-max", type=float, help="largest macro step of the master [s] (--engine fmu)")
    p.add_argument("--sequence", help="base steps per macro step of the master (--engine fmu; default 1,2,3)")
    p.add_argument("--report", metavar="DIR", help="also write the campaign's report there (see titop-fmu report)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("report", help="summaries and figures of a campaign store: envelopes, worst samples, "
                                      "rank correlations")
    p.add_argument("store", help="the campaign's store (titop-fmu sweep --out)")
    p.add_argument("--out", default="campaign-report", help="report folder (default campaign-report/)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("build", help="build the TITOP FMUs")
    p.add_argument("--out", default="fmus", help="output folder (default fmus/)")
    p.add_argument("--children", type=int, default=2,
                   help=f"number of child ports (default 2, at most {MAX_CHILDREN})")
    p.add_argument("--all-counts", action="store_true", default=None,
                   help="build every count from 0 to --children (the default when --children is not given)")
    p.add_argument("--standalone", action="store_true",
                   help="binaries in C only (no Python at run time), for linux64 and, with the MinGW-w64 "
                        "cross compiler, win64 (fmus/README.md)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("export", help="write a system as one FMU (the loop solved inside) for any FMI host, "
                                      "or as an SSP package of its block FMUs")
    p.add_argument("system", help="'balloon' or a system file (TOML or JSON) of TITOP units")
    p.add_argument("--out", help="the FMU to write, NAME.fmu (model identifier NAME)")
    p.add_argument("--ssp", help="the SSP 1.0 package to write, NAME.ssp (block FMUs, connections, parameters)")
    p.add_argument("--fmu-dir", default=None, help="folder of the block FMUs for --ssp (default: the cache)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("validate", help="compare the balloon runs with every reference; write a report")
    p.add_argument("--out", default="validation-report", help="report folder (default validation-report/)")
    p.add_argument("--stop", type=float, default=20.0, help="horizon [s] (default 20)")
    p.add_argument("--references", default=None, help="folder of reference CSVs (default validation/reference)")
    p.add_argument("--engines", nargs="+", default=["inprocess", "fmu"], choices=["inprocess", "fmu"],
                   help="engines to run (default: both; the first one's run is drawn)")
    p.add_argument("--msl", default=None, metavar="DIR",
                   help="folder holding the Modelica Standard Library's Modelica/ (default: MODELICAPATH)")
    p.set_defaults(func=cmd_validate)
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command == "build" and args.all_counts is None:
        args.all_counts = "--children" not in (argv if argv is not None else sys.argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", ParameterWarning)
            args.func(args)
    except Interrupted as e:
        print(f"titop-fmu: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("titop-fmu: interrupted; nothing written", file=sys.stderr)
        return 130
    except TitopError as e:
        print(f"titop-fmu: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
