"""A control block from a unit's parameters as a system file gives them
(``model = "state_space"``, ``A = [[...]]``, ... or ``file = "ctrl.mat"``): the parameters
each model takes, their defaults, and the matrices read from ``.mat`` / ``.npz`` files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ParameterError, did_you_mean
from . import blocks

#: per model: {parameter: default} (None: required, unless a file gives it; "" : a string)
PARAMETERS = {
    "state_space": {"A": None, "B": None, "C": None, "D": None, "x0": None, "sample_time": None, "offset": 0.0,
                    "file": ""},
    "gain": {"K": None, "file": ""},
    "sum": {"signs": [1.0, 1.0], "size": 1},
    "saturation": {"lower": None, "upper": None, "size": 1},
    "rate_limiter": {"rising": None, "falling": None, "Td": 1e-3, "y0": 0.0},
    "pid": {"kp": 0.0, "ki": 0.0, "kd": 0.0, "tf": None, "limits": None, "tt": None},
    "zoh": {"sample_time": None, "offset": 0.0, "size": 1},
    "sensor": {"of": "", "noise": 0.0, "bias": 0.0, "seed": 0, "sample_time": None, "offset": 0.0, "size": 1},
}
#: the matrices a file may hold for each model
FILE_KEYS = {"state_space": ("A", "B", "C", "D"), "gain": ("K",)}


def is_control(model) -> bool:
    return isinstance(model, str) and model in PARAMETERS


def read_matrices(path, keys, where: str) -> dict:
    """``{key: matrix}`` of the ``keys`` found in a ``.mat`` (MATLAB, v5 to v7.2) or ``.npz``
    file; at least one must be there."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"{where}.file", f"no file {path}")
    try:
        if path.suffix.lower() == ".mat":
            from scipy.io import loadmat
            content = loadmat(str(path))
        elif path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as f:
                content = {k: f[k] for k in f.files}
        else:
            raise ParameterError(f"{where}.file", f"{path.name}: a .mat or .npz file is expected")
    except ParameterError:
        raise
    except Exception as e:                           # a damaged or foreign file: its reader's word
        raise ParameterError(f"{where}.file", f"cannot read {path.name}: {e}") from None
    found = {k: np.atleast_2d(np.asarray(content[k], dtype=float)) for k in keys if k in content}
    if not found:
        names = sorted(k for k in content if not k.startswith("__"))
        raise ParameterError(f"{where}.file", f"{path.name} holds none of {', '.join(keys)} "
                             f"(it holds: {', '.join(names) or 'nothing'})")
    return found


def build(model: str, parameters: dict, where: str) -> blocks.ControlBlock:
    """The block ``model`` with ``parameters`` (whole values: matrices as nested lists;
    ``file`` an absolute path), checked: an unknown or missing parameter, a matrix of the
    wrong size, a sample time <= 0 is a :class:`ParameterError` naming ``where.parameter``."""
    known = PARAMETERS[model]
    for p in parameters:
        if p not in known:
            raise ParameterError(f"{where}.{p}", f"{model} has no parameter {p!r}{did_you_mean(p, known)}; "
                                 f"parameters: {', '.join(known)}")
    values = {k: v for k, v in known.items() if v not in (None, "")}
    values.update(parameters)
    if values.get("file"):
        if model not in FILE_KEYS:
            raise ParameterError(f"{where}.file", f"{model} takes no file")
        from_file = read_matrices(values.pop("file"), FILE_KEYS[model], where)
        for k, v in from_file.items():
            if k in parameters:
                raise ParameterError(f"{where}.{k}", "given twice: in the file and in the unit")
            values[k] = v
    values.pop("file", None)
    values.pop("of", None)
    try:
        return _make(model, values, where)
    except TypeError as e:
        raise ParameterError(where, f"{model}: {e}") from None


def _make(model, v, where):
    if model == "state_space":
        for k in ("A", "B", "C"):
            if k not in v:
                raise ParameterError(f"{where}.{k}", "not given (A, B, C and optionally D, or file = \"ctrl.mat\")")
        return blocks.StateSpace(v["A"], v["B"], v["C"], v.get("D"), v.get("x0"), v.get("sample_time"),
                                 v["offset"], where)
    if model == "gain":
        if "K" not in v:
            raise ParameterError(f"{where}.K", "not given (K, or file = \"K.npz\")")
        return blocks.Gain(v["K"], where)
    if model == "sum":
        return blocks.Sum(v["signs"], v["size"], where)
    if model == "saturation":
        for k in ("lower", "upper"):
            if k not in v:
                raise ParameterError(f"{where}.{k}", "not given")
        return blocks.Saturation(v["lower"], v["upper"], v["size"], where)
    if model == "rate_limiter":
        if "rising" not in v:
            raise ParameterError(f"{where}.rising", "not given")
        return blocks.RateLimiter(v["rising"], v.get("falling"), v["Td"], v["y0"], where)
    if model == "pid":
        return blocks.PID(v["kp"], v["ki"], v["kd"], v.get("tf"), v.get("limits"), v.get("tt"), where)
    if model == "zoh":
        if "sample_time" not in v:
            raise ParameterError(f"{where}.sample_time", "a sample-and-hold needs its sample_time")
        return blocks.ZOH(v["sample_time"], v["offset"], v["size"], where)
    return blocks.Sensor(v["size"], v["noise"], v["bias"], v["seed"], v.get("sample_time"), v["offset"], where)
