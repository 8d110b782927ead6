"""``titop-fmu simulate --engine fmu``: the balloon or a system file through the master.

:func:`run_simulate` is called by :mod:`titop_fmu.cli` with its parsed
arguments; it uses ``system``, ``engine``, ``stop``, ``dt``, ``out``, ``set``,
``quiet`` and, when the parser has them, ``tol``, ``dt_max``, ``workers``,
``fmu_dir``, ``sequence``, ``stats`` (:func:`add_arguments` declares them).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

from ..errors import ParameterWarning, TitopError
from .cosim import Options

#: defaults of the lead's ``simulate`` options that a system file's [simulation] table replaces
CLI_DEFAULTS = dict(stop=20.0, dt=0.01)
#: defaults of the options this module adds
DEFAULTS = dict(tol=Options.tol, dt_max=Options.h_max, workers=2, fmu_dir=None, sequence="1,2,3",
                stats=True, inprocess_units=False)


def add_arguments(parser):
    """The master's options, for the ``simulate`` sub-parser."""
    g = parser.add_argument_group("co-simulation master (--engine fmu)")
    g.add_argument("--tol", type=float, default=DEFAULTS["tol"],
                   help=f"coupling tolerance (default {DEFAULTS['tol']:g}; on the balloon 5e-8 with --dt-max 0.01 "
                        "gives below 1e-8)")
    g.add_argument("--dt-max", type=float, default=DEFAULTS["dt_max"],
                   help=f"largest macro step [s] (default {DEFAULTS['dt_max']:g})")
    g.add_argument("--workers", type=int, default=DEFAULTS["workers"],
                   help="processes computing the extrapolated runs, this one included (default 2: this "
                        "one and a worker; 0 or 1: all in this one)")
    g.add_argument("--fmu-dir", default=None,
                   help="folder of the TITOP FMUs (titop-fmu build); missing ones are built there "
                        "(default: a cache under ~/.cache/titop-fmu)")
    g.add_argument("--sequence", default=DEFAULTS["sequence"],
                   help="base steps per macro step of the extrapolated runs (default 1,2,3: order 6)")
    g.add_argument("--inprocess-units", action="store_true",
                   help="the same master on the in-process blocks instead of the FMUs (no FMI)")
    g.add_argument("--no-stats", dest="stats", action="store_false", help="no statistics summary")
    return parser


def _get(args, name):
    return getattr(args, name, DEFAULTS.get(name))


def options_from(args, **kw) -> Options:
    seq = _get(args, "sequence")
    try:
        seq = tuple(int(x) for x in str(seq).replace(" ", "").split(","))
    except ValueError:
        raise TitopError(f"--sequence: expected comma-separated integers, got {seq!r}") from None
    if not seq or any(n <= 0 for n in seq) or list(seq) != sorted(set(seq)):
        raise TitopError(f"--sequence: expected increasing positive integers, got {seq}")
    tol, dt_max = float(_get(args, "tol")), float(_get(args, "dt_max"))
    if not (tol > 0 and dt_max > 0):
        raise TitopError("--tol and --dt-max must be positive")
    return Options(tol=tol, h_max=dt_max, sequence=seq, workers=int(_get(args, "workers") or 0), **kw)


def run_simulate(args) -> int:
    """``titop-fmu simulate {balloon | SYSTEM_FILE} --engine fmu ...``; returns the exit code."""
    from ..cli import write_csv
    from . import balloon_fmu, engines, systemfile
    quiet = bool(getattr(args, "quiet", False))
    engine = "inprocess" if _get(args, "inprocess_units") else "fmu"
    fmu_dir = _get(args, "fmu_dir")
    start = time.perf_counter()
    if args.system == "balloon":
        from ..cli import parse_set
        overrides = parse_set(getattr(args, "set", None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ParameterWarning)
            system = balloon_fmu.system(overrides)
        opt = options_from(args, observe=balloon_fmu.observer(overrides), labels=list(balloon_fmu.COLUMNS[1:]),
                           angles=balloon_fmu.ANGLES)
        stop, dt = args.stop, args.dt
    else:
        path = Path(args.system)
        if not path.is_file():
            raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file")
        if getattr(args, "set", None):
            raise TitopError("--set applies to the built-in balloon; set parameters in the system file")
        sf = systemfile.read(path)
        system = sf.system
        if not system.recorded:
            raise TitopError(f"{path}: nothing to write: add record = [\"unit.output\", ...]")
        opt = options_from(args)
        # the file's [simulation] table replaces the options left at their defaults
        stop = sf.simulation.get("stop", args.stop) if args.stop == CLI_DEFAULTS["stop"] else args.stop
        dt = sf.simulation.get("output_interval", args.dt) if args.dt == CLI_DEFAULTS["dt"] else args.dt
        if opt.tol == DEFAULTS["tol"] and "tolerance" in sf.simulation:
            opt.tol = sf.simulation["tolerance"]
    if not (stop > 0 and dt > 0):
        raise TitopError(f"need --stop > 0 and --dt > 0, got {stop}, {dt}")
    master = engines.build(system, engine, opt, fmu_dir)
    try:
        res = master.simulate(stop, dt, progress=not quiet)
    finally:
        master.terminate()
    write_csv(args.out, res.t, res.values, ["t"] + res.labels)
    if not quiet and _get(args, "stats"):
        total = time.perf_counter() - start
        print(f"co-simulation ({engine} units, sequence {opt.sequence}, tol {opt.tol:g}): "
              f"{stop:g} s simulated in {total:.2f} s", file=sys.stderr)
        print(res.stats.summary(), file=sys.stderr)
        print(f"wrote {args.out} ({len(res.t)} rows)", file=sys.stderr)
    return 0
