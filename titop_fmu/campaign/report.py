"""Summaries a person looks at, of a campaign store (``titop-fmu report STORE``).

Per recorded output, over the successful samples:

* the **envelope** over time: min, max and the 5, 25, 50, 75 and 95th percentiles;
* per sample, four **summary values**: ``final`` (the value at the stop time), ``min``,
  ``max``, and ``dev``, its largest distance from the median response over time;
* the **worst samples**: those of largest ``dev``;
* **sensitivities**: the Spearman rank correlation of each varied quantity with each
  output's summary values (monotone dependence, whatever the units or the shape).

:func:`report` writes ``report.md``, ``summaries.csv`` (the summary values of every
sample) and, with matplotlib (the ``report`` extra), the figures ``envelopes.png`` and
``sensitivity.png``: with more outputs than a page holds (:data:`PAGE`), a page per unit (a
unit's outputs over several pages if need be), ``envelopes-1.png``, ``envelopes-2.png``, ...
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .distributions import SweepError
from .store import Campaign

PERCENTILES = (5, 25, 50, 75, 95)
SUMMARIES = ("final", "min", "max", "dev")
#: worst samples listed per output
WORST = 5
#: outputs on a page of figures, at most (a page of envelopes: 3 columns of 4 panels)
PAGE = 12


@dataclass
class Summary:
    """A campaign's numbers: ``t``; ``outputs`` (names); ``envelope[k]``: ``(len(t),)`` per
    ``"min"``, ``"max"``, ``"p5"`` .. ``"p95"``, stacked as ``(len(outputs), len(t))``;
    ``samples``: the successful sample indices; ``values``: ``{summary: (n, outputs)}``;
    ``varied``: ``(n, len(names))``; ``rho[summary]``: ``(len(names), outputs)`` Spearman rank
    correlations (NaN where one side is constant)."""

    names: list
    outputs: list
    t: np.ndarray
    envelope: dict
    samples: np.ndarray
    varied: np.ndarray
    values: dict
    rho: dict

    def worst(self, j: int, k: int = WORST) -> np.ndarray:
        """The ``k`` samples farthest from the median response of output ``j``."""
        order = np.argsort(-self.values["dev"][:, j], kind="stable")[:k]
        return self.samples[order]


def summarize(c: Campaign, outputs=None) -> Summary:
    """The :class:`Summary` of the successful samples of ``c``, of the recorded ``outputs``
    (names; default all)."""
    from scipy.stats import spearmanr
    outputs = list(c.header[1:]) if outputs is None else list(outputs)
    idx, tables = c.tables()
    if len(idx) == 0:
        raise SweepError(f"{c.root}: no successful sample to summarize")
    t, Y = tables[0, :, 0], tables[:, :, [c.header.index(o) for o in outputs]]
    envelope = {"min": Y.min(axis=0).T, "max": Y.max(axis=0).T}
    for p, v in zip(PERCENTILES, np.percentile(Y, PERCENTILES, axis=0)):
        envelope[f"p{p}"] = v.T
    median = np.median(Y, axis=0)
    values = {"final": Y[:, -1, :], "min": Y.min(axis=1), "max": Y.max(axis=1),
              "dev": np.abs(Y - median).max(axis=1)}
    varied = c.samples.loc[idx, c.names].to_numpy(dtype=float)
    rho = {}
    for s, v in values.items():
        r = np.full((len(c.names), Y.shape[2]), np.nan)
        for a in range(len(c.names)):
            for j in range(Y.shape[2]):
                if len(idx) > 2 and np.ptp(varied[:, a]) > 0 and np.ptp(v[:, j]) > 0:
                    r[a, j] = spearmanr(varied[:, a], v[:, j]).statistic
        rho[s] = r
    return Summary(list(c.names), outputs, t, envelope, idx, varied, values, rho)


def units(c: Campaign) -> dict:
    """``{name: SI unit}`` of the campaign's varied quantities and outputs, where known: the
    balloon's scenario values and columns; a system file's unit parameters, inputs and
    outputs as ``titop-fmu plot`` labels them (none if the file is no longer there)."""
    from ..errors import TitopError
    from ..plot import describe
    from ..scenarios import balloon
    from ..simulation import Target
    names = list(c.names) + list(c.header[1:])
    if c.spec.system == "balloon":
        known = {**balloon.PARAMETER_UNITS, **balloon.UNITS}
        return {n: known[n] for n in names if known.get(n)}
    try:
        system = Target(c.spec.system).file.system
    except TitopError:
        return {}
    return {n: u for n in names if (u := describe(n, system)[0]) not in (None, "", "1")}


def _table(header, rows) -> list:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]


def chosen(c: Campaign, patterns) -> list:
    """The recorded outputs named by ``patterns`` (names or shell patterns, ``bus.*``; all
    without), checked: one that names none is an error."""
    from ..plot import select
    return select(list(c.header[1:]), patterns, "--outputs", "output")


def pages(outputs: list) -> list:
    """The outputs in pages of figures, at most :data:`PAGE` on one, each unit's (the name before
    the first ``.``) together: a unit with more spans pages of its own, units with fewer share
    one while they fit; ``(units, [positions in outputs])``, ``units`` empty for names without
    a unit."""
    groups = {}
    for j, o in enumerate(outputs):
        groups.setdefault(o.split(".")[0] if "." in o else "", []).append(j)
    book = []
    for g, js in groups.items():
        if book and len(book[-1][1]) + len(js) <= PAGE:
            book[-1] = (", ".join(filter(None, (book[-1][0], g))), book[-1][1] + js)
        else:
            book += [(g, js[k:k + PAGE]) for k in range(0, len(js), PAGE)]
    return book


def report(c: Campaign, out, outputs=None) -> Path:
    """Write the report of ``c`` into the folder ``out`` (of the recorded ``outputs``: names or
    shell patterns, default all); returns the path of ``report.md``."""
    names = chosen(c, outputs)
    unit = units(c)

    def label(name):
        return f"{name} [{unit[name]}]" if name in unit else name

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    s = c.samples
    counts = s.status.value_counts()
    spec = c.spec
    md = ["# Campaign report", "",
          f"System `{Path(spec.system).name}`, engine {spec.engine}, 0 to {spec.stop:g} s every {spec.dt:g} s; "
          f"{spec.samples} samples ({spec.sampling}, seed {spec.seed}): {counts.get('ok', 0)} ok, "
          f"{counts.get('failed', 0)} failed, {counts.get('missing', 0)} not run.", "",
          "Varied: " + ", ".join(f"`{n}` = {d}" for n, d in spec.vary.items()) + "."
          + (f" Fixed: {', '.join(f'`{x}`' for x in spec.set)}." if spec.set else ""), ""]
    failed = s[s.status == "failed"]
    if len(failed):
        md += ["## Failed runs", ""] + _table(["sample"] + c.names + ["error"], [
            [i] + [f"{row[n]:.6g}" for n in c.names] + [row.error] for i, row in failed.head(20).iterrows()])
        md += ([f"", f"... and {len(failed) - 20} more (`samples` of the store)."] if len(failed) > 20 else []) + [""]
    try:
        sm = summarize(c, names)
    except SweepError as e:
        (out / "report.md").write_text("\n".join(md + [str(e), ""]))
        return out / "report.md"
    import pandas as pd
    cols = {n: sm.varied[:, a] for a, n in enumerate(sm.names)}
    cols.update({f"{o}.{k}": sm.values[k][:, j] for j, o in enumerate(sm.outputs) for k in SUMMARIES})
    pd.DataFrame(cols, index=pd.Index(sm.samples, name="sample")).to_csv(out / "summaries.csv")
    md += ["## Envelopes", "",
           "Over the successful samples, at the stop time and over the whole run (min and max over time "
           "of the lower and upper bounds).", ""]
    md += _table(["output", "final: min", "p5", "p50", "p95", "max", "whole run: min", "max"], [
        [label(o)] + [f"{sm.envelope[k][j, -1]:.4g}" for k in ("min", "p5", "p50", "p95", "max")]
        + [f"{sm.envelope['min'][j].min():.4g}", f"{sm.envelope['max'][j].max():.4g}"]
        for j, o in enumerate(sm.outputs)])
    md += ["", "## Worst samples", "",
           f"Per output, the {WORST} samples farthest from the median response (`dev`: the largest distance "
           "over time, in the output's unit).", ""]
    rows = []
    for j, o in enumerate(sm.outputs):
        for rank, i in enumerate(sm.worst(j)):
            k = int(np.flatnonzero(sm.samples == i)[0])
            rows.append([label(o) if rank == 0 else "", i, f"{sm.values['dev'][k, j]:.4g}"]
                        + [f"{sm.varied[k, a]:.6g}" for a in range(len(sm.names))])
    md += _table(["output", "sample", "dev"] + [label(n) for n in sm.names], rows)
    md += ["", "## Sensitivities", "",
           "Spearman rank correlation of each varied quantity with each output's summary value "
           "(+1: the output grows with it, -1: falls, 0: no monotone dependence).", ""]
    for k in ("final", "dev"):
        md += [f"`{k}`:", ""] + _table(["varied"] + sm.outputs, [
            [n] + [f"{r:+.2f}" if np.isfinite(r) else "-" for r in sm.rho[k][a]] for a, n in enumerate(sm.names)])
        md += [""]
    if importlib.util.find_spec("matplotlib") is not None:
        md += ["## Figures", ""]
        book = pages(sm.outputs)
        for kind, write in (("envelopes", lambda p, js, what: write_envelopes(p, sm, c, label, js, what)),
                            ("sensitivity", lambda p, js, what: write_sensitivity(p, sm, js))):
            for k, (group, js) in enumerate(book, 1):
                what = f"{group or 'outputs'}{f' ({k}/{len(book)})' if len(book) > 1 else ''}"
                path = write(out / (f"{kind}.png" if len(book) == 1 else f"{kind}-{k}.png"), js,
                             what if group or len(book) > 1 else "")
                md += [f"Outputs on {path.name}: " + ", ".join(f"`{sm.outputs[j]}`" for j in js), "",
                       f"![{kind}: {what}]({path.name})", ""]
    else:
        md += ["Figures skipped: matplotlib is not installed (pip install -e \".[report]\").", ""]
    (out / "report.md").write_text("\n".join(md))
    return out / "report.md"


def write_envelopes(path: Path, sm: Summary, c: Campaign, label=str, page=None, what="") -> Path:
    """One panel per output of the ``page`` (positions in ``sm.outputs``, default all; titled
    ``label(output)``): min-max and 5-95 % bands, the 25-75 % band, the median, the worst
    sample; ``what``: the page's heading (its unit)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    page = range(len(sm.outputs)) if page is None else page
    n = len(page)
    ncol = min(3, n)
    nrow = -(-n // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(max(4.4 * ncol, 8.8), 2.8 * nrow), sharex=True, squeeze=False)
    e = sm.envelope
    for j, ax in zip(page, axes.flat):
        o = sm.outputs[j]
        ax.fill_between(sm.t, e["min"][j], e["max"][j], color="tab:blue", alpha=0.15, lw=0, label="min-max")
        ax.fill_between(sm.t, e["p5"][j], e["p95"][j], color="tab:blue", alpha=0.25, lw=0, label="5-95 %")
        ax.fill_between(sm.t, e["p25"][j], e["p75"][j], color="tab:blue", alpha=0.4, lw=0, label="25-75 %")
        ax.plot(sm.t, e["p50"][j], color="k", lw=1.0, label="median")
        w = int(sm.worst(j, 1)[0])
        ax.plot(sm.t, c.trajectory(w)[o], color="tab:red", lw=0.7, label="worst sample")
        ax.set_title(f"{label(o)} (worst: sample {w})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    for col in range(ncol):                     # the time axis under the lowest panel of each column
        ax = axes[(n - 1 - col) // ncol, col]
        ax.tick_params(labelbottom=True)
        ax.set_xlabel("t [s]")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.suptitle(f"{Path(c.spec.system).name}: {len(sm.samples)} runs, envelopes over the samples"
                 + (f": {what}" if what else ""), fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_sensitivity(path: Path, sm: Summary, page=None) -> Path:
    """Heat maps of the rank correlations of the varied quantities with ``final`` and ``dev``, of
    the outputs of the ``page`` (positions in ``sm.outputs``, default all)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    page = list(range(len(sm.outputs)) if page is None else page)
    fig, axes = plt.subplots(1, 2, figsize=(2.0 + 0.9 * len(page), 2.8 + 0.45 * len(sm.names)), squeeze=False,
                             layout="constrained")
    for ax, k in zip(axes[0], ("final", "dev")):
        r = sm.rho[k][:, page]
        im = ax.imshow(np.nan_to_num(r), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        ax.set_xticks(range(len(page)), [sm.outputs[j] for j in page], rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(sm.names)), sm.names, fontsize=8)
        for (a, j), v in np.ndenumerate(r):
            if np.isfinite(v):
                ax.text(j, a, f"{v:+.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 else "black")
        ax.set_title(f"Spearman rho with {k}", fontsize=9)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path
