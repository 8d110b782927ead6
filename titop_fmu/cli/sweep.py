"""``titop-fmu sweep``: a campaign (Monte Carlo, sweep) of a system on Dask, stored as Parquet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import TitopError
from ..simulation import MAX_WORKERS
from . import report
from .options import command, fmu_kind_option, needs, writable_folder


def run(args):
    """``titop-fmu sweep {SYSTEM | CAMPAIGN.toml} --vary NAME=DISTRIBUTION ... --out STORE``."""
    needs("sweep", "campaign", *(() if args.workers == 0 else ("dask", "distributed")), "pyarrow", "pandas")
    from .. import campaign
    from ..campaign.spec import is_campaign_file, read_file
    settings = read_file(args.system) if is_campaign_file(args.system) else {"system": args.system}
    vary, given = dict(settings.pop("vary", {})), set()
    for item in args.vary or ():
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise TitopError(f"--vary {item}: expected NAME=DISTRIBUTION, e.g. m_P1=uniform(1.5,2.5)")
        if name.strip() in given:
            raise TitopError(f"--vary {name.strip()} is given twice: one distribution per name")
        given.add(name.strip())
        vary[name.strip()] = text.strip()
    settings["vary"] = vary
    settings["set"] = list(settings.get("set", [])) + list(args.set or [])
    for key in ("samples", "seed", "sampling", "engine", "fmu_kind", "stop", "dt", "rtol", "tol", "dt_max", "sequence", "kernel"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    master = settings.get("engine") == "fmu"
    other = ("rtol", "kernel") if master else ("tol", "dt_max", "sequence")
    given = [k for k in other if settings.get(k) is not None]
    if given:                                   # the options of the other engine, on the command line or in the file
        raise TitopError(f"--{given[0].replace('_', '-')} applies to " + (
            "the in-process engine (--engine inprocess); the co-simulation master's tolerance is --tol" if master
            else "the co-simulation master (--engine fmu); the in-process engine takes --rtol"))
    if args.workers is not None and not (0 <= args.workers <= MAX_WORKERS):
        raise TitopError(f"--workers must be between 0 and {MAX_WORKERS}, got {args.workers}")
    if args.report:
        writable_folder("--report", args.report)
        if Path(args.report).resolve().is_relative_to(Path(args.out).resolve()):
            raise TitopError(f"--report {args.report}: inside the store --out {args.out}; write it beside it")
    spec = campaign.Sweep(**settings).resolved()
    c = campaign.run(spec, writable_folder("--out", args.out), workers=args.workers, scheduler=args.scheduler,
                     resume=args.resume, progress=not args.quiet)
    counts = c.samples.status.value_counts()
    if not args.quiet:
        print(f"{args.out}: {counts.get('ok', 0)} runs ok, {counts.get('failed', 0)} failed, "
              f"{counts.get('missing', 0)} missing, of {spec.samples}", file=sys.stderr)
    if args.report:
        report.run(argparse.Namespace(store=args.out, out=args.report, outputs=None))


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "sweep", help="run a campaign (Monte Carlo, sweep) of a system on Dask; store it as Parquet")
    p.add_argument("system", help="'balloon', a system file, or a campaign file (TOML with a [sweep] table: the "
                                  "options below as keys; options given here win)")
    p.add_argument("--vary", action="append", metavar="NAME=DISTRIBUTION",
                   help="a varied quantity (a --set name, e.g. m_P1 or link1.inertia[1,1]) and its distribution: "
                        "uniform(a,b), normal(mu,sigma), truncnormal(mu,sigma,a,b), [v1,v2,..], choice(..), "
                        "linspace(a,b,n); numbers in SI units or with their units, 170deg, 5 mm (repeatable)")
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
    fmu_kind_option(p, "the TITOP FMUs of --engine fmu")
    p.add_argument("--stop", type=float, help="stop time [s] (default: the system file's, else 20)")
    p.add_argument("--dt", type=float, help="output interval [s] (default: the system file's, else 0.01)")
    p.add_argument("--rtol", type=float, help="in-process integration tolerance (default 1e-12)")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"], help="as simulate's (default auto)")
    p.add_argument("--tol", type=float, help="coupling tolerance of the master (--engine fmu)")
    p.add_argument("--dt-max", type=float, help="largest macro step of the master [s] (--engine fmu)")
    p.add_argument("--sequence", help="base steps per macro step of the master (--engine fmu; default 1,2,3)")
    p.add_argument("--report", metavar="DIR", help="also write the campaign's report there (see titop-fmu report)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=run)
