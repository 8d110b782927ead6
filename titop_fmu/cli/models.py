"""``titop-fmu models [NAME]``: the TITOP models, or one model's ports and parameters."""

from __future__ import annotations

from ..errors import TitopError
from .options import command


def run(args):
    """``titop-fmu models [NAME]``: the model kinds, or one model's ports and parameters;
    ``--markdown``: every model's, as the reference of docs/system-files.md."""
    from ..models import describe, listing, markdown
    if args.markdown and args.name:
        raise TitopError("models --markdown describes every model: give no NAME")
    print(markdown() if args.markdown else describe(args.name) if args.name else listing())


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "models", help="list the TITOP models (block kinds), or one model's ports and parameters")
    p.add_argument("name", nargs="?", help="a model identifier, e.g. revolute_c1 (default: list them all)")
    p.add_argument("--markdown", action="store_true",
                   help="every model's ports and parameters as Markdown tables (docs/system-files.md)")
    p.set_defaults(func=run)
