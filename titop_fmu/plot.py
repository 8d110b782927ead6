"""``titop-fmu plot RUN.csv --out FIG.png``: a static figure of chosen columns of a result CSV,
for reports (matplotlib, the ``report`` extra): one subplot per column, or one per unit
(``--by-unit``), the time in seconds, SI units in the labels where they are known: the
balloon's columns, the TITOP ports' (motion vectors, wrenches), and with the system
(``--system``) every output of its units (a joint's ``q`` in rad or m) and the inertial
quantities it records (positions, velocities, Euler angles) and the system's totals
(momentum, energy)."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from .cosim import CoSystem
from .cosim.names import port_of
from .errors import TitopError
from .fmu import catalog
from .io import write_atomically
from .scenarios import balloon
from .titop.records import quantity_component
from .titop.totals import SYSTEM, total_component

FORMATS = (".png", ".pdf", ".svg")
#: most subplots in one figure
MAX_PANELS = 24


def describe(label: str, system: CoSystem | None = None) -> tuple:
    """``(unit or None, description)`` of a CSV column: from the system's unit when given
    (its FMI variable), else from the port's name (motion vectors, wrenches) or the balloon's
    columns."""
    if label in balloon.UNITS:
        return balloon.UNITS[label], ""
    name, _, var = label.partition(".")
    spec = system.units.get(name) if system is not None else None
    if spec is not None:
        try:
            for v in catalog.interface_of(spec.model).variables:
                if v.name == var:
                    return v.unit, v.description
        except (KeyError, TypeError):
            pass
    component = quantity_component(var) if spec is not None or name != SYSTEM else total_component(label)
    if component is not None:
        return component
    port, k = port_of(var)
    size = {"m": 18, "w": 6, "a": 6}.get(port.rpartition(".")[2])
    if size and 1 <= k <= size:
        return catalog.port_units(port, size, None)[k - 1], catalog.port_labels(port, size)[k - 1]
    return None, ""


def select(labels: list, patterns, option: str = "--columns", what: str = "column") -> list:
    """The columns named by ``patterns`` (exact names, or shell patterns with ``*`` and ``?``
    in which brackets are literal: ``arm.joint.q[*]``), in the order asked; all by default. A
    pattern that names none is an error of ``option``, listing the ``what``s there are."""
    if not patterns:
        return list(labels)
    out = []
    for pattern in patterns:
        if pattern in labels:
            found = [pattern]
        else:
            literal = pattern.replace("[", "[[]")
            found = [lab for lab in labels if fnmatch.fnmatchcase(lab, literal)]
        if not found:
            raise TitopError(f"{option} {pattern}: no such {what}; {what}s: {', '.join(labels)}")
        out.extend(x for x in found if x not in out)
    return out


def plot(t, columns: dict, out, names=None, by_unit=False, system=None, title=None):
    """Write the figure of ``columns`` (``{label: (len(t),) array}``) chosen by ``names`` to
    ``out`` (.png, .pdf or .svg)."""
    try:
        import matplotlib
    except ImportError:
        raise TitopError("titop-fmu plot needs matplotlib: pip install -e \".[report]\"") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = select(list(columns), names)
    info = {c: describe(c, system) for c in chosen}
    if by_unit:
        groups = {}
        for c in chosen:
            groups.setdefault(info[c][0], []).append(c)
        panels = list(groups.items())
    else:
        panels = [(info[c][0], [c]) for c in chosen]
    if len(panels) > MAX_PANELS:
        raise TitopError(f"{len(panels)} subplots: at most {MAX_PANELS}; choose columns with --columns "
                         "or group them with --by-unit")
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(8, 1.2 + 1.9 * len(panels)))
    for ax, (unit, cols) in zip(axes[:, 0], panels):
        for c in cols:
            ax.plot(t, columns[c], lw=1.2, label=c)
        what = cols[0] if len(cols) == 1 else ("" if unit else "values")
        ax.set_ylabel(f"{what} [{unit}]".strip() if unit else what, fontsize=9)
        if len(cols) == 1 and info[cols[0]][1]:
            ax.set_title(info[cols[0]][1], fontsize=9, loc="left")
        if len(cols) > 1:
            ax.legend(fontsize=7, loc="best", ncol=1 + (len(cols) - 1) // 6)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("t [s]")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    write_atomically(out, lambda tmp: fig.savefig(tmp, format=Path(out).suffix[1:].lower(), dpi=120))
    plt.close(fig)


def check_format(option: str, path) -> None:
    if str(path).lower().endswith(FORMATS):
        return
    raise TitopError(f"{option} {path}: the figure's format comes from its suffix: {', '.join(FORMATS)}")

