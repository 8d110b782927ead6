"""``titop-fmu validate``: the balloon system against every available reference,
with a report a reviewer can read (the paper's Figure 17, with numbers).

Runs the engines (in-process monolithic, and the FMU co-simulation when
available), loads every committed reference ``validation/reference/*.csv``
(independent engines, OpenModelica when a user has produced it), and writes to
the output folder:

* ``<output>.png`` per output: the response and, on a log scale, the error of
  each run against each reference;
* ``report.md``: a table of maximum errors on [0, 5], [0, 10], [0, 20] s, the
  attitude error as the angle of the relative rotation (so Euler-angle wrapping
  does not matter), and the invariant checks (centre of mass, energy).
"""

from __future__ import annotations

import importlib.util
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import invariants, modelica
from .cosim.numerics import wrap
from .errors import ParameterWarning, TitopError
from .scenarios import balloon
from .spatial import relative_rotation_vector
from .titop.units import DEFAULT_FMU_KIND

OUTPUTS = balloon.COLUMNS[1:]
ANGLES = {"phi", "theta", "psi", "theta1", "theta2"}
UNITS = balloon.UNITS
WINDOWS = (5.0, 10.0, 20.0)


class ValidationError(TitopError, ValueError):
    """The validation cannot run as asked (a folder named that does not exist, a model that fails)."""


def balloon_model_file() -> Path:
    """``validation/modelica/BalloonSystem.mo`` of the checkout this package lives in (or of the cwd)."""
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        f = base / "validation" / "modelica" / "BalloonSystem.mo"
        if f.is_file():
            return f
    return Path("validation") / "modelica" / "BalloonSystem.mo"


def run_modelica(stop: float, msl=None):
    """``(Series, note)`` of BalloonSystem.mo (Modelica MultiBody), or ``(None, one-line reason)``."""
    try:
        reason = modelica.unavailable_reason(msl)
    except ValueError as e:
        raise ValidationError(str(e)) from None
    model = balloon_model_file()
    if reason is None and not model.is_file():
        reason = f"no {model}"
    if reason:
        return None, f"- Modelica MultiBody: not run ({reason})"
    try:
        res = modelica.simulate(model, OUTPUTS, stop, 0.01, msl=msl)
    except (modelica.ModelicaError, ValueError) as e:
        raise ValidationError(f"Modelica MultiBody: {e}") from None
    i = res.info
    name = f"Modelica MultiBody (MSL {i['msl_version']}, {i['compiler']} {i['compiler_version']})"
    note = (f"- `{name}`: {i['solver']}, rtol {i['rtol']:g}, atol {i['atol']:g}; compiled in "
            f"{i['compile_s']:.1f} s, {stop:g} s simulated in {i['simulate_s']:.1f} s wall")
    return Series(name, res.t, res.values, i), note


def default_reference_dir() -> Path:
    """``validation/reference`` of the checkout this package lives in (or of the cwd)."""
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        d = base / "validation" / "reference"
        if d.is_dir():
            return d
    return Path("validation") / "reference"


@dataclass
class Series:
    """A balloon trajectory on the 0.01 s grid: ``t`` and the 9 output columns."""
    name: str
    t: np.ndarray
    cols: np.ndarray
    info: dict = field(default_factory=dict)

    def until(self, stop):
        n = int(np.searchsorted(self.t, stop + 1e-9))
        return Series(self.name, self.t[:n], self.cols[:n], self.info)


def load_reference(path: Path) -> Series:
    with open(path) as f:
        header = f.readline().strip().split(",")
    if tuple(header) != balloon.COLUMNS:
        raise ValueError(f"{path}: expected the columns {','.join(balloon.COLUMNS)}, got {header}")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    info = {}
    prov = path.with_name(path.stem + ".provenance.json")
    if prov.exists():
        info = json.loads(prov.read_text())
    return Series(path.stem.replace("balloon_", ""), data[:, 0], data[:, 1:], info)


def errors(a: Series, b: Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, |a - b| per output, attitude error angle)`` on the common grid.

    Angle differences are wrapped to (-pi, pi]; the attitude error is the angle of
    ``P(Theta_a)^T P(Theta_b)``.
    """
    n = min(len(a.t), len(b.t))
    if not np.allclose(a.t[:n], b.t[:n], atol=1e-9):
        raise ValueError(f"{a.name} and {b.name} are not on the same time grid")
    d = a.cols[:n] - b.cols[:n]
    for j, name in enumerate(OUTPUTS):
        if name in ANGLES:
            d[:, j] = wrap(d[:, j])
    att = np.array([np.linalg.norm(relative_rotation_vector(y, x)) for x, y in zip(a.cols[:n, 3:6], b.cols[:n, 3:6])])
    return a.t[:n], np.abs(d), att


def run_inprocess(stop: float, overrides=None, tol=1e-12):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        s = balloon.build(overrides)
    tr = s.simulate(stop, 0.01, rtol=tol, atol=tol)
    return s, tr


def run_fmu(stop: float, overrides=None, options=None, progress=False, fmu_dir=None, fmu_kind=DEFAULT_FMU_KIND):
    """The balloon through the TITOP FMUs of ``fmu_kind`` (built into ``fmu_dir``, default the
    cache) and the co-simulation master (:mod:`titop_fmu.cosim`)."""
    from .cosim import simulate
    from .titop import TitopUnits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        system = balloon.system(overrides)
    opt = options or balloon.options(overrides)
    return simulate(system, stop, TitopUnits("fmu", fmu_dir, fmu_kind), output_interval=0.01, options=opt,
                    progress=progress)


def invariant_checks(stop: float, damped=None):
    """Centre-of-mass drift and energy behaviour of the in-process runs."""
    s, tr = damped or run_inprocess(stop)
    sums = [invariants.summary(s, y) for y in tr.y]
    com = np.array([x["com"] for x in sums])
    E = np.array([x["energy"] for x in sums])
    s0, tr0 = run_inprocess(stop, {"d_s": 0.0, "d_p1": 0.0, "d_p2": 0.0})
    E0 = np.array([invariants.energy(s0, y) for y in tr0.y])
    return {
        "centre of mass drift, max over t of norm(c(t) - c(0)) [m]": float(np.max(np.linalg.norm(com - com[0], axis=1))),
        "energy drift without damping, max abs(E - E0) / abs(E0)": float(np.max(np.abs(E0 - E0[0])) / abs(E0[0])),
        "largest energy increase with damping, max dE over 0.01 s [J]": float(np.max(np.diff(E))),
        "energy dissipated by the dampers, E(0) - E(end) [J]": float(E[0] - E[-1]),
    }


def write_figures(out: Path, main: Series, pairs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for j, name in enumerate(OUTPUTS):
        fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(8, 5.5),
                                       gridspec_kw={"height_ratios": [3, 2]})
        ax1.plot(main.t, main.cols[:, j], "k", lw=1.2, label=f"TITOP {main.name}")
        ax1.set_ylabel(f"{name} [{UNITS[name]}]")
        ax1.set_title(f"Balloon system: {name}")
        ax1.grid(alpha=0.3)
        ax1.legend(loc="best", fontsize=8)
        for a, b in pairs:
            t, e, _ = errors(a, b)
            ax2.semilogy(t, np.maximum(e[:, j], 1e-17), lw=0.9, label=f"{a.name} vs {b.name}")
        ax2.set_ylabel(f"|error| [{UNITS[name]}]")
        ax2.set_xlabel("t [s]")
        ax2.set_ylim(1e-17, None)
        ax2.grid(alpha=0.3, which="both")
        ax2.legend(loc="best", fontsize=8)
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def write_overview(out: Path, main: Series, pairs) -> Path:
    """The paper's Figure 17: every response (black) with its errors (log scale, right axis)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(13, 9), sharex=True)
    colors = ["tab:red", "tab:blue", "tab:green", "tab:orange"]
    errs = [(a, b, errors(a, b)) for a, b in pairs]
    for j, (name, ax) in enumerate(zip(OUTPUTS, axes.flat)):
        ax.plot(main.t, main.cols[:, j], "k", lw=1.1)
        ax.set_title(f"{name} [{UNITS[name]}]", fontsize=10)
        ax.grid(alpha=0.3)
        ax2 = ax.twinx()
        for c, (a, b, (t, e, _)) in zip(colors, errs):
            ax2.semilogy(t, np.maximum(e[:, j], 1e-17), color=c, lw=0.6, alpha=0.8,
                         label=f"|{a.name} - {b.name}|")
        ax2.set_ylim(1e-17, 1e-2)
        ax2.tick_params(axis="y", labelcolor="tab:red", labelsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    handles, labels = ax2.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9)
    fig.suptitle(f"Balloon system: TITOP {main.name} responses (black) and errors (log scale, right)")
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    path = out / "overview.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def table(pairs, stop):
    windows = [w for w in WINDOWS if w <= stop + 1e-9] or [stop]
    lines = ["| comparison | window | " + " | ".join(OUTPUTS) + " | attitude angle |",
             "|---|---|" + "---|" * (len(OUTPUTS) + 1)]
    worst = {}
    for (a, b) in pairs:
        t, e, att = errors(a, b)
        for w in windows:
            k = t <= w + 1e-9
            row = [f"{e[k, j].max():.2e}" for j in range(len(OUTPUTS))] + [f"{att[k].max():.2e}"]
            lines.append(f"| {a.name} vs {b.name} | [0, {w:g}] s | " + " | ".join(row) + " |")
        worst[f"{a.name} vs {b.name}"] = float(max(e.max(), att.max()))
    return "\n".join(lines), worst


def validate(out_dir, stop=20.0, reference_dir=None, engines=("inprocess",), log=print, msl=None,
             fmu_kind=DEFAULT_FMU_KIND):
    """Run the comparison and write the report; returns ``{comparison: max error}``.

    Checked before any work: a ``reference_dir`` named must exist; ``msl`` (the
    folder holding ``Modelica/``, default ``MODELICAPATH``) must hold the MSL when
    named. Without a Modelica compiler or MSL the report says so in one line;
    without matplotlib it has no figures and says so.
    """
    if reference_dir is not None and not Path(reference_dir).is_dir():
        raise ValidationError(f"reference folder {reference_dir} does not exist")
    unknown = [e for e in engines if e not in ("inprocess", "fmu")]
    if unknown or not engines:
        raise ValidationError(f"engines must be among 'inprocess', 'fmu', got {list(engines)}")
    try:
        modelica.find_msl(msl)
    except ValueError as e:
        raise ValidationError(str(e)) from None
    plots = importlib.util.find_spec("matplotlib") is not None
    out = Path(out_dir)
    ref_dir = Path(reference_dir) if reference_dir else default_reference_dir()
    refs = [load_reference(p).until(stop) for p in sorted(ref_dir.glob("balloon_*.csv"))]
    runs, notes = [], []
    mo, note = run_modelica(stop, msl)                  # first: a model that fails, fails early
    notes.append(note)
    log(note[2:])
    damped = None
    for engine in engines:
        t0 = time.perf_counter()
        if engine == "inprocess":
            damped = run_inprocess(stop)
            s, tr = damped
            runs.append(Series("inprocess", tr.t, balloon.columns(s, tr.y)))
        elif engine == "fmu":
            res = run_fmu(stop, fmu_kind=fmu_kind)
            runs.append(Series("fmu", res.t, res.values))
            st = res.stats
            notes.append(f"- `fmu` master on the {fmu_kind} FMUs: {st.macro_steps} macro steps ({st.rejected} rejected), "
                         f"{st.step_iterations} coupling iterations, {sum(st.unit_steps.values())} doSteps")
        else:
            raise ValueError(f"unknown engine {engine!r}")
        notes.append(f"- `{engine}`: {stop:g} s simulated in {time.perf_counter() - t0:.1f} s wall")
        log(notes[-1][2:])
    pairs = [(r, ref) for r in runs for ref in refs] + [(r, runs[0]) for r in runs[1:]]
    if mo is not None:
        label = {"inprocess": "in-process", "fmu": "FMUs + master"}
        pairs += [(mo, Series(label["inprocess"], r.t, r.cols)) for r in runs if r.name == "inprocess"]
        pairs += [(Series(label["fmu"], r.t, r.cols), Series("Modelica", mo.t, mo.cols))
                  for r in runs if r.name == "fmu"]
    tab, worst = table(pairs, stop)
    inv = invariant_checks(stop, damped)
    out.mkdir(parents=True, exist_ok=True)              # made once the runs are done: Ctrl-C before leaves nothing
    if plots:
        figs = [write_overview(out, runs[0], pairs)] + write_figures(out, runs[0], pairs)
        fig_lines = [f"![{p.stem}]({p.name})" for p in figs]
    else:
        fig_lines = ["Figures skipped: matplotlib is not installed (pip install -e \".[report]\")."]
        log(fig_lines[0])
    ref_lines = []
    for ref in refs:
        i = ref.info
        ref_lines.append(f"- `{ref.name}`: {i.get('tool', 'unknown tool')} {i.get('pinocchio_version', i.get('version', ''))}, "
                         f"{i.get('integrator', 'integrator not recorded')}, rtol {i.get('rtol', '?')}, "
                         f"generated {i.get('date', '?')}")
    md = [
        "# Balloon system validation",
        "",
        f"Scenario: docs/balloon-scenario.md of the titop-fmu repository, 0 to {stop:g} s, outputs every 0.01 s.",
        "",
        "## Runs",
        *notes,
        "",
        "## References",
        *(ref_lines or ["- none found"]),
        "",
        "## Maximum absolute errors",
        "Units: m for x, y, z, p; rad for the angles. Angle differences wrapped to (-pi, pi]; "
        "'attitude angle' is the angle of the relative rotation between the two balloon attitudes.",
        "",
        tab,
        "",
        "## Invariants (in-process run)",
        "",
        "| check | value |",
        "|---|---|",
        *[f"| {k} | {v:.3e} |" for k, v in inv.items()],
        "",
        "## Figures",
        *fig_lines,
        "",
    ]
    (out / "report.md").write_text("\n".join(md))
    log(f"report written to {out / 'report.md'}")
    return {"errors": worst, "invariants": inv}
