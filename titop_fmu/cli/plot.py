"""``titop-fmu plot RUN.csv``: chosen columns of a result CSV as a figure."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import TitopError
from ..io import read_result
from ..scenarios import balloon
from .options import command, writable_file


def run(args):
    """``titop-fmu plot RUN.csv --out FIG.png``: chosen columns of a result CSV as a figure."""
    from ..simulation import read_file
    from ..plot import check_format, plot
    out = args.out or str(Path(args.run).with_suffix(".png"))
    check_format("--out", out)
    out = writable_file("--out", out)
    system = None
    if args.system == "balloon":
        system = balloon.system()
    elif args.system is not None:
        if not Path(args.system).is_file():
            raise TitopError(f"--system {args.system}: not 'balloon' and no such system file")
        system = read_file(args.system).system
    t, columns = read_result(args.run)
    plot(t, columns, out, args.columns, args.by_unit, system, args.title)
    print(f"wrote {out}", file=sys.stderr)


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "plot", help="draw chosen columns of a result CSV (PNG, PDF or SVG), for reports",
                description="Draw columns of a result CSV of titop-fmu against time: one subplot per "
                            "column, or one per unit with --by-unit; SI units in the labels where "
                            "known. Needs matplotlib (the report extra).")
    p.add_argument("run", metavar="RUN.csv", help="a result CSV (titop-fmu simulate)")
    p.add_argument("--out", help="the figure, .png, .pdf or .svg (default: RUN.png)")
    p.add_argument("--columns", nargs="+", metavar="NAME",
                   help="columns to draw, by name or pattern ('arm.joint.q[*]', 'theta*'; default: all)")
    p.add_argument("--by-unit", action="store_true", help="one subplot per unit, the columns sharing it together")
    p.add_argument("--system", help="'balloon' or the system file of the run: the units of every output "
                                    "(a joint's q in rad or m)")
    p.add_argument("--title", help="title of the figure")
    p.set_defaults(func=run)
