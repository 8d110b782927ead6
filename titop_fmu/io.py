"""Reading ``--set NAME=VALUE`` overrides, writing and reading result CSVs."""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .control.signals import Signal
from .errors import ParameterError, TitopError, did_you_mean

_INDEXED = re.compile(r"^(.+?)\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]$")


def unknown(name: str, known, what: str = "parameter") -> ParameterError:
    """The error of an unknown name: the nearest known ones, and the known names (when they
    are few, or none is near)."""
    known = list(known)
    near = did_you_mean(name, known)
    if near and len(known) > 30:
        return ParameterError(name, f"unknown {what}{near}")
    listed = ", ".join(known[:30]) + (f", ... ({len(known)} in all)" if len(known) > 30 else "")
    return ParameterError(name, f"unknown {what}{near}; known: {listed}")


def resolve(name: str, defaults: dict) -> tuple:
    """``"I_B[2,3]"`` -> ``("I_B", (1, 2))`` (FMI-style 1-based indices of a vector or matrix
    value); ``"m_P1"`` -> ``("m_P1", None)``. Unknown names and bad indices are a
    :class:`ParameterError` naming them."""
    if name in defaults:
        return name, None
    m = _INDEXED.match(name)
    if m and m.group(1) in defaults:
        base = m.group(1)
        shape = np.shape(defaults[base])
        index = tuple(int(i) - 1 for i in m.group(2).split(","))
        if len(index) != len(shape) or not all(0 <= i < n for i, n in zip(index, shape)):
            raise ParameterError(name, f"no such element: {base} has shape {shape} (indices from 1)")
        return base, index
    raise unknown(name, defaults)


def parse_value(name: str, text: str, unit=None):
    """The value of ``--set NAME=TEXT``: a number, a number with its unit (``"170 deg"``,
    ``"5 mm"``: in ``unit(())``, the unit the value is declared in, its dimension checked; SI
    without it), a list of them (``"[3 deg, 0, 0]"``, each element in ``unit(index)``) as an
    array, or an expression in ``t`` (``"where(t < 1, 2, 0)"``): a time signal
    (:class:`~titop_fmu.control.signals.ExpressionSignal`), for an input."""
    from .control.expressions import ExpressionError
    from .cosim import values
    from .quantities import UnitError
    parts = values.split(text)
    try:
        if isinstance(parts, list):
            value = values.read(parts, name, unit)
        else:
            value = values.text_value(parts, name, unit(()) if unit else None, time=True)
    except (ExpressionError, UnitError) as e:
        detail = str(e).removeprefix(f"{name}: ")
        raise ParameterError(name, f"cannot read the value {text.strip()!r}: {detail}") from None
    if isinstance(value, Signal):
        return value
    try:
        return np.asarray(value, dtype=float)
    except ValueError:
        raise ParameterError(name, f"cannot read the value {text.strip()!r}: rows of different lengths") from None


def assign(out: dict, defaults: dict, name: str, value) -> dict:
    """``out[base] = value`` for ``name`` a key of ``defaults`` (same shape), or one element
    of it for ``name = "base[i,j]"`` (the others from ``out``, else ``defaults``)."""
    base, index = resolve(name, defaults)
    if isinstance(value, Signal):                      # a time signal: for an input scalar
        if index is None and np.shape(defaults[base]) == ():
            out[base] = value
        elif index is not None and len(index) == 1:
            whole = list(out.get(base, defaults[base]))
            whole[index[0]] = value
            out[base] = whole
        else:
            raise ParameterError(name, f"a time signal gives one scalar: {base}[k] = ...")
        return out
    value = np.asarray(value, dtype=float)
    if index is None:
        if np.shape(value) != np.shape(defaults[base]):
            raise ParameterError(name, f"expected shape {np.shape(defaults[base])}, got {np.shape(value)}")
        out[base] = value.tolist() if value.ndim else float(value)
        return out
    if value.ndim:
        raise ParameterError(name, f"an element takes one number, got shape {value.shape}")
    whole = out.get(base, defaults[base])
    if any(isinstance(x, Signal) for x in np.ravel(np.asarray(whole, dtype=object))):
        whole = list(whole)                           # a port with signals: element by element
        whole[index[0]] = float(value)
        out[base] = whole
        return out
    whole = np.array(whole, dtype=float)
    whole[index] = value
    out[base] = whole.tolist()
    return out


def parse_set(items, defaults: dict, unit_of=None) -> dict:
    """``["k=60", "theta1_0=170deg", "I_B[1,1]=6"]`` -> ``{"k": 60.0, "theta1_0": 2.967..., "I_B": [[6, ..]]}``.

    Names must be keys of ``defaults``, values of the same shape, or one element of a
    vector or matrix (``name[i]``, ``name[i,j]``, from 1). Values are SI numbers, numbers
    with their units (``170 deg``, ``5 mm``: converted to ``unit_of(scalar)``, the unit the
    FMI scalar ``name``, ``name[i]``, ... is declared in, its dimension checked), lists of
    them (``t=[1,0,-1]``, ``"mount=[3 deg, 0, 0]"``).
    Later items win over earlier ones.
    """
    out = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(item, "expected NAME=VALUE")
        base, index = resolve(name, defaults)
        unit = None
        if unit_of is not None:
            def unit(at, base=base, index=index):
                at = index if index is not None else at
                return unit_of(f"{base}[{','.join(str(i + 1) for i in at)}]" if at else base)
        assign(out, defaults, name, parse_value(name, text, unit))
    return out


def utf8_text(path) -> str:
    """The text of the file ``path``, UTF-8 as TOML and JSON files are: another encoding (a
    file saved in Latin-1 or Windows-1252 by an editor) is a :class:`TitopError` naming the line
    and column of its first byte that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = data.count(b"\n", 0, e.start) + 1, e.start - data.rfind(b"\n", 0, e.start)
        raise TitopError(f"{path}: not UTF-8 text: line {line}, column {column} holds the byte 0x{data[e.start]:02x} "
                         "(saved in another encoding, such as Latin-1 or Windows-1252?): save it as UTF-8") from None


def write_csv(path, t, cols, header):
    """``t`` and the columns ``cols`` (``(len(t), n)``) under the ``header`` names, full precision."""
    data = np.column_stack([t, cols])
    np.savetxt(path, data, delimiter=",", header=",".join(header), comments="", fmt="%.17g")


def write_atomically(path, write):
    """``write(temporary path)`` beside ``path``, then the file moved in place: a result is
    written whole or not at all, and no temporary file is left, whenever Ctrl-C comes."""
    from .cosim.workers import interrupts_held
    path = Path(path)
    tmp = None
    try:
        with interrupts_held():         # the temporary file and its name together (a Ctrl-C
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",     # between them
                                       dir=path.parent if str(path.parent) else ".")  # left it behind)
            os.close(fd)
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                  # as a file opened for writing would be
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


def read_result(path) -> tuple:
    """``(t, {label: column})`` of a result CSV (its first column ``t``)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            header = f.readline().strip().split(",")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                     # an empty file: said below
            data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise TitopError(f"{path}: cannot read a result CSV ({e})") from None
    if not header or header[0] != "t" or data.shape[1] != len(header) or len(data) == 0:
        raise TitopError(f"{path}: not a result CSV of titop-fmu (a header line 't,...' and rows of "
                         f"{len(header)} numbers)")
    if not np.all(np.isfinite(data)) or np.any(np.diff(data[:, 0]) <= 0):
        raise TitopError(f"{path}: the times must increase and every value be finite")
    return data[:, 0], {name: data[:, j] for j, name in enumerate(header) if j}
