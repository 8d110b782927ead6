"""Reading ``--set NAME=VALUE`` overrides, writing and reading result CSVs."""

from __future__ import annotations

import ast
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .errors import ParameterError, TitopError, did_you_mean


def parse_set(items, defaults: dict) -> dict:
    """``["k=60", "theta1_0=170deg"]`` -> ``{"k": 60.0, "theta1_0": 2.967...}``.

    Names must be keys of ``defaults``, values of the same shape. Values are SI; a
    trailing ``deg`` converts degrees to radians. Vectors and matrices are written as
    Python lists: ``t=[1,0,-1]``.
    """
    out = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name:
            raise ParameterError(item, "expected NAME=VALUE")
        if name not in defaults:
            raise ParameterError(name, f"unknown parameter{did_you_mean(name, defaults)}; known: {', '.join(defaults)}")
        scale = 1.0
        if text.endswith("deg"):
            text, scale = text[:-3], np.pi / 180.0
        try:
            value = np.asarray(ast.literal_eval(text), dtype=float) * scale
        except Exception:
            raise ParameterError(name, f"cannot read the value {text!r}") from None
        if np.shape(value) != np.shape(defaults[name]):
            raise ParameterError(name, f"expected shape {np.shape(defaults[name])}, got {np.shape(value)}")
        out[name] = value.tolist() if value.ndim else float(value)
    return out


def write_csv(path, t, cols, header):
    """``t`` and the columns ``cols`` (``(len(t), n)``) under the ``header`` names, full precision."""
    data = np.column_stack([t, cols])
    np.savetxt(path, data, delimiter=",", header=",".join(header), comments="", fmt="%.17g")


def write_atomically(path, write):
    """``write(temporary path)`` beside ``path``, then the file moved in place: a result is
    written whole or not at all."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                  # as a file opened for writing would be
        os.replace(tmp, path)
    except BaseException:
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
