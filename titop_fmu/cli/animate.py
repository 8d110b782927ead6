"""``titop-fmu animate SYSTEM [RUN.csv]``: a 3-D view of a result CSV, or of an in-process run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..errors import TitopError
from ..io import read_result
from ..scenarios import balloon
from ..simulation import DEFAULTS
from . import simulate
from .options import VIEW, animation_options, command, drawing, named_file, system_of


def run(args):
    """``titop-fmu animate SYSTEM [RUN.csv] --out VIEW.html``: the view of a result CSV that has
    the outputs placing every body, or of an in-process run of the system."""
    named_file("--out", args.out, *VIEW)
    if args.mode is not None:
        return _mode(args)
    if args.trim is not None:
        raise TitopError("--trim applies to --mode: the equilibrium whose mode is shown")
    if args.run is None:
        sim = simulate.defaults(args.system)
        sim.out, sim.animate, sim.trace, sim.title, sim.scale = None, args.out, args.trace, args.title, args.scale
        sim.stop, sim.dt, sim.set, sim.quiet = args.stop, args.dt, args.set, args.quiet
        sim.own_process = args.own_process
        return simulate.run(sim)
    from ..viewer import Animation
    if args.stop is not None or args.dt is not None:
        raise TitopError("--stop and --dt apply to a run: the CSV given is shown as it is")
    if Path(args.system).suffix == ".ssp":
        raise TitopError(f"{args.system}: the units of an SSP package are FMU files, which the view cannot "
                         "draw; animate the system file it was exported from")
    system = system_of(args)
    anim = Animation(named_file("--out", args.out, *VIEW), system, args.title or
                     f"{Path(args.system).stem}: {Path(args.run).name}", args.trace, **drawing(args))
    t, columns = read_result(args.run)
    if args.system == "balloon":
        if list(columns) != list(balloon.COLUMNS[1:]):
            raise TitopError(f"{args.run}: not a run of the balloon (columns {','.join(balloon.COLUMNS)})")
        anim.write_balloon(t, np.column_stack(list(columns.values())))
    else:
        try:
            anim.write(t, columns)
        except TitopError as e:
            raise TitopError(f"{args.run}: {e}; record them in {args.system}, or leave out {args.run} "
                             "to run the system") from None
    if not args.quiet:
        print(f"wrote {anim.path}", file=sys.stderr)


def _mode(args):
    """``--mode N``: mode ``N`` of the linear model at the initial state, or at the equilibrium
    that ``--trim`` finds, moving in the view."""
    from ..linear import linearize
    from ..linear.trim import trim
    from ..titop.monolithic import is_closed_loop
    from ..viewer import Animation
    from ..viewer.modes import write_mode
    if args.run is not None or args.stop is not None or args.dt is not None:
        raise TitopError("--mode shows a mode of the linear model: no RUN.csv, --stop or --dt")
    cs = system_of(args)
    if is_closed_loop(cs):
        raise TitopError("--mode shows the modes of a plant: this system has time signals or control units "
                         "(animate a run of it, or linearize its plant's file)")
    anim = Animation(named_file("--out", args.out, *VIEW), cs, args.title or Path(args.system).stem, args.trace,
                     **drawing(args))
    system, state = cs, None
    if args.trim is not None:
        eq = trim(cs, free=args.trim or None)
        system, state = eq.system, eq.state
    write_mode(anim, system, linearize(system, state, [], []), args.mode)
    if not args.quiet:
        print(f"wrote {anim.path} ({anim.title})", file=sys.stderr)


def add(sub):
    """The subcommand and its options."""
    p = command(
        sub, "animate", help="write a 3-D view of a run: one HTML file that opens offline in a browser",
        description="Write a 3-D view of a system's motion: bodies, joints and frames, a time slider, "
                    "play/pause, speed and loop; drag to orbit, wheel to zoom. One HTML file, nothing "
                    "fetched: it opens offline. With RUN.csv, the CSV is shown as it is: it must hold the "
                    "outputs that place every body (a base's p.m[13..18] or any body's c<i>.m[13..18], or a "
                    "body's <unit>.com.position with its <unit>.dcm or <unit>.euler; and joint.q[3] of the "
                    "joints below; the balloon's columns x..theta2), as written by "
                    "'titop-fmu simulate'. Without RUN.csv, the system is run by the in-process monolithic "
                    "engine; 'titop-fmu simulate SYSTEM --engine fmu --animate VIEW.html' shows a "
                    "co-simulation run. The time shown can be set in the address: VIEW.html#t=3.5.")
    p.add_argument("system", help="'balloon' or a system file (TOML or JSON)")
    p.add_argument("run", nargs="?", metavar="RUN.csv", help="a result CSV of this system (default: run it)")
    p.add_argument("--out", default="view.html", help="the HTML file to write (default view.html)")
    p.add_argument("--stop", type=float, help="stop time of the run [s] (default: the file's, else "
                                              f"{DEFAULTS['stop']:g})")
    p.add_argument("--dt", type=float, help="output interval of the run [s] (default: the file's, else "
                                            f"{DEFAULTS['dt']:g})")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a balloon value (as simulate)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--mode", type=int, metavar="N",
                   help="show mode N of the linear model (the N-th row of titop-fmu linearize's modes table below "
                        "its zero line, slowest first) moving about the initial state or, with --trim, an "
                        "equilibrium; no run")
    p.add_argument("--trim", nargs="*", metavar="FREE", help="with --mode: the mode about the equilibrium found "
                                                               "from the initial state (as linearize --trim)")
    animation_options(p)
    p.set_defaults(func=run)
