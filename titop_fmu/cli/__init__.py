"""Command line: ``titop-fmu simulate | sweep | report | animate | plot | build | export | models |
linearize | validate``.

Every option is checked before any work (a one-line error, exit code 2); a
result file is written whole at the end or not at all; Ctrl-C stops a run
with one line and exit code 130.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from .. import one_blas_thread
from ..errors import Interrupted, ParameterWarning, TitopError, did_you_mean

one_blas_thread()           # before the commands import numpy

from . import animate, build, export, linearize, models, plot, report, simulate, sweep, validate  # noqa: E402

#: the commands, in the order of ``titop-fmu --help``; each module adds its subcommand (``add``)
COMMANDS = (simulate, sweep, report, build, export, animate, plot, models, linearize, validate)


class Parser(argparse.ArgumentParser):
    """argparse's errors (an unknown option, a value that is not a number, a choice not
    offered) as every other error: one line, exit code 2, not the usage of the command."""

    def error(self, message):
        sys.exit(print(f"titop-fmu: error: {message} (see '{self.prog} --help')", file=sys.stderr)
                 or 2)


def parser() -> argparse.ArgumentParser:
    from .. import __version__
    top = Parser(
        prog="titop-fmu", description="Multibody systems built one TITOP block per body: simulate them (in "
        "process or as FMI co-simulation units), export them as FMUs, linearize them, run campaigns.",
        epilog="'titop-fmu COMMAND --help' gives a command's options. A first run: 'titop-fmu simulate balloon "
        "--out run.csv', then 'titop-fmu plot run.csv --out run.png'. The guide: README.md and docs/.")
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add(sub)
    top.commands = sub.choices
    return top


def parse(argv) -> argparse.Namespace:
    """The arguments ``argv``; an unknown option is told the nearest of its command's."""
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra:
        options = [o for a in top.commands[args.command]._actions for o in a.option_strings]
        near = next((did_you_mean(x.partition("=")[0], options) for x in extra if x.startswith("-")), "")
        top.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}{near}")
    return args


def main(argv=None, own_process: bool = False) -> int:
    """The command ``argv`` (default: the process's arguments); returns its exit status: 0, or 2
    after a one-line error. ``own_process``: the process is the command's (the ``titop-fmu``
    command, ``python -m titop_fmu.cli``), and so is Ctrl-C: a run stops at the end of its macro
    step, the command ends with one line and status 130. Called from another program (a test
    suite, a notebook), Ctrl-C stays that program's: :class:`KeyboardInterrupt`, raised once
    the run's units and workers are terminated."""
    args = parse(argv)
    args.own_process = own_process
    if args.command == "build" and args.all_counts is None:
        args.all_counts = "--children" not in (argv if argv is not None else sys.argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", ParameterWarning)
            args.func(args)
    except Interrupted as e:
        if not own_process:
            raise KeyboardInterrupt(str(e)) from e
        print(f"titop-fmu: {e}", file=sys.stderr)
        return 130
    except (KeyboardInterrupt, ImportError) as e:
        if isinstance(e, ImportError) and not isinstance(e.__cause__, KeyboardInterrupt):
            raise
        if not own_process:                     # Ctrl-C while a module loads (scipy's, on first use): its
            raise e if isinstance(e, KeyboardInterrupt) else e.__cause__   # ImportError is the interrupt
        print("titop-fmu: interrupted; nothing written", file=sys.stderr)
        return 130
    except TitopError as e:
        print(f"titop-fmu: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:                            # a file or folder the system refuses, as it says
        print(f"titop-fmu: error: {f'{e.filename}: ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return 2
    return 0
