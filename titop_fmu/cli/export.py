"""``titop-fmu export SYSTEM``: a whole system as one FMU, or as an SSP package of its block FMUs."""

from __future__ import annotations

from pathlib import Path

from ..errors import TitopError
from ..scenarios import balloon
from ..simulation import DEFAULTS
from ..titop.units import DEFAULT_FMU_KIND
from .options import command, fmu_kind_option, writable_file, writable_folder


def run(args):
    """``titop-fmu export {balloon | SYSTEM_FILE} --out NAME.fmu | --ssp NAME.ssp``: the whole
    system as one FMU, or its block FMUs as an SSP package."""
    from ..simulation import read_file
    from ..titop.checks import check
    from ..titop.export import export_fmu, export_ssp
    for option, path in (("--out", args.out), ("--ssp", args.ssp)):
        if path:
            writable_file(option, path)
    if args.fmu_dir is not None:
        writable_folder("--fmu-dir", args.fmu_dir)
    if args.system == "balloon":
        system, simulation = balloon.system(), {"stop": DEFAULTS["stop"], "output_interval": DEFAULTS["dt"]}
    elif Path(args.system).is_file():
        sf = read_file(args.system)
        check(sf.system, stated=True, exported=not args.ssp)    # an assembly's free ports are its inputs
        system, simulation = sf.system, sf.simulation
    else:
        raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file")
    if not (args.out or args.ssp):
        raise TitopError("export: give --out NAME.fmu (one FMU) and/or --ssp NAME.ssp (SSP of the block FMUs)")
    if args.standalone and args.fmu_kind not in (None, "standalone"):
        raise TitopError(f"export: --standalone and --fmu-kind {args.fmu_kind} ask for two kinds of FMU")
    kind = "standalone" if args.standalone else args.fmu_kind or DEFAULT_FMU_KIND
    if args.out:
        print(export_fmu(system, args.out, simulation, kind))
    if args.ssp:
        print(export_ssp(system, args.ssp, simulation, args.fmu_dir, kind))


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "export", help="write a system as one FMU (the loop solved inside) for any FMI host, "
                                    "or as an SSP package of its block FMUs")
    p.add_argument("system", help="'balloon' or a system file (TOML or JSON) of TITOP units")
    p.add_argument("--out", help="the FMU to write, NAME.fmu (model identifier NAME)")
    p.add_argument("--ssp", help="the SSP 1.0 package to write, NAME.ssp (block FMUs, connections, parameters)")
    p.add_argument("--fmu-dir", default=None, help="folder of the block FMUs for --ssp (default: the cache)")
    fmu_kind_option(p, "the FMU of --out (standalone: co-simulation and Model Exchange; linux64, and win64 where "
                       "MinGW-w64 is installed) and the block FMUs of --ssp")
    p.add_argument("--standalone", action="store_true", help="the same as --fmu-kind standalone")
    p.set_defaults(func=run)
