"""``titop-fmu build``: the TITOP block FMUs."""

from __future__ import annotations

from ..errors import TitopError
from ..fmu.catalog import MAX_CHILDREN
from .options import command, writable_folder


def run(args):
    if args.standalone:
        from ..fmu.standalone import build_all
    else:
        from ..fmu.build import build_all
    if not (0 <= args.children <= MAX_CHILDREN):
        raise TitopError(f"--children must be between 0 and {MAX_CHILDREN}, got {args.children}")
    out = writable_folder("--out", args.out)
    build_all(out, children=range(args.children + 1) if args.all_counts else [args.children], log=print)


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "build", help="build the TITOP FMUs")
    p.add_argument("--out", default="fmus", help="output folder (default fmus/)")
    p.add_argument("--children", type=int, default=2,
                   help=f"number of child ports (default 2, at most {MAX_CHILDREN})")
    p.add_argument("--all-counts", action="store_true", default=None,
                   help="build every count from 0 to --children (the default when --children is not given)")
    p.add_argument("--standalone", action="store_true",
                   help="binaries in C only (no Python at run time), for linux64 and, with the MinGW-w64 "
                        "cross compiler, win64 (fmus/README.md)")
    p.set_defaults(func=run)
