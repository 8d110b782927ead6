"""``titop-fmu report STORE``: a campaign's summaries and figures."""

from __future__ import annotations

from .options import command, needs, writable_folder


def run(args):
    """``titop-fmu report STORE --out DIR [--outputs NAME ...]``: a campaign's summaries and figures."""
    needs("report", "campaign", "pyarrow", "pandas")
    from ..campaign import open as open_store
    from ..campaign.report import report
    out = writable_folder("--out", args.out)
    print(report(open_store(args.store), out, args.outputs))


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "report", help="summaries and figures of a campaign store: envelopes, worst samples, "
                                    "rank correlations")
    p.add_argument("store", help="the campaign's store (titop-fmu sweep --out)")
    p.add_argument("--out", default="campaign-report", help="report folder (default campaign-report/)")
    p.add_argument("--outputs", nargs="+", metavar="NAME",
                   help="the recorded outputs to report: names or shell patterns ('bus.*', 'link?.joint.q[3]'); "
                        "default all (figures: a page per unit, twelve outputs at most on a page)")
    p.set_defaults(func=run)
