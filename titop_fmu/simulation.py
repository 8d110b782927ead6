"""One simulation of a system as the command line names it (``balloon``, a system file, an
SSP package), with overrides by name, on either engine: what ``simulate`` writes and what
every run of a ``sweep`` computes, by the same code.

:class:`Target` holds what does not change from run to run (the file read, the names that
can be set); :meth:`Target.run` makes one run. The option defaults and checks shared by the
commands are here too (:func:`resolve_options`).
"""

from __future__ import annotations

import math
from pathlib import Path

from .cosim import Options
from .errors import ParameterError, TitopError, did_you_mean
from .io import parse_set
from .scenarios import balloon
from .titop.units import DEFAULT_FMU_KIND

#: defaults of ``simulate`` options (a system file's [simulation] table replaces those not given)
DEFAULTS = dict(stop=20.0, dt=0.01, rtol=1e-12, tol=Options.tol, dt_max=Options.h_max, workers=1,
                sequence="1,2,3,4")
#: the smallest tolerances that can be reached: the in-process integrator works in double
#: precision; the master's coupling iteration has a noise floor (units integrating at >= 1e-13,
#: loop residuals at 1e-13) that tolerances below 1e-10 do not clear
RTOL_MIN, TOL_MIN = 1e-14, 1e-10
#: most output rows of one run, most child ports of a built FMU, most processes
MAX_ROWS, MAX_WORKERS = 10_000_000, 64
ENGINES = ("inprocess", "fmu")


def _number(option, value, lo=0.0, hi=math.inf, lo_open=True):
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        raise TitopError(f"{option} must be a finite number, got {value}")
    if value < lo or (lo_open and value == lo) or value > hi:
        bound = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise TitopError(f"{option} must be {bound}" + (f" and <= {hi:g}" if math.isfinite(hi) else "")
                         + f", got {value:g}")
    return float(value)


def _sequence(text) -> tuple:
    try:
        seq = tuple(int(x) for x in str(text).replace(" ", "").split(","))
    except ValueError:
        raise TitopError(f"--sequence: expected comma-separated integers, got {text!r}") from None
    if not seq or any(n <= 0 for n in seq) or list(seq) != sorted(set(seq)) or len(seq) > 6:
        raise TitopError(f"--sequence: expected up to 6 increasing positive integers, got {text}")
    return seq


def resolve_options(args, simulation: dict):
    """Command-line options given explicitly win; then the system file's [simulation] values;
    then the defaults. Every value is checked (one-line error). ``args``: any object with the
    attributes ``stop, dt, rtol, tol, dt_max, workers, sequence`` (None: not given)."""
    for name, key in (("stop", "stop"), ("dt", "output_interval"), ("tol", "tolerance")):
        if getattr(args, name) is None and key in simulation:
            setattr(args, name, simulation[key])
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.stop = _number("--stop", args.stop)
    args.dt = _number("--dt", args.dt, hi=args.stop)
    if args.stop / args.dt > MAX_ROWS:
        raise TitopError(f"--stop / --dt = {args.stop / args.dt:.3g} output rows; at most {MAX_ROWS:g}")
    args.rtol = _number("--rtol", args.rtol, lo=RTOL_MIN, hi=0.1, lo_open=False)
    args.tol = _number("--tol", args.tol, lo=TOL_MIN, hi=1.0, lo_open=False)
    args.dt_max = _number("--dt-max", args.dt_max)
    if not (0 <= args.workers <= MAX_WORKERS):
        raise TitopError(f"--workers must be between 0 and {MAX_WORKERS}, got {args.workers}")
    args.sequence = _sequence(args.sequence)


def master_options(args, **kw) -> Options:
    """The master's :class:`Options` from the checked ``simulate`` arguments."""
    return Options(tol=args.tol, h_max=args.dt_max, sequence=args.sequence, workers=args.workers, **kw)


def read_file(path):
    """The :class:`~titop_fmu.cosim.systemfile.SystemFile` at ``path``, every value written with
    its unit converted to the unit its parameter or input is declared in
    (:func:`~titop_fmu.titop.units.declared_unit`), its dimension checked; a file that is not
    UTF-8 text is one line (:func:`~titop_fmu.io.utf8_text`); its flexible bodies' tables
    expanded (:func:`~titop_fmu.titop.flexible.expand`)."""
    from .cosim import systemfile
    from .io import utf8_text
    from .titop.flexible import expand
    from .titop.units import declared_unit
    utf8_text(path)
    return systemfile.read(path, declared_unit, expand)


def balloon_unit(name: str):
    """The SI unit of the balloon's scenario value ``name`` (``theta1_0``, ``I_B[1,2]``)."""
    return balloon.PARAMETER_UNITS.get(name.partition("[")[0])


def set_values(items, system=None) -> dict:
    """``--set NAME=VALUE`` items read for the balloon's scenario (``system`` None) or for a
    system (its units' parameters and free inputs, :mod:`titop_fmu.titop.overrides`), values
    with units in the units declared."""
    if system is None:
        return parse_set(items, balloon.DEFAULTS, balloon_unit)
    from .titop import overrides as ov
    return parse_set(items, ov.settable(system), ov.unit_of(system))


class Target:
    """The system ``name`` names: ``"balloon"`` (the paper's, its scenario values settable
    by name) or a system file / SSP package (its units' parameters and free inputs settable,
    :mod:`titop_fmu.titop.overrides`). Read once; every :meth:`run` starts from it."""

    def __init__(self, name: str, recorded: bool = True):
        """``recorded``: a system file must have a record list (False: a run that writes only
        its 3-D view needs none)."""
        from .cosim import ssp
        self.name = str(name)
        self._settable = None
        if self.name == "balloon":
            self.file, self.simulation, self.header = None, {}, list(balloon.COLUMNS)
            self.flexible = {}
            self._settable = balloon.DEFAULTS
            return
        path = Path(name)
        if not path.is_file():
            raise TitopError(f"unknown system {name!r}: not 'balloon'{did_you_mean(name, ['balloon'])} "
                             "and no such system file")
        from .titop.checks import check
        self.ssp = path.suffix == ".ssp"
        self.file = ssp.read(path) if self.ssp else read_file(path)
        from .titop import flexible
        self.flexible = {} if self.ssp else flexible.tables(path)      # its flexible tables, as written
        if recorded and not self.file.system.recorded:
            raise TitopError(f"{path}: nothing to write: add record = [\"unit.output\", ...]")
        self.simulation = self.file.simulation
        self.header = ["t"] + check(self.file.system, stated=not self.ssp).labels

    @property
    def settable(self) -> dict:
        """``{name: current value}`` of everything ``--set`` can change."""
        if self._settable is None:
            from .titop import flexible, overrides
            self._settable = {**overrides.settable(self.file.system), **flexible.settable(self.flexible)}
        return self._settable

    def unit_of(self, name: str):
        """The unit the settable scalar ``name`` is declared in (None: not known)."""
        if self.file is None:
            return balloon_unit(name)
        if name.partition(".")[0] in self.flexible and ".flexible." in name:
            return None                                   # a flexible table's values: SI, as written
        from .titop import overrides
        return overrides.unit_of(self.file.system)(name)

    def overrides(self, items) -> dict:
        """``--set NAME=VALUE`` items, checked (one line naming the bad name or value)."""
        if not items:
            return self.checked({})
        return self.checked(parse_set(items, self.settable, self.unit_of))

    def checked(self, overrides: dict) -> dict:
        """``overrides`` once the system they make is valid (:class:`ParameterError` naming the value)."""
        if self.file is None:
            return balloon.checked(overrides)
        self.system(overrides)
        return overrides

    def system(self, overrides=None, check=True):
        """The co-simulation system with ``overrides`` (``check``: its TITOP units' values checked)."""
        if self.file is None:
            return balloon.system(overrides)
        if not overrides:
            return self.file.system
        from .titop import flexible, overrides as ov
        for name in overrides:
            if name not in self.settable:
                raise ParameterError(name, "not a settable value of this system")
        system, overrides = flexible.apply(self.file.system, self.flexible, overrides, self.file.path.parent,
                                           str(self.file.path))
        return ov.apply(system, overrides, check)

    def observed(self, overrides=None):
        """The master's options that make it write :attr:`header` (None: the recorded outputs)."""
        return balloon.observed(overrides) if self.file is None else None

    def run(self, overrides, args, engine="inprocess", units=None, progress=False):
        """One run: ``(t, values, info)`` with the columns :attr:`header` (``t`` first) as
        ``simulate`` writes them (``overrides`` as :meth:`checked` returns them: an invalid value
        may stop the run with an error naming a unit's parameter); ``args`` has the resolved options (:func:`resolve_options`),
        ``args.kernel`` for the in-process engine; ``units`` (the master's unit factory, default
        the TITOP FMUs of ``args.fmu_dir`` and ``args.fmu_kind``) for ``engine="fmu"``. ``info``: the trajectory
        (in-process) or the master's result."""
        if engine == "fmu":
            from .titop import TitopUnits
            from .titop.records import Records
            from .titop.checks import wired
            units = units or TitopUnits("fmu", getattr(args, "fmu_dir", None),
                                        getattr(args, "fmu_kind", None) or DEFAULT_FMU_KIND)
            records = None if self.file is None else Records(self.system(overrides, check=False))
            system = balloon.system(overrides) if records is None else wired(records.raw_system())[0]
            res, types = run_master(system, units, args, self.observed(overrides), progress)
            values = res.values if records is None else records.finish(res.values, res.labels, types)[0]
            return res.t, values, res
        from .titop import monolithic
        kernel = getattr(args, "kernel", None) or "auto"
        if self.file is None:
            s = balloon.build(overrides)
            tr = s.simulate(args.stop, args.dt, rtol=args.rtol, atol=args.rtol, progress=progress, kernel=kernel)
            return tr.t, balloon.columns(s, tr.y), tr
        tr, values = monolithic.run(self.system(overrides, check=False), args.stop, args.dt, args.rtol, args.rtol,
                                    progress=progress, kernel=kernel)
        return tr.t, values, tr


def run_master(system, units, args, observe=None, progress=False, stop_requested=None) -> tuple:
    """The co-simulation master on ``system`` (its units made by ``units``, the options from the
    resolved ``args``, ``observe``: more :class:`Options`): ``(result, {unit: UnitType})``, the
    units terminated whatever happens. A Ctrl-C, or ``stop_requested()`` at the end of a macro
    step, ends the run with :class:`KeyboardInterrupt`; its ``t`` is the time reached."""
    import numpy as np
    from .cosim import build
    master = build(system, units, master_options(args, **(observe or {})))
    try:
        # overflows are no warnings: the master stops on what is not finite, said in one line
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = master.simulate(args.stop, args.dt, progress=progress, stop_requested=stop_requested)
    except KeyboardInterrupt as e:
        e.t = master.t
        raise
    finally:
        master.terminate()
    return res, dict(zip(master.st.unit_names, master.st.types))
