"""``titop-fmu validate``: the balloon runs against every reference, as a report."""

from __future__ import annotations

from ..simulation import _number
from ..titop.units import DEFAULT_FMU_KIND
from .options import command, fmu_kind_option, writable_folder


def run(args):
    from ..validate import validate
    _number("--stop", args.stop)
    validate(writable_folder("--out", args.out), stop=args.stop, reference_dir=args.references,
             engines=args.engines, msl=args.msl, fmu_kind=args.fmu_kind or DEFAULT_FMU_KIND)


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "validate", help="compare the balloon runs with every reference; write a report")
    p.add_argument("--out", default="validation-report", help="report folder (default validation-report/)")
    p.add_argument("--stop", type=float, default=20.0, help="horizon [s] (default 20)")
    p.add_argument("--references", default=None, help="folder of reference CSVs (default validation/reference)")
    p.add_argument("--engines", nargs="+", default=["inprocess", "fmu"], choices=["inprocess", "fmu"],
                   help="engines to run (default: both; the first one's run is drawn)")
    p.add_argument("--msl", default=None, metavar="DIR",
                   help="folder holding the Modelica Standard Library's Modelica/ (default: MODELICAPATH)")
    fmu_kind_option(p, "the FMUs of the engine fmu")
    p.set_defaults(func=run)
