"""Command line: ``titop-fmu simulate | build | export | validate``."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from .cosim import Options
from .errors import ParameterWarning, TitopError
from .io import parse_set, write_csv
from .scenarios import balloon

#: defaults of ``simulate`` that a system file's [simulation] table replaces
FILE_DEFAULTS = dict(stop=20.0, dt=0.01)
#: defaults of the co-simulation master's options
MASTER_DEFAULTS = dict(tol=Options.tol, dt_max=Options.h_max, workers=2, sequence="1,2,3")


def master_options(args, **kw) -> Options:
    """The master's :class:`Options` from the ``simulate`` arguments."""
    seq = args.sequence
    try:
        seq = tuple(int(x) for x in str(seq).replace(" ", "").split(","))
    except ValueError:
        raise TitopError(f"--sequence: expected comma-separated integers, got {seq!r}") from None
    if not seq or any(n <= 0 for n in seq) or list(seq) != sorted(set(seq)):
        raise TitopError(f"--sequence: expected increasing positive integers, got {seq}")
    tol, dt_max = float(args.tol), float(args.dt_max)
    if not (tol > 0 and dt_max > 0):
        raise TitopError("--tol and --dt-max must be positive")
    return Options(tol=tol, h_max=dt_max, sequence=seq, workers=int(args.workers or 0), **kw)


def run_master(args, start) -> None:
    """``titop-fmu simulate {balloon | SYSTEM_FILE} --engine fmu ...`` (or a system file on
    any engine: the co-simulation master runs it)."""
    from .cosim import build, ssp, systemfile
    from .titop import TitopUnits
    quiet = bool(args.quiet)
    engine = "inprocess" if args.inprocess_units else "fmu"
    if args.system == "balloon":
        overrides = parse_set(args.set, balloon.DEFAULTS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ParameterWarning)
            system = balloon.system(overrides)
        opt = master_options(args, observe=balloon.observer(overrides), labels=list(balloon.COLUMNS[1:]),
                             angles=balloon.ANGLES)
        stop, dt = args.stop, args.dt
    else:
        path = Path(args.system)
        if not path.is_file():
            raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file")
        if args.set:
            raise TitopError("--set applies to the built-in balloon; set parameters in the system file")
        sf = (ssp.read if path.suffix == ".ssp" else systemfile.read)(path)
        system = sf.system
        if not system.recorded:
            raise TitopError(f"{path}: nothing to write: add record = [\"unit.output\", ...]")
        opt = master_options(args)
        # the file's [simulation] table replaces the options left at their defaults
        stop = sf.simulation.get("stop", args.stop) if args.stop == FILE_DEFAULTS["stop"] else args.stop
        dt = sf.simulation.get("output_interval", args.dt) if args.dt == FILE_DEFAULTS["dt"] else args.dt
        if opt.tol == MASTER_DEFAULTS["tol"] and "tolerance" in sf.simulation:
            opt.tol = sf.simulation["tolerance"]
    if not (stop > 0 and dt > 0):
        raise TitopError(f"need --stop > 0 and --dt > 0, got {stop}, {dt}")
    master = build(system, TitopUnits(engine, args.fmu_dir), opt)
    try:
        res = master.simulate(stop, dt, progress=not quiet)
    finally:
        master.terminate()
    write_csv(args.out, res.t, res.values, ["t"] + res.labels)
    if not quiet and args.stats:
        total = time.perf_counter() - start
        print(f"co-simulation ({engine} units, sequence {opt.sequence}, tol {opt.tol:g}): "
              f"{stop:g} s simulated in {total:.2f} s", file=sys.stderr)
        print(res.stats.summary(), file=sys.stderr)
        print(f"wrote {args.out} ({len(res.t)} rows)", file=sys.stderr)


def cmd_simulate(args):
    start = time.perf_counter()
    if args.engine == "fmu" or args.system != "balloon":
        run_master(args, start)
        return
    s = balloon.build(parse_set(args.set, balloon.DEFAULTS))
    tr = s.simulate(args.stop, args.dt, rtol=args.rtol, atol=args.rtol, progress=not args.quiet)
    if not args.quiet:
        print(f"in-process monolithic run: {args.stop:g} s simulated in {tr.wall:.2f} s wall, "
              f"{tr.nfev} right-hand-side evaluations", file=sys.stderr)
    write_csv(args.out, tr.t, balloon.columns(s, tr.y), balloon.COLUMNS)


def cmd_build(args):
    from .fmu.build import build_all
    paths = build_all(args.out, children=range(args.children + 1) if args.all_counts else [args.children])
    for p in paths:
        print(p)


def cmd_export(args):
    """``titop-fmu export {balloon | SYSTEM_FILE} --out NAME.fmu | --ssp NAME.ssp``: the whole
    system as one FMU, or its block FMUs as an SSP package."""
    from .cosim import systemfile
    from .titop.export import export_fmu, export_ssp
    if args.system == "balloon":
        system, simulation = balloon.system(), {"stop": FILE_DEFAULTS["stop"], "output_interval": FILE_DEFAULTS["dt"]}
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
    validate(args.out, stop=args.stop, reference_dir=args.references, engines=args.engines)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="titop-fmu", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("simulate", help="simulate a system and write a CSV")
    p.add_argument("system", help="'balloon' (the paper's system, shared/balloon-scenario.md), a "
                                  "system file (TOML or JSON, see examples/) or an SSP package (.ssp), "
                                  "run by the co-simulation master")
    p.add_argument("--engine", choices=["inprocess", "fmu"], default="inprocess",
                   help="inprocess: the monolithic run (exact loop solve, no coupling error); "
                        "fmu: the co-simulation master on the TITOP FMUs")
    p.add_argument("--stop", type=float, default=FILE_DEFAULTS["stop"], help="stop time [s] (default 20)")
    p.add_argument("--dt", type=float, default=FILE_DEFAULTS["dt"], help="output interval [s] (default 0.01)")
    p.add_argument("--rtol", type=float, default=1e-12, help="integration tolerance (in-process)")
    p.add_argument("--out", default="run.csv", help="CSV file to write (default run.csv)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a scenario value, SI units or e.g. theta1_0=170deg (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    g = p.add_argument_group("co-simulation master (--engine fmu)")
    g.add_argument("--tol", type=float, default=MASTER_DEFAULTS["tol"],
                   help=f"coupling tolerance (default {MASTER_DEFAULTS['tol']:g}; on the balloon 5e-8 with "
                        "--dt-max 0.01 gives below 1e-8)")
    g.add_argument("--dt-max", type=float, default=MASTER_DEFAULTS["dt_max"],
                   help=f"largest macro step [s] (default {MASTER_DEFAULTS['dt_max']:g})")
    g.add_argument("--workers", type=int, default=MASTER_DEFAULTS["workers"],
                   help="processes computing the extrapolated runs, this one included (default 2: this "
                        "one and a worker; 0 or 1: all in this one)")
    g.add_argument("--fmu-dir", default=None,
                   help="folder of the TITOP FMUs (titop-fmu build); missing ones are built there "
                        "(default: a cache under ~/.cache/titop-fmu)")
    g.add_argument("--sequence", default=MASTER_DEFAULTS["sequence"],
                   help="base steps per macro step of the extrapolated runs (default 1,2,3: order 6)")
    g.add_argument("--inprocess-units", action="store_true",
                   help="the same master on the in-process blocks instead of the FMUs (no FMI)")
    g.add_argument("--no-stats", dest="stats", action="store_false", help="no statistics summary")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("build", help="build the TITOP FMUs")
    p.add_argument("--out", default="fmus", help="output folder (default fmus/)")
    p.add_argument("--children", type=int, default=2, help="number of child ports (default 2)")
    p.add_argument("--all-counts", action="store_true", default=None,
                   help="build every count from 0 to --children (the default when --children is not given)")
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
    except TitopError as e:
        print(f"titop-fmu: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
