"""Reading ``--set NAME=VALUE`` overrides and writing result CSVs."""

from __future__ import annotations

import ast

import numpy as np

from .errors import ParameterError


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
            raise ParameterError(name, f"unknown parameter; known: {', '.join(defaults)}")
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
