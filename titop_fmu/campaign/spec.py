"""What a campaign is (:class:`Sweep`): the system, the quantities varied and how, the fixed
overrides, the engine and its settings; read from the command line or from a campaign file.

A campaign file is a TOML file with a ``[sweep]`` table, the command line's options as keys
(paths relative to the file)::

    [sweep]
    system = "balloon"                 # or "../examples/spacecraft.toml"
    samples = 200
    seed = 1
    sampling = "random"                # random | lhs | sobol | grid
    engine = "inprocess"               # inprocess | fmu
    fmu_kind = "standalone"            # standalone | pythonfmu (engine fmu only)
    stop = 20.0                        # also dt, rtol, tol, dt_max, sequence, kernel
    set = ["k=80"]                     # fixed overrides, as --set

    [sweep.vary]                       # in order
    m_P1 = "uniform(1.5, 2.5)"
    theta1_0 = "normal(170deg, 2deg)"

``titop-fmu sweep FILE.toml --out STORE`` runs it; options given on the command line win.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..io import utf8_text
from ..simulation import ENGINES, Target, resolve_options
from ..titop.units import DEFAULT_FMU_KIND, FMU_KINDS
from .distributions import SAMPLINGS, SweepError, design, grid_size, parse

#: most samples of one campaign
MAX_SAMPLES = 10_000_000
#: the keys of a [sweep] table: the settings of :class:`Sweep`
FILE_KEYS = ("system", "vary", "samples", "seed", "sampling", "set", "engine", "fmu_kind", "stop", "dt", "rtol",
             "tol", "dt_max", "sequence", "kernel")


@dataclass
class Sweep:
    """A campaign: ``vary`` maps names (as ``--set`` takes them: ``m_P1``, ``link1.inertia[1,1]``)
    to distributions (:mod:`.distributions`); ``set`` holds fixed ``NAME=VALUE`` overrides.
    Unset simulation settings take the system file's, then ``simulate``'s defaults
    (:meth:`resolved`)."""

    system: str
    vary: dict = field(default_factory=dict)
    samples: int | None = None
    seed: int = 0
    sampling: str = "random"
    set: list = field(default_factory=list)
    engine: str = "inprocess"
    fmu_kind: str | None = None
    stop: float | None = None
    dt: float | None = None
    rtol: float | None = None
    tol: float | None = None
    dt_max: float | None = None
    sequence: str | None = None
    kernel: str = "auto"

    def resolved(self) -> "Sweep":
        """Every setting checked and filled in (one-line errors): the system found (a file's
        path made absolute), names and distributions read, the number of samples known."""
        s = dataclasses.replace(self, vary=dict(self.vary), set=list(self.set))
        if s.system != "balloon":
            s.system = str(Path(s.system).resolve()) if Path(s.system).is_file() else s.system
        target = Target(s.system)
        if s.engine not in ENGINES:
            raise SweepError(f"--engine must be one of {', '.join(ENGINES)}, got {s.engine!r}")
        if getattr(target, "ssp", False) and s.engine != "fmu":
            raise SweepError(f"{s.system}: an SSP package runs through its FMUs: add --engine fmu")
        if s.engine != "fmu" and s.fmu_kind is not None:
            raise SweepError("--fmu-kind applies to the co-simulation master (--engine fmu)")
        if s.engine == "fmu":
            s.fmu_kind = s.fmu_kind or DEFAULT_FMU_KIND
            if s.fmu_kind not in FMU_KINDS:
                raise SweepError(f"--fmu-kind must be one of {', '.join(FMU_KINDS)}, got {s.fmu_kind!r}")
        if s.sampling not in SAMPLINGS:
            raise SweepError(f"--sampling must be one of {', '.join(SAMPLINGS)}, got {s.sampling!r}")
        if s.kernel not in ("auto", "c", "numpy"):
            raise SweepError(f"--kernel must be auto, c or numpy, got {s.kernel!r}")
        if not s.vary:
            raise SweepError("nothing varies: give --vary NAME=DISTRIBUTION")
        target.overrides(s.set)
        both = [n for n in (item.partition("=")[0].strip() for item in s.set) if n in s.vary]
        if both:
            raise SweepError(f"{both[0]} is both varied (--vary) and fixed (--set): one or the other")
        dists = self.distributions(s.vary, target.unit_of)
        for name in s.vary:
            value = _element(target.settable, name)
            if np.ndim(value):
                raise SweepError(f"--vary {name}: a vector or matrix; vary one element, e.g. {name}[1]")
        if s.sampling == "grid":
            bad = [n for n, d in zip(s.vary, dists) if d.values is None]
            if bad:
                raise SweepError(f"--sampling grid takes listed values ([..], choice, linspace); {bad[0]} is "
                                 f"{s.vary[bad[0]]}")
            n = grid_size(dists)
            if s.samples is not None and s.samples != n:
                raise SweepError(f"--samples {s.samples}: the grid has {n} combinations")
            s.samples = n
        if s.samples is None:
            raise SweepError("how many samples? give --samples N")
        if not isinstance(s.samples, int) or isinstance(s.samples, bool) or not 1 <= s.samples <= MAX_SAMPLES:
            raise SweepError(f"--samples must be a whole number from 1 to {MAX_SAMPLES}, got {s.samples}")
        if not isinstance(s.seed, int) or isinstance(s.seed, bool) or s.seed < 0:
            raise SweepError(f"--seed must be a whole number >= 0, got {s.seed}")
        opts = SimpleNamespace(stop=s.stop, dt=s.dt, rtol=s.rtol, tol=s.tol, dt_max=s.dt_max, workers=0,
                               sequence=s.sequence)
        resolve_options(opts, target.simulation)
        s.stop, s.dt, s.rtol, s.tol, s.dt_max = opts.stop, opts.dt, opts.rtol, opts.tol, opts.dt_max
        s.sequence = ",".join(str(k) for k in opts.sequence)
        return s

    @staticmethod
    def distributions(vary: dict, unit_of=None) -> list:
        """The distributions of ``vary``; ``unit_of(name)``: the unit each value is declared in
        (its values with units checked against it; SI without it)."""
        return [parse(name, text, unit_of(name) if unit_of else None) for name, text in vary.items()]

    def design(self) -> np.ndarray:
        """``(samples, len(vary))``: the varied values of every sample, SI units."""
        return design(self.distributions(self.vary), self.samples, self.seed, self.sampling)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in FILE_KEYS}

    def fingerprint(self) -> str:
        """What identifies the campaign's runs: its settings and the system file's bytes."""
        h = hashlib.sha256(json.dumps(self.to_dict()).encode())
        if self.system != "balloon":
            h.update(Path(self.system).read_bytes())
        return h.hexdigest()


def _element(settable, name):
    from ..io import resolve
    from ..errors import ParameterError
    try:
        base, index = resolve(name, settable)
    except ParameterError as e:
        raise SweepError(f"--vary {e.parameter}: {e.detail}") from None
    value = settable[base]
    return value if index is None else np.asarray(value)[index]


def read_file(path) -> dict:
    """The settings of a campaign file's ``[sweep]`` table (a system path made relative to the
    current folder)."""
    from ..cosim.systemfile import _load
    path = Path(path)
    utf8_text(path)
    d = _load(path)
    table = d.get("sweep")
    if not isinstance(table, dict):
        raise SweepError(f"{path}: no [sweep] table")
    unknown = set(d) - {"sweep"} or set(table) - set(FILE_KEYS)
    if unknown:
        raise SweepError(f"{path}: unknown key(s) {sorted(unknown)}; a campaign file has one [sweep] table with "
                         f"{', '.join(FILE_KEYS)}")
    if "system" not in table:
        raise SweepError(f"{path}: [sweep] needs system = \"balloon\" or a system file")
    out = dict(table)
    if out["system"] != "balloon":
        out["system"] = str(path.parent / out["system"])
    if not isinstance(out.get("vary", {}), dict):
        raise SweepError(f"{path}: [sweep.vary] is a table of NAME = \"DISTRIBUTION\"")
    if not isinstance(out.get("set", []), list):
        raise SweepError(f"{path}: set = [\"NAME=VALUE\", ...]")
    return out


def is_campaign_file(path) -> bool:
    """A TOML file with a ``[sweep]`` table (a system file has none)."""
    p = Path(path)
    if p.suffix.lower() != ".toml" or not p.is_file():
        return False
    from ..cosim.systemfile import _load
    from ..errors import ConnectionError_
    utf8_text(p)                                      # else a one-line error here
    try:
        return "sweep" in _load(p)
    except ConnectionError_:
        return False
