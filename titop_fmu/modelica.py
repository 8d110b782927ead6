"""A Modelica engine: compile and simulate a ``Modelica.Mechanics.MultiBody`` model
(an independent engine the TITOP blocks are validated against).

FMI-free; imports only numpy and the standard library, the compiler lazily.

* The Modelica Standard Library (MSL) is found the Modelica way: an explicit
  folder (``msl=``, ``--msl DIR``) or else the entries of the ``MODELICAPATH``
  environment variable, the first one holding a ``Modelica/`` package.
* The compiler: ``rumoca`` (PyPI, ``pip install -e ".[modelica]"``) when
  importable, else OpenModelica's ``omc`` when on ``PATH`` (or in
  ``$OPENMODELICAHOME/bin``).
* :func:`unavailable_reason` says in one line why nothing can be run (no
  compiler, no MSL), so that callers can say it and skip.
* :func:`simulate` compiles a model file and returns its outputs on the grid
  ``0, dt, ..., stop`` with the compile and simulation wall times.

Solver: rumoca's ``"rk-like"`` (explicit, error-controlled) at
``rtol = atol = 1e-12``. Solver and tolerance matter; the balloon over 20 s
against the in-process run (max over the nine columns): rk-like 1e-12
1.5e-11, rk-like 1e-10 7.1e-10, rk-like 1e-8 2.3e-7, rumoca's default
solver (``"auto"``, the same result as ``"bdf"``) at 1e-10 3.8e-7. With
``omc`` the solver is DASSL at ``tolerance = rtol``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import TitopError

MODELICAPATH = "MODELICAPATH"
SOLVER = "rk-like"
RTOL = ATOL = 1e-12


class ModelicaError(TitopError, RuntimeError):
    """A Modelica model could not be compiled or simulated, or its result is unusable."""


# --------------------------------------------------------------------------
# Finding the MSL and a compiler
# --------------------------------------------------------------------------

def _holds_msl(folder: Path) -> bool:
    return (folder / "Modelica" / "package.mo").is_file()


def find_msl(msl=None) -> Path | None:
    """The folder holding the ``Modelica/`` package (a ``MODELICAPATH`` entry).

    ``msl``: an explicit folder (the one holding ``Modelica/``, or ``Modelica/``
    itself); a folder named explicitly that holds no MSL is an error
    (``ValueError``). Without it, the ``MODELICAPATH`` entries are searched in
    order; ``None`` when none holds ``Modelica/``.
    """
    if msl is not None:
        d = Path(msl).expanduser()
        if _holds_msl(d):
            return d.resolve()
        if d.name == "Modelica" and (d / "package.mo").is_file():
            return d.parent.resolve()
        raise ValueError(f"--msl {msl}: no Modelica Standard Library there "
                         f"(expected {Path(msl) / 'Modelica' / 'package.mo'})")
    for entry in os.environ.get(MODELICAPATH, "").split(os.pathsep):
        if entry and _holds_msl(Path(entry).expanduser()):
            return Path(entry).expanduser().resolve()
    return None


def msl_version(root: Path) -> str:
    """The ``version`` annotation of ``Modelica/package.mo`` (e.g. ``"4.1.0"``), or ``"unknown"``."""
    try:
        text = (Path(root) / "Modelica" / "package.mo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    m = re.search(r'\bversion\s*=\s*"([^"]+)"', text)
    return m.group(1) if m else "unknown"


def find_omc() -> str | None:
    """Path of OpenModelica's ``omc`` (on PATH or in ``$OPENMODELICAHOME/bin``), or None."""
    found = shutil.which("omc")
    if found:
        return found
    home = os.environ.get("OPENMODELICAHOME")
    if home:
        for name in ("omc", "omc.exe"):
            candidate = Path(home) / "bin" / name
            if candidate.is_file():
                return str(candidate)
    return None


@dataclass(frozen=True)
class Compiler:
    """A Modelica compiler: ``name`` ("rumoca" or "omc"), its ``version``, and ``path`` for omc."""
    name: str
    version: str
    path: str | None = None

    def __str__(self):
        return f"{self.name} {self.version}"


def find_compiler() -> Compiler | None:
    """rumoca if importable (with its version), else ``omc``; None when there is neither."""
    try:
        import rumoca
    except ImportError:
        rumoca = None
    if rumoca is not None:
        v = getattr(rumoca, "version", None)
        v = v() if callable(v) else v
        return Compiler("rumoca", str(v or "unknown"))
    omc = find_omc()
    if omc is not None:
        try:
            out = subprocess.run([omc, "--version"], capture_output=True, text=True, timeout=60).stdout
            version = out.strip().splitlines()[0] if out.strip() else "unknown"
        except (OSError, subprocess.SubprocessError):
            version = "unknown"
        return Compiler("omc", version, omc)
    return None


def cli_unavailable_reason(msl=None) -> str | None:
    """:func:`unavailable_reason` for a command line: a bad ``--msl`` folder is a reason too."""
    try:
        return unavailable_reason(msl)
    except ValueError as e:
        return str(e)


def unavailable_reason(msl=None) -> str | None:
    """One line saying why no Modelica model can be run here, or None when one can.

    An explicit ``msl`` folder without the MSL raises ``ValueError`` (the user
    named it); an empty ``MODELICAPATH`` is a reason.
    """
    return _reason(find_msl(msl), find_compiler())


def _reason(root, compiler) -> str | None:
    """:func:`unavailable_reason` for the MSL folder ``root`` and the ``compiler`` found."""
    if compiler is None:
        return ('no Modelica compiler: pip install -e ".[modelica]" (rumoca) '
                "or put OpenModelica's omc on PATH")
    if root is None and compiler.name == "rumoca":
        return (f"no Modelica Standard Library: set {MODELICAPATH} to a folder holding "
                "Modelica/ (MSL 4.x) or pass --msl DIR")
    return None


# --------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------

@dataclass
class Result:
    """Outputs of a Modelica run on the grid ``t``: ``values[:, j]`` is ``names[j]``."""
    t: np.ndarray
    names: tuple
    values: np.ndarray
    info: dict = field(default_factory=dict)

    def __getitem__(self, name):
        return self.values[:, self.names.index(name)]


def _grid(stop, dt):
    n = int(round(stop / dt))
    if n < 1 or abs(n * dt - stop) > 1e-9 * max(1.0, stop):
        raise ValueError(f"stop = {stop} is not a positive multiple of dt = {dt}")
    return n, np.arange(n + 1) * dt


def simulate(model_file, outputs, stop, dt=0.01, *, model=None, msl=None, solver=SOLVER,
             rtol=RTOL, atol=ATOL) -> Result:
    """Compile ``model_file`` (model ``model``, default the file's stem) against the MSL and
    simulate it from 0 to ``stop``; the ``outputs`` (variable names) every ``dt``.

    ``info`` records the compiler and its version, the MSL version, solver,
    tolerances and the wall times ``compile_s`` and ``simulate_s``. Raises
    :class:`ModelicaError` when there is no compiler or MSL (with
    :func:`unavailable_reason`), when compiling or simulating fails, or when an
    output is missing or the run stops early.
    """
    model_file = Path(model_file)
    if not model_file.is_file():
        raise ModelicaError(f"no Modelica file {model_file}")
    model = model or model_file.stem
    outputs = tuple(outputs)
    root, compiler = find_msl(msl), find_compiler()
    reason = _reason(root, compiler)
    if reason:
        raise ModelicaError(reason)
    n, grid = _grid(stop, dt)
    info = {"model": model, "file": model_file.name, "compiler": compiler.name,
            "compiler_version": compiler.version,
            "msl_version": msl_version(root) if root is not None else "compiler's default",
            "solver": solver if compiler.name == "rumoca" else "dassl",
            "rtol": rtol, "atol": atol if compiler.name == "rumoca" else rtol,
            "t_stop": float(stop), "dt": float(dt)}
    if compiler.name == "rumoca":
        t, values, times = _simulate_rumoca(model_file, model, outputs, stop, dt, root, solver, rtol, atol)
    else:
        t, values, times = _simulate_omc(compiler.path, model_file, model, outputs, stop, dt, root, rtol)
    info.update(times)
    t = np.asarray(t, dtype=float)
    if len(t) < n + 1 or t[-1] < stop - 1e-9:
        raise ModelicaError(f"{model}: the simulation stopped at t = {t[-1] if len(t) else 0:g} s "
                            f"before {stop:g} s")
    idx = np.searchsorted(t, grid - 1e-9)        # the sample on each grid time (the first at an event)
    idx = np.minimum(idx, len(t) - 1)
    if np.max(np.abs(t[idx] - grid)) > 1e-9:
        raise ModelicaError(f"{model}: the result is not sampled on the {dt:g} s grid")
    return Result(grid, outputs, np.asarray(values, dtype=float)[idx], info)


def _simulate_rumoca(model_file, model, outputs, stop, dt, root, solver, rtol, atol):
    import rumoca
    t0 = time.perf_counter()
    try:
        session = rumoca.Session(roots=[str(root)])
        m = session.load(str(model_file), model=model)
    except rumoca.RumocaError as e:
        raise ModelicaError(f"rumoca could not compile {model} ({model_file.name}): {e}") from None
    t1 = time.perf_counter()
    try:
        r = m.simulate((0.0, float(stop)),
                       config=rumoca.SimConfig(solver=solver, rtol=rtol, atol=atol, dt=dt))
    except rumoca.RumocaError as e:
        raise ModelicaError(f"rumoca could not simulate {model}: {e}") from None
    t2 = time.perf_counter()
    missing = [o for o in outputs if o not in r]
    if missing:
        raise ModelicaError(f"{model} has no variable(s) {missing}")
    values = np.column_stack([np.asarray(r[o], dtype=float) for o in outputs])
    return np.asarray(r.time), values, {"compile_s": round(t1 - t0, 3), "simulate_s": round(t2 - t1, 3)}


def mo_string(text):
    """Modelica string literal (paths use forward slashes, also on Windows)."""
    return '"' + str(text).replace("\\", "/").replace('"', '\\"') + '"'


def _simulate_omc(omc, model_file, model, outputs, stop, dt, root, rtol):
    """OpenModelica: a generated ``.mos`` script, DASSL, CSV result (as validation/run_openmodelica.py)."""
    n = int(round(stop / dt))
    load_msl = (f"loadFile({mo_string((root / 'Modelica' / 'package.mo').as_posix())})"
                if root is not None else "loadModel(Modelica)")
    with tempfile.TemporaryDirectory(prefix="titop_omc_") as work:
        script = Path(work) / "run.mos"
        script.write_text("\n".join([
            f"{load_msl};", "getErrorString();",
            f"loadFile({mo_string(Path(model_file).resolve().as_posix())});", "getErrorString();",
            f"simulate({model}, startTime=0.0, stopTime={float(stop)!r}, numberOfIntervals={n}, "
            f'tolerance={rtol!r}, method="dassl", outputFormat="csv", '
            f'variableFilter="{"|".join(outputs)}", fileNamePrefix={mo_string(model)});',
            "getErrorString();"]) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        proc = subprocess.run([omc, script.name], cwd=work, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        result = Path(work) / f"{model}_res.csv"
        if proc.returncode != 0 or not result.is_file():
            raise ModelicaError(f"omc failed on {model} (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        with open(result, encoding="utf-8") as f:
            header = [h.strip().strip('"') for h in f.readline().strip().rstrip(",").split(",")]
        data = np.loadtxt(result, delimiter=",", skiprows=1, ndmin=2,
                          usecols=range(len(header)))
    missing = [o for o in ("time",) + tuple(outputs) if o not in header]
    if missing:
        raise ModelicaError(f"{model}: omc result lacks {missing}")
    values = data[:, [header.index(o) for o in outputs]]
    # omc compiles and simulates in one call: the total is reported as compile time.
    return data[:, header.index("time")], values, {"compile_s": round(wall, 3), "simulate_s": 0.0}
