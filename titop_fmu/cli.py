"""Command line: ``titop-fmu simulate | build``."""

from __future__ import annotations

import argparse
import ast
import sys
import warnings

import numpy as np

from . import balloon
from .errors import ParameterError, ParameterWarning, TitopError


def parse_set(items) -> dict:
    """``["k=60", "theta1_0=170deg"]`` -> ``{"k": 60.0, "theta1_0": 2.967...}``.

    Values are SI; a trailing ``deg`` converts degrees to radians. Vectors and
    matrices are written as Python lists: ``t=[1,0,-1]``.
    """
    out = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name:
            raise ParameterError(item, "expected NAME=VALUE")
        if name not in balloon.DEFAULTS:
            raise ParameterError(name, f"unknown balloon parameter; known: {', '.join(balloon.DEFAULTS)}")
        scale = 1.0
        if text.endswith("deg"):
            text, scale = text[:-3], np.pi / 180.0
        try:
            value = np.asarray(ast.literal_eval(text), dtype=float) * scale
        except Exception:
            raise ParameterError(name, f"cannot read the value {text!r}") from None
        if np.shape(value) != np.shape(balloon.DEFAULTS[name]):
            raise ParameterError(name, f"expected shape {np.shape(balloon.DEFAULTS[name])}, got {np.shape(value)}")
        out[name] = value.tolist() if value.ndim else float(value)
    return out


def write_csv(path, t, cols, header=balloon.COLUMNS):
    data = np.column_stack([t, cols])
    np.savetxt(path, data, delimiter=",", header=",".join(header), comments="", fmt="%.17g")


def cmd_simulate(args):
    if args.engine == "fmu" or args.system != "balloon":
        from .master.cli import run_simulate
        run_simulate(args)
        return
    overrides = parse_set(args.set)
    if args.engine == "inprocess":
        s = balloon.build(overrides)
        tr = s.simulate(args.stop, args.dt, rtol=args.rtol, atol=args.rtol, progress=not args.quiet)
        t, cols = tr.t, balloon.columns(s, tr.y)
        if not args.quiet:
            print(f"in-process monolithic run: {args.stop:g} s simulated in {tr.wall:.2f} s wall, "
                  f"{tr.nfev} right-hand-side evaluations", file=sys.stderr)
    write_csv(args.out, t, cols)


def cmd_build(args):
    from .fmu.build import build_all
    paths = build_all(args.out, children=range(args.children + 1) if args.all_counts else [args.children])
    for p in paths:
        print(p)


def cmd_validate(args):
    from .validate import validate
    validate(args.out, stop=args.stop, reference_dir=args.references, engines=args.engines, msl=args.msl)


def main(argv=None):
    from .master.cli import add_arguments as add_master_arguments

    parser = argparse.ArgumentParser(prog="titop-fmu", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("simulate", help="simulate a system and write a CSV")
    p.add_argument("system", help="'balloon' (the paper's system, shared/balloon-scenario.md) or a "
                                  "system file (TOML or JSON, see examples/), run by the co-simulation master")
    p.add_argument("--engine", choices=["inprocess", "fmu"], default="inprocess",
                   help="inprocess: the monolithic run (exact loop solve, no coupling error); "
                        "fmu: the co-simulation master on the TITOP FMUs")
    p.add_argument("--stop", type=float, default=20.0, help="stop time [s] (default 20)")
    p.add_argument("--dt", type=float, default=0.01, help="output interval [s] (default 0.01)")
    p.add_argument("--rtol", type=float, default=1e-12, help="integration tolerance (in-process)")
    p.add_argument("--out", default="run.csv", help="CSV file to write (default run.csv)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a scenario value, SI units or e.g. theta1_0=170deg (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_master_arguments(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("build", help="build the TITOP FMUs")
    p.add_argument("--out", default="fmus", help="output folder (default fmus/)")
    p.add_argument("--children", type=int, default=2, help="number of child ports (default 2)")
    p.add_argument("--all-counts", action="store_true", default=None,
                   help="build every count from 0 to --children (the default when --children is not given)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("validate", help="compare the balloon runs with every reference; write a report")
    p.add_argument("--out", default="validation-report", help="report folder (default validation-report/)")
    p.add_argument("--stop", type=float, default=20.0, help="horizon [s] (default 20)")
    p.add_argument("--references", default=None, help="folder of reference CSVs (default validation/reference)")
    p.add_argument("--engines", nargs="+", default=["inprocess", "fmu"], choices=["inprocess", "fmu"],
                   help="engines to run (default: both; the first one's run is drawn)")
    p.add_argument("--msl", default=None, metavar="DIR",
                   help="folder holding the Modelica Standard Library's Modelica/ (default: MODELICAPATH)")
    p.set_defaults(func=cmd_validate)

    args = parser.parse_args(argv)
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
