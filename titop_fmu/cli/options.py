"""What the commands share: the checks of the files and folders they write, Ctrl-C during a
run, the options of one engine only, the options several commands take, and the reading of
``SYSTEM`` with its ``--set`` overrides."""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import TitopError
from ..io import write_atomically, write_csv
from ..scenarios import balloon
from ..titop.units import DEFAULT_FMU_KIND, FMU_KINDS


def writable_file(option, path) -> Path:
    """``path`` can be written as a file: its folder exists and is writable, it is not a folder."""
    path = Path(path)
    if path.is_dir():
        raise TitopError(f"{option} {path}: is a folder, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise TitopError(f"{option} {path}: no folder {parent}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise TitopError(f"{option} {path}: not writable")
    return path


def named_file(option, path, suffixes, what) -> Path:
    """``path``, a writable file named as what it holds (one of ``suffixes``, in any case): the
    programs that open it know it by its name; else the error says ``what`` it is."""
    path = writable_file(option, path)
    if path.suffix.lower() not in suffixes:
        raise TitopError(f"{option} {path}: {what}")
    return path


#: ``named_file``'s arguments for a result CSV and for a 3-D view
RESULT = ((".csv",), "the result is a CSV file: name it RUN.csv")
VIEW = ((".html", ".htm"), "the 3-D view is an HTML page: name it VIEW.html")


def writable_folder(option, path) -> Path:
    """``path`` is a writable folder, or a new one in an existing writable folder: only the
    last level is created (a mistyped path does not grow a tree of folders)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise TitopError(f"{option} {path}: is a file, not a folder")
    existing = path if path.is_dir() else path.parent if str(path.parent) else Path(".")
    if not existing.is_dir():
        raise TitopError(f"{option} {path}: no folder {existing} (only the last level of a folder is created)")
    if not os.access(existing, os.W_OK):
        raise TitopError(f"{option} {path}: cannot be written ({existing} is not a writable folder)")
    return path


def write_result(path: Path, t, values, header):
    """The CSV written to a temporary file beside ``path``, then moved in place: never half."""
    write_atomically(path, lambda tmp: write_csv(tmp, t, values, header))


@contextmanager
def cooperative_interrupt(own_process: bool):
    """Ctrl-C asks the master to stop at the end of its macro step (units, FMUs in this
    process and worker processes are left consistent and terminated cleanly); a second
    Ctrl-C ends the process at once (the workers end when their pipe closes). Nothing is
    written either way. Yields the function the master polls. Only in the command's own
    process (``own_process``): in another program's, Ctrl-C is left to it (a
    :class:`KeyboardInterrupt` where it comes; the master terminates its units all the same)."""
    asked = []

    def handler(signum, frame):
        if asked:
            print("\ntitop-fmu: interrupted; nothing written", file=sys.stderr)
            os._exit(130)
        asked.append(True)

    try:
        previous = signal.signal(signal.SIGINT, handler) if own_process else None
    except ValueError:                          # not in the main thread: Ctrl-C as usual
        own_process = False
    if not own_process:
        yield lambda: False
        return
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)


#: options of one engine only: the master's, the in-process run's
MASTER_OPTIONS = {"tol": "--tol", "dt_max": "--dt-max", "workers": "--workers", "sequence": "--sequence",
                  "fmu_dir": "--fmu-dir", "fmu_kind": "--fmu-kind"}
INPROCESS_OPTIONS = {"rtol": "--rtol", "kernel": "--kernel"}


def engine_options(args):
    """An option of the other engine is an error, not silently ignored."""
    master = args.engine == "fmu" or args.inprocess_units
    other = INPROCESS_OPTIONS if master else MASTER_OPTIONS
    for name, option in other.items():
        if getattr(args, name) is not None:
            if master:
                raise TitopError(f"{option} applies to the in-process engine (--engine inprocess); the co-simulation "
                                 "master's tolerance is --tol")
            raise TitopError(f"{option} applies to the co-simulation master (--engine fmu); the in-process engine "
                             "takes --rtol")


def needs(command: str, extra: str, *modules: str) -> None:
    """A one-line error, before any work, when a module that ``command`` needs is not
    installed: it names the missing ones and the extra that brings them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise TitopError(f"titop-fmu {command} needs {', '.join(missing)}: pip install -e \".[{extra}]\"")


def system_of(args):
    """The :class:`~titop_fmu.cosim.CoSystem` of ``SYSTEM`` with its ``--set`` overrides: the
    built-in balloon (its scenario values) or a system file (its units' parameters and free
    inputs, as simulate sets them), checked as simulate checks it."""
    from ..simulation import Target, set_values
    from ..titop.checks import check
    if args.system == "balloon":
        return balloon.system(balloon.checked(set_values(args.set)))
    if not Path(args.system).is_file():
        raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file (TOML or JSON)")
    target = Target(args.system, recorded=False)
    system = target.system(target.overrides(args.set)) if args.set else target.file.system
    check(system, stated=True)                  # every body's physical data stated
    return system


# -- the parser --------------------------------------------------------------------------------

def command(sub, name, help, **kw) -> argparse.ArgumentParser:
    """The subcommand ``name``: its ``--help`` opens with its one-line ``help`` as a sentence
    where it has no ``description`` of its own."""
    kw.setdefault("description", help[0].upper() + help[1:] + ".")
    return sub.add_parser(name, help=help, **kw)


def fmu_kind_option(group, what):
    """``--fmu-kind``: None when not given (an option of the master only: given with the
    in-process engine, it is an error), :data:`DEFAULT_FMU_KIND` then."""
    group.add_argument("--fmu-kind", choices=FMU_KINDS,
                       help=f"{what}: standalone, binaries in C only, or pythonfmu, the reference route through "
                            f"CPython (default {DEFAULT_FMU_KIND}; fmus/README.md)")


def drawing(args) -> dict:
    """The :class:`~titop_fmu.viewer.Animation` keywords of ``--scale`` and of a system file's
    flexible beams, drawn through all their nodes (:func:`~titop_fmu.titop.flexible.drawn_beams`)."""
    from ..simulation import Target
    from ..titop.flexible import drawn_beams
    if Path(args.system).suffix.lower() not in (".toml", ".json"):
        return dict(scale=args.scale, beams=None)
    overrides = Target(args.system, recorded=False).overrides(args.set) if args.set else None
    return dict(scale=args.scale, beams=drawn_beams(args.system, overrides))


def view_options(args):
    """The options of the 3-D view (:func:`animation_options`) given without ``--animate``: an
    error, not ignored."""
    given = [o for o in ("trace", "title", "scale") if getattr(args, o) is not None]
    if given and not args.animate:
        raise TitopError(f"--{given[0]} is an option of the 3-D view: give --animate VIEW.html")


def animation_options(p):
    p.add_argument("--trace", action="append", metavar="UNIT[.POINT]",
                   help="draw the path of a body point: UNIT.com (the default point), UNIT.p or UNIT.c<i> "
                        "(repeatable; default: the centre of mass of every body without a child body, eight at most)")
    p.add_argument("--title", help="title shown in the view (default: the system, the engine and the horizon)")
    p.add_argument("--scale", type=float, metavar="S",
                   help="draw the flexible bodies' elastic displacements S times (default: the largest a tenth of "
                        "its body's size, a round number, at least 1; the page says it)")
