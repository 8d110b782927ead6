"""Command line: ``titop-fmu simulate | sweep | report | animate | plot | build | export | models |
linearize | validate``.

Every option is checked before any work (a one-line error, exit code 2); a
result file is written whole at the end or not at all; Ctrl-C stops a run
with one line and exit code 130.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .errors import Interrupted, ParameterWarning, TitopError, did_you_mean
from .io import parse_set, read_result, write_atomically, write_csv
from .scenarios import balloon
from .simulation import (DEFAULTS, MAX_CHILDREN, MAX_WORKERS, RTOL_MIN, TOL_MIN, _number, master_options,
                         resolve_options)
from .titop.units import DEFAULT_FMU_KIND, FMU_KINDS


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
def cooperative_interrupt():
    """Ctrl-C asks the master to stop at the end of its macro step (units, FMUs in this
    process and worker processes are left consistent and terminated cleanly); a second
    Ctrl-C ends the process at once (the workers end when their pipe closes). Nothing is
    written either way. Yields the function the master polls."""
    asked = []

    def handler(signum, frame):
        if asked:
            print("\ntitop-fmu: interrupted; nothing written", file=sys.stderr)
            os._exit(130)
        asked.append(True)

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:                          # not in the main thread: Ctrl-C as usual
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


def run_master(args, system, observe=None):
    """The co-simulation master on ``system`` (FMUs, or in-process units); returns
    ``(result, options, engine, {unit: UnitType})``."""
    from .cosim import build
    from .titop import TitopUnits
    engine = "inprocess" if args.inprocess_units else "fmu"
    opt = master_options(args, **(observe or {}))
    master = build(system, TitopUnits(engine, args.fmu_dir, args.fmu_kind or DEFAULT_FMU_KIND), opt)
    try:
        with cooperative_interrupt() as asked:
            res = master.simulate(args.stop, args.dt, progress=not args.quiet, stop_requested=asked)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted at t = {master.t:.6g} s; nothing written") from None
    finally:
        master.terminate()
    return res, opt, engine, dict(zip(master.st.unit_names, master.st.types))


def cmd_simulate(args):
    start = time.perf_counter()
    from .cosim import ssp, systemfile
    from .titop import monolithic
    from .titop.checks import check
    from .titop.records import Records
    if args.system == "balloon":
        sim = {}
        overrides = balloon.checked(parse_set(args.set, balloon.DEFAULTS))
    else:
        path = Path(args.system)
        if not path.is_file():
            raise TitopError(f"unknown system {args.system!r}: not 'balloon'{did_you_mean(args.system, ['balloon'])} "
                             "and no such system file")
        if path.suffix == ".ssp" and args.engine != "fmu" and not args.inprocess_units:
            raise TitopError(f"{path}: an SSP package runs through its FMUs: add --engine fmu")
        sf = (ssp.read if path.suffix == ".ssp" else systemfile.read)(path)
        if args.set:                                # unit parameters and free inputs by name
            from .titop import overrides as ov
            sf.system = ov.apply(sf.system, parse_set(args.set, ov.settable(sf.system)))
        if not sf.system.recorded and args.out:
            raise TitopError(f"{path}: nothing to write: add record = [\"unit.output\", ...]")
        records = check(sf.system, stated=path.suffix != ".ssp")
        sim = sf.simulation
    engine_options(args)
    resolve_options(args, sim)
    out = named_file("--out", args.out, *RESULT) if args.out else None
    if args.fmu_dir is not None:
        writable_folder("--fmu-dir", args.fmu_dir)
    master = args.engine == "fmu" or args.inprocess_units
    anim = animation(args, balloon.system(overrides) if args.system == "balloon" else sf.system,
                     "co-simulation master" if master else "in-process monolithic run")
    if master:
        if args.system == "balloon":
            system = balloon.system(overrides)
            observe = balloon.observed(overrides)
        else:
            from .titop.checks import wired
            recs = Records(anim.recording()) if anim else records
            system, observe = wired(recs.raw_system())[0], None
        res, opt, engine, types = run_master(args, system, observe)
        values, labels = (res.values, res.labels) if args.system == "balloon" else \
            recs.finish(res.values, res.labels, types)
        n = len(labels)
        if observe is None and anim:                # the outputs added for the view come last
            n -= sum(len(e.labels) for e in recs.entries[len(records.entries):])
            anim.write(res.t, dict(zip(labels, values.T)))
        elif anim:
            anim.write_balloon(res.t, res.values)
        if out:
            write_result(out, res.t, values[:, :n], ["t"] + labels[:n])
        rows = len(res.t)
        if res.warning:                             # printed even with --quiet
            print(f"titop-fmu: {res.warning}", file=sys.stderr)
        if not args.quiet and args.stats:
            units = f"{args.fmu_kind or DEFAULT_FMU_KIND} FMUs" if engine == "fmu" else "inprocess units"
            print(f"co-simulation ({units}, sequence {args.sequence}, tol {args.tol:g}): "
                  f"{args.stop:g} s simulated in {time.perf_counter() - start:.2f} s", file=sys.stderr)
            print(res.stats.summary(), file=sys.stderr)
    else:
        if args.system == "balloon":
            s = balloon.build(overrides)
            tr = s.simulate(args.stop, args.dt, rtol=args.rtol, atol=args.rtol, progress=not args.quiet,
                            kernel=args.kernel or "auto")
            values, header = balloon.columns(s, tr.y), balloon.COLUMNS
            if anim:
                anim.write_balloon(tr.t, values)
        else:
            tr, values = monolithic.run(sf.system, args.stop, args.dt, args.rtol, args.rtol, progress=not args.quiet,
                                        kernel=args.kernel or "auto")
            header = ["t"] + records.labels
            if anim:
                anim.write_twin(tr)
        if out:
            write_result(out, tr.t, values, header)
        rows = len(tr.t)
        if not args.quiet:
            print(f"in-process monolithic run ({'C kernel' if tr.kernel == 'c' else 'NumPy blocks'}): "
                  f"{args.stop:g} s simulated in {tr.wall:.2f} s wall, {tr.nfev} right-hand-side evaluations",
                  file=sys.stderr)
    if not args.quiet:
        for path in (out, anim and anim.path):
            if path:
                print(f"wrote {path}" + (f" ({rows} rows)" if path == out else ""), file=sys.stderr)


def animation(args, system, engine):
    """The :class:`~titop_fmu.viewer.Animation` that ``--animate`` asks for (None without it),
    checked before the run."""
    if not args.animate:
        return None
    if args.out and Path(args.animate).resolve() == Path(args.out).resolve():
        raise TitopError(f"--animate {args.animate}: the same file as --out")
    from .viewer import Animation
    name = "balloon" if args.system == "balloon" else Path(args.system).stem
    return Animation(named_file("--animate", args.animate, *VIEW), system, args.title or f"{name}: {engine}, "
                     f"{args.stop:g} s", args.trace)


def _system_of(args):
    """The :class:`~titop_fmu.cosim.CoSystem` of ``SYSTEM`` with its ``--set`` overrides: the
    built-in balloon (its scenario values) or a system file (its units' parameters and free
    inputs, as simulate sets them), checked as simulate checks it."""
    from .cosim import systemfile
    from .titop import overrides as ov
    from .titop.checks import check
    if args.system == "balloon":
        return balloon.system(balloon.checked(parse_set(args.set, balloon.DEFAULTS)))
    if not Path(args.system).is_file():
        raise TitopError(f"unknown system {args.system!r}: not 'balloon' and no such system file (TOML or JSON)")
    system = systemfile.read(args.system).system
    if args.set:
        system = ov.apply(system, parse_set(args.set, ov.settable(system)))
    check(system, stated=True)                  # every body's physical data stated
    return system


def cmd_animate(args):
    """``titop-fmu animate SYSTEM [RUN.csv] --out VIEW.html``: the view of a result CSV that has
    the outputs placing every body, or of an in-process run of the system."""
    named_file("--out", args.out, *VIEW)
    if args.run is None:
        sim = parser().parse_args(["simulate", args.system])
        sim.out, sim.animate, sim.trace, sim.title = None, args.out, args.trace, args.title
        sim.stop, sim.dt, sim.set, sim.quiet = args.stop, args.dt, args.set, args.quiet
        return cmd_simulate(sim)
    from .viewer import Animation
    if args.stop is not None or args.dt is not None:
        raise TitopError("--stop and --dt apply to a run: the CSV given is shown as it is")
    if Path(args.system).suffix == ".ssp":
        raise TitopError(f"{args.system}: the units of an SSP package are FMU files, which the view cannot "
                         "draw; animate the system file it was exported from")
    system = _system_of(args)
    anim = Animation(named_file("--out", args.out, *VIEW), system, args.title or
                     f"{Path(args.system).stem}: {Path(args.run).name}", args.trace)
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


def cmd_plot(args):
    """``titop-fmu plot RUN.csv --out FIG.png``: chosen columns of a result CSV as a figure."""
    from .cosim import systemfile
    from .plot import check_format, plot
    out = args.out or str(Path(args.run).with_suffix(".png"))
    check_format("--out", out)
    out = writable_file("--out", out)
    system = None
    if args.system == "balloon":
        system = balloon.system()
    elif args.system is not None:
        if not Path(args.system).is_file():
            raise TitopError(f"--system {args.system}: not 'balloon' and no such system file")
        system = systemfile.read(args.system).system
    t, columns = read_result(args.run)
    plot(t, columns, out, args.columns, args.by_unit, system, args.title)
    print(f"wrote {out}", file=sys.stderr)


def cmd_build(args):
    if args.standalone:
        from .fmu.standalone import build_all
    else:
        from .fmu.build import build_all
    if not (0 <= args.children <= MAX_CHILDREN):
        raise TitopError(f"--children must be between 0 and {MAX_CHILDREN}, got {args.children}")
    out = writable_folder("--out", args.out)
    build_all(out, children=range(args.children + 1) if args.all_counts else [args.children], log=print)


def cmd_export(args):
    """``titop-fmu export {balloon | SYSTEM_FILE} --out NAME.fmu | --ssp NAME.ssp``: the whole
    system as one FMU, or its block FMUs as an SSP package."""
    from .cosim import systemfile
    from .titop.checks import check
    from .titop.export import export_fmu, export_ssp
    for option, path in (("--out", args.out), ("--ssp", args.ssp)):
        if path:
            writable_file(option, path)
    if args.fmu_dir is not None:
        writable_folder("--fmu-dir", args.fmu_dir)
    if args.system == "balloon":
        system, simulation = balloon.system(), {"stop": DEFAULTS["stop"], "output_interval": DEFAULTS["dt"]}
    elif Path(args.system).is_file():
        sf = systemfile.read(args.system)
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


def cmd_models(args):
    """``titop-fmu models [NAME]``: the model kinds, or one model's ports and parameters;
    ``--markdown``: every model's, as the reference of docs/system-files.md."""
    from .models import describe, listing, markdown
    if args.markdown and args.name:
        raise TitopError("models --markdown describes every model: give no NAME")
    print(markdown() if args.markdown else describe(args.name) if args.name else listing())


def cmd_linearize(args):
    """``titop-fmu linearize SYSTEM [--trim [FREE ...]] [--inputs ...] [--outputs ...] --out FILE``:
    the linear model at the system's initial state or at the equilibrium found from it."""
    from .linear import linearize
    from .linear.trim import trim
    out = writable_file("--out", args.out)
    if out.suffix not in (".mat", ".npz"):
        raise TitopError(f"--out {out}: write a .mat or a .npz file")
    cs = _system_of(args)
    outputs = cs.recorded if args.outputs is None else args.outputs
    if args.grid:
        return _linearize_family(args, cs, outputs, out)
    state, system = None, cs
    if args.trim is not None:
        eq = trim(cs, free=args.trim or None)
        if not args.quiet:
            print(f"equilibrium: {len(eq.free)} free unknown(s) {', '.join(eq.free)}; held: "
                  f"{'; '.join(eq.held) or 'nothing'}; accelerations <= {eq.residual:.2g} after "
                  f"{eq.iterations} Newton step(s)")
            found = eq.inputs
            for name in eq.free:
                if name in found:
                    print(f"  {name} = {found[name]:.12g}")
        state, system = eq.state, eq.system
    model = linearize(system, state, args.inputs, outputs)
    model.save(out)
    if not args.quiet:
        print(model.modes_table())
        print(f"wrote {out}: A {model.A.shape[0]}x{model.A.shape[1]}, B {model.B.shape[0]}x{model.B.shape[1]}, "
              f"C {model.C.shape[0]}x{model.C.shape[1]}, D {model.D.shape[0]}x{model.D.shape[1]}, with the names "
              "of states, inputs and outputs")


def _grid(text) -> tuple:
    """``NAME=START:STOP:N`` or ``NAME=V1,V2,...`` (a ``deg`` suffix on the values converts
    degrees) -> ``(name, values)``."""
    name, sep, values = text.partition("=")
    scale = 1.0
    if values.endswith("deg"):
        values, scale = values[:-3], math.pi / 180.0
    try:
        if ":" in values:
            lo, hi, n = values.split(":")
            grid = np.linspace(float(lo), float(hi), int(n))
        else:
            grid = np.array([float(v) for v in values.split(",")])
    except ValueError:
        grid = None
    if not sep or not name or grid is None or len(grid) < 2 or not np.all(np.diff(grid) > 0) \
            or not np.all(np.isfinite(grid)):
        raise TitopError(f"--grid {text}: expected NAME=START:STOP:N or NAME=V1,V2,... with at least two "
                         "increasing values")
    return name.strip(), grid * scale


def _is_parameter(cs, name) -> bool:
    """``name`` is a scalar parameter of a unit of ``cs`` (``link1.mass``), not an input."""
    from .fmu import catalog
    unit, _, var = name.partition(".")
    spec = cs.units.get(unit)
    try:
        params = catalog.interface_of(spec.model).params if spec is not None else ()
    except KeyError:
        return False
    return any(p.name == var and not p.shape for p in params)


def _linearize_family(args, cs, outputs, out):
    """``--grid``: the family of linear models along a scheduling parameter (a balloon scenario
    value, or a state or input name), its equilibria continued along the grid."""
    from .linear.lpv import family
    name, grid = _grid(args.grid)
    if args.trim is None:
        raise TitopError("--grid needs --trim: the family's models are at equilibria")
    system = cs
    if args.system == "balloon" and name in balloon.DEFAULTS:
        overrides = parse_set(args.set, balloon.DEFAULTS)
        if np.shape(balloon.DEFAULTS[name]):
            raise TitopError(f"--grid {name}: a scalar scenario value is needed")
        for value in (grid[0], grid[-1]):
            balloon.checked({**overrides, name: float(value)})

        def system(value):
            return balloon.system({**overrides, name: float(value)})
    elif args.system != "balloon" and _is_parameter(cs, name):       # a unit parameter of the file
        from .titop import overrides as ov
        for value in (grid[0], grid[-1]):
            ov.apply(cs, {name: float(value)})

        def system(value):
            return ov.apply(cs, {name: float(value)}, check=False)
    fam = family(system, name, grid, free=args.trim or None, inputs=args.inputs, outputs=outputs)
    fam.save(out)
    if not args.quiet:
        print(f"{len(grid)} linear models along {name} in [{grid[0]:g}, {grid[-1]:g}], {len(fam.states)} states; "
              "the linear interpolation against the exact model at each mid-point:")
        print(fam.errors_table())
        print(f"wrote {out}")


def cmd_validate(args):
    from .validate import validate
    _number("--stop", args.stop)
    validate(writable_folder("--out", args.out), stop=args.stop, reference_dir=args.references,
             engines=args.engines, msl=args.msl, fmu_kind=args.fmu_kind or DEFAULT_FMU_KIND)


def fmu_kind_option(group, what):
    """``--fmu-kind``: None when not given (an option of the master only: given with the
    in-process engine, it is an error), :data:`DEFAULT_FMU_KIND` then."""
    group.add_argument("--fmu-kind", choices=FMU_KINDS,
                       help=f"{what}: standalone, binaries in C only, or pythonfmu, the reference route through "
                            f"CPython (default {DEFAULT_FMU_KIND}; fmus/README.md)")


def needs(command: str, extra: str, *modules: str) -> None:
    """A one-line error, before any work, when a module that ``command`` needs is not
    installed: it names the missing ones and the extra that brings them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise TitopError(f"titop-fmu {command} needs {', '.join(missing)}: pip install -e \".[{extra}]\"")


def cmd_sweep(args):
    """``titop-fmu sweep {SYSTEM | CAMPAIGN.toml} --vary NAME=DISTRIBUTION ... --out STORE``."""
    needs("sweep", "campaign", *(() if args.workers == 0 else ("dask", "distributed")), "pyarrow", "pandas")
    from . import campaign
    from .campaign.spec import is_campaign_file, read_file
    settings = read_file(args.system) if is_campaign_file(args.system) else {"system": args.system}
    vary = dict(settings.pop("vary", {}))
    for item in args.vary or ():
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise TitopError(f"--vary {item}: expected NAME=DISTRIBUTION, e.g. m_P1=uniform(1.5,2.5)")
        vary[name.strip()] = text.strip()
    settings["vary"] = vary
    settings["set"] = list(settings.get("set", [])) + list(args.set or [])
    for key in ("samples", "seed", "sampling", "engine", "fmu_kind", "stop", "dt", "rtol", "tol", "dt_max", "sequence", "kernel"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.workers is not None and not (0 <= args.workers <= MAX_WORKERS):
        raise TitopError(f"--workers must be between 0 and {MAX_WORKERS}, got {args.workers}")
    if args.report:
        writable_folder("--report", args.report)
    spec = campaign.Sweep(**settings).resolved()
    c = campaign.run(spec, writable_folder("--out", args.out), workers=args.workers, scheduler=args.scheduler,
                     resume=args.resume, progress=not args.quiet)
    counts = c.samples.status.value_counts()
    if not args.quiet:
        print(f"{args.out}: {counts.get('ok', 0)} runs ok, {counts.get('failed', 0)} failed, "
              f"{counts.get('missing', 0)} missing, of {spec.samples}", file=sys.stderr)
    if args.report:
        cmd_report(argparse.Namespace(store=args.out, out=args.report))


def cmd_report(args):
    """``titop-fmu report STORE --out DIR``: a campaign's summaries and figures."""
    needs("report", "campaign", "pyarrow", "pandas")
    from .campaign import open as open_store
    from .campaign.report import report
    out = writable_folder("--out", args.out)
    print(report(open_store(args.store), out))


def animation_options(p):
    p.add_argument("--trace", action="append", metavar="UNIT[.POINT]",
                   help="draw the path of a body point: UNIT.com (the default point), UNIT.p or UNIT.c<i> "
                        "(repeatable; default: the centre of mass of every body without a child body, eight at most)")
    p.add_argument("--title", help="title shown in the view (default: the system, the engine and the horizon)")


def command(sub, name, help, **kw) -> argparse.ArgumentParser:
    """The subcommand ``name``: its ``--help`` opens with its one-line ``help`` as a sentence
    where it has no ``description`` of its own."""
    kw.setdefault("description", help[0].upper() + help[1:] + ".")
    return sub.add_parser(name, help=help, **kw)


def parser() -> argparse.ArgumentParser:
    from . import __version__
    top = argparse.ArgumentParser(
        prog="titop-fmu", description="Multibody systems built one TITOP block per body: simulate them (in "
        "process or as FMI co-simulation units), export them as FMUs, linearize them, run campaigns.",
        epilog="'titop-fmu COMMAND --help' gives a command's options. A first run: 'titop-fmu simulate balloon "
        "--out run.csv', then 'titop-fmu plot run.csv --out run.png'. The guide: README.md and docs/.")
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", required=True)

    p = command(sub, "simulate", help="simulate a system and write a CSV")
    p.add_argument("system", help="'balloon' (the paper's system, docs/balloon-scenario.md), a "
                                  "system file (TOML or JSON, see examples/) or an SSP package (.ssp)")
    p.add_argument("--engine", choices=["inprocess", "fmu"], default="inprocess",
                   help="inprocess: the monolithic run (exact loop solve, no coupling error); "
                        "fmu: the co-simulation master on the TITOP FMUs")
    p.add_argument("--stop", type=float, help=f"stop time [s] (default: the file's, else {DEFAULTS['stop']:g})")
    p.add_argument("--dt", type=float, help=f"output interval [s] (default: the file's, else {DEFAULTS['dt']:g})")
    p.add_argument("--rtol", type=float, help=f"integration tolerance of the in-process run (default "
                                              f"{DEFAULTS['rtol']:g}, at least {RTOL_MIN:g})")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"],
                   help="right-hand side and recorded outputs of the in-process run: c, the C kernel (built "
                        "with the C compiler on first use); numpy, the reference blocks; auto (default): c "
                        "when it covers the system and a compiler is there, else numpy")
    p.add_argument("--out", default="run.csv", help="CSV file to write (default run.csv)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a scenario value, SI units or e.g. theta1_0=170deg (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    g = p.add_argument_group("co-simulation master (--engine fmu)")
    g.add_argument("--tol", type=float,
                   help=f"coupling tolerance (default: the file's, else {DEFAULTS['tol']:g}; at least "
                        f"{TOL_MIN:g}; on the balloon 5e-8 with --dt-max 0.01 gives below 1e-8)")
    g.add_argument("--dt-max", type=float, help=f"largest macro step [s] (default {DEFAULTS['dt_max']:g})")
    g.add_argument("--workers", type=int,
                   help="processes computing the extrapolated runs, this one included (default 2: this "
                        "one and a worker; 0 or 1: all in this one)")
    g.add_argument("--fmu-dir", default=None,
                   help="folder of the TITOP FMUs (titop-fmu build); missing ones are built there "
                        "(default: a cache under ~/.cache/titop-fmu)")
    fmu_kind_option(g, "the TITOP FMUs the master runs")
    g.add_argument("--sequence", help="base steps per macro step of the extrapolated runs (default 1,2,3: order 6)")
    g.add_argument("--inprocess-units", action="store_true",
                   help="the master on the in-process blocks instead of the FMUs (no FMI; implies the master)")
    g.add_argument("--no-stats", dest="stats", action="store_false", help="no statistics summary")
    g = p.add_argument_group("3-D view (titop-fmu animate)")
    g.add_argument("--animate", metavar="VIEW.html", help="also write a 3-D view of the run: one HTML file that "
                                                          "opens offline in a browser (docs/animation.md)")
    animation_options(g)
    p.set_defaults(func=cmd_simulate)

    p = command(sub, "sweep", help="run a campaign (Monte Carlo, sweep) of a system on Dask; store it as Parquet")
    p.add_argument("system", help="'balloon', a system file, or a campaign file (TOML with a [sweep] table: the "
                                  "options below as keys; options given here win)")
    p.add_argument("--vary", action="append", metavar="NAME=DISTRIBUTION",
                   help="a varied quantity (a --set name, e.g. m_P1 or link1.inertia[1,1]) and its distribution: "
                        "uniform(a,b), normal(mu,sigma), truncnormal(mu,sigma,a,b), [v1,v2,..], choice(..), "
                        "linspace(a,b,n); numbers in SI units or with a deg suffix (repeatable)")
    p.add_argument("--samples", type=int, help="number of samples (a grid: its combinations)")
    p.add_argument("--seed", type=int, help="seed of the campaign: sample i depends on it and i alone (default 0)")
    p.add_argument("--sampling", choices=["random", "lhs", "sobol", "grid"],
                   help="random (default): independent draws; lhs: Latin hypercube; sobol: scrambled Sobol "
                        "points; grid: every combination of the listed values")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="a fixed override, as simulate's (repeatable)")
    p.add_argument("--out", required=True, help="the store (a folder of Parquet files)")
    p.add_argument("--resume", action="store_true", help="complete the campaign in --out: run only the samples "
                                                         "it does not hold (the same campaign is required)")
    p.add_argument("--workers", type=int, help="local worker processes (default: one per core; 0: every run in "
                                               "this process, no Dask)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler's workers (e.g. "
                                                          "tcp://host:8786) instead of a local cluster")
    p.add_argument("--engine", choices=["inprocess", "fmu"], help="as simulate's (default inprocess)")
    fmu_kind_option(p, "the TITOP FMUs of --engine fmu")
    p.add_argument("--stop", type=float, help="stop time [s] (default: the system file's, else 20)")
    p.add_argument("--dt", type=float, help="output interval [s] (default: the system file's, else 0.01)")
    p.add_argument("--rtol", type=float, help="in-process integration tolerance (default 1e-12)")
    p.add_argument("--kernel", choices=["auto", "c", "numpy"], help="as simulate's (default auto)")
    p.add_argument("--tol", type=float, help="coupling tolerance of the master (--engine fmu)")
    p.add_argument("--dt-max", type=float, help="largest macro step of the master [s] (--engine fmu)")
    p.add_argument("--sequence", help="base steps per macro step of the master (--engine fmu; default 1,2,3)")
    p.add_argument("--report", metavar="DIR", help="also write the campaign's report there (see titop-fmu report)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_sweep)

    p = command(sub, "report", help="summaries and figures of a campaign store: envelopes, worst samples, "
                                    "rank correlations")
    p.add_argument("store", help="the campaign's store (titop-fmu sweep --out)")
    p.add_argument("--out", default="campaign-report", help="report folder (default campaign-report/)")
    p.set_defaults(func=cmd_report)

    p = command(sub, "build", help="build the TITOP FMUs")
    p.add_argument("--out", default="fmus", help="output folder (default fmus/)")
    p.add_argument("--children", type=int, default=2,
                   help=f"number of child ports (default 2, at most {MAX_CHILDREN})")
    p.add_argument("--all-counts", action="store_true", default=None,
                   help="build every count from 0 to --children (the default when --children is not given)")
    p.add_argument("--standalone", action="store_true",
                   help="binaries in C only (no Python at run time), for linux64 and, with the MinGW-w64 "
                        "cross compiler, win64 (fmus/README.md)")
    p.set_defaults(func=cmd_build)

    p = command(sub, "export", help="write a system as one FMU (the loop solved inside) for any FMI host, "
                                    "or as an SSP package of its block FMUs")
    p.add_argument("system", help="'balloon' or a system file (TOML or JSON) of TITOP units")
    p.add_argument("--out", help="the FMU to write, NAME.fmu (model identifier NAME)")
    p.add_argument("--ssp", help="the SSP 1.0 package to write, NAME.ssp (block FMUs, connections, parameters)")
    p.add_argument("--fmu-dir", default=None, help="folder of the block FMUs for --ssp (default: the cache)")
    fmu_kind_option(p, "the FMU of --out (standalone: co-simulation and Model Exchange; linux64, and win64 where "
                       "MinGW-w64 is installed) and the block FMUs of --ssp")
    p.add_argument("--standalone", action="store_true", help="the same as --fmu-kind standalone")
    p.set_defaults(func=cmd_export)

    p = command(
        sub, "animate", help="write a 3-D view of a run: one HTML file that opens offline in a browser",
        description="Write a 3-D view of a system's motion: bodies, joints and frames, a time slider, "
                    "play/pause, speed and loop; drag to orbit, wheel to zoom. One HTML file, nothing "
                    "fetched: it opens offline. With RUN.csv, the CSV is shown as it is: it must hold the "
                    "outputs that place every body (a base's p.m[13..18] or any body's c<i>.m[13..18], and "
                    "joint.q[3] of the joints below; the balloon's columns x..theta2), as written by "
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
    animation_options(p)
    p.set_defaults(func=cmd_animate)

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
    p.set_defaults(func=cmd_plot)

    p = command(sub, "models", help="list the TITOP models (block kinds), or one model's ports and parameters")
    p.add_argument("name", nargs="?", help="a model identifier, e.g. revolute_c1 (default: list them all)")
    p.add_argument("--markdown", action="store_true",
                   help="every model's ports and parameters as Markdown tables (docs/system-files.md)")
    p.set_defaults(func=cmd_models)



    p = command(sub, "linearize", help="the linear model (A, B, C, D with names, and its modes) at the initial "
                                       "state or at an equilibrium; writes .mat or .npz")
    p.add_argument("system", help="'balloon' (with --set) or a system file (TOML or JSON, see examples/)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a value as for simulate: a balloon scenario value, or a system file's unit "
                        "parameter or free input, e.g. link1.mass=1.2 (repeatable)")
    p.add_argument("--trim", nargs="*", metavar="FREE",
                   help="first find an equilibrium near the initial state; FREE: the unknowns (a state such as "
                        "slider.q, a base's v, w, r or attitude, an input such as balloon.ext.w[2]); none given: "
                        "every joint position and base attitude, the neutral directions held")
    p.add_argument("--inputs", nargs="+", metavar="NAME",
                   help="the inputs (columns of B and D): scalars or ports, e.g. balloon.ext.w slider.joint.tau "
                        "(default: every free input)")
    p.add_argument("--outputs", nargs="*", metavar="NAME",
                   help="the outputs (rows of C and D): block outputs, e.g. pendulum1.joint.q[3] balloon.c1.m "
                        "(default: the system's record list)")
    p.add_argument("--grid", metavar="NAME=START:STOP:N",
                   help="a family of models (LPV) along a scheduling parameter: a balloon scenario value "
                        "(m_P2=1:5:5), a unit parameter of a system file (link1.mass=0.5:2:4), a state held "
                        "(pendulum1.q=0:20:5deg) or an input; needs --trim; also NAME=V1,V2,...")
    p.add_argument("--out", required=True, help="the file to write: FILE.mat (MATLAB) or FILE.npz")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    p.set_defaults(func=cmd_linearize)

    p = command(sub, "validate", help="compare the balloon runs with every reference; write a report")
    p.add_argument("--out", default="validation-report", help="report folder (default validation-report/)")
    p.add_argument("--stop", type=float, default=20.0, help="horizon [s] (default 20)")
    p.add_argument("--references", default=None, help="folder of reference CSVs (default validation/reference)")
    p.add_argument("--engines", nargs="+", default=["inprocess", "fmu"], choices=["inprocess", "fmu"],
                   help="engines to run (default: both; the first one's run is drawn)")
    p.add_argument("--msl", default=None, metavar="DIR",
                   help="folder holding the Modelica Standard Library's Modelica/ (default: MODELICAPATH)")
    fmu_kind_option(p, "the FMUs of the engine fmu")
    p.set_defaults(func=cmd_validate)
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command == "build" and args.all_counts is None:
        args.all_counts = "--children" not in (argv if argv is not None else sys.argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", ParameterWarning)
            args.func(args)
    except Interrupted as e:
        print(f"titop-fmu: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("titop-fmu: interrupted; nothing written", file=sys.stderr)
        return 130
    except TitopError as e:
        print(f"titop-fmu: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:                            # a file or folder the system refuses, as it says
        print(f"titop-fmu: error: {f'{e.filename}: ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
