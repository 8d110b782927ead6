"""FMI structured variable names: a port or parameter of shape ``()`` is the scalar
``name``, of shape ``(n,)`` the scalars ``name[1]`` .. ``name[n]``, of shape ``(n, m)``
``name[i,j]`` (1-based, row-major)."""

from __future__ import annotations

import re

import numpy as np

from ..errors import ConnectionError_

_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")
_STRUCTURED = re.compile(r"^(.*)\[([\d,]+)\]$")


def structured_names(name: str, shape: tuple) -> list[str]:
    """The scalar names of a variable of ``shape``, in row-major order."""
    return [f"{name}[{','.join(str(i + 1) for i in index)}]" if index else name for index in np.ndindex(*shape)]


def port_names(spec: dict) -> list[str]:
    """The scalar names of the ports ``{port: size}``, in order: a port of size 1 is one
    scalar (``joint.tau``), of size ``n`` the scalars ``port[1]`` .. ``port[n]``."""
    return [s for name, size in spec.items() for s in structured_names(name, () if size == 1 else (size,))]


def port_of(scalar: str) -> tuple[str, int]:
    """``"p.m[3]"`` -> ``("p.m", 3)``; ``"joint.tau"`` -> ``("joint.tau", 0)``."""
    m = _INDEXED.match(scalar)
    return (m.group(1), int(m.group(2))) if m else (scalar, 0)


def expand_parameters(params: dict) -> dict:
    """``{"com": [0, -1, 0], "inertia": [[..]], "c1.r": [..], "mass": 2}`` ->
    the scalar names ``com[1]``, ``inertia[1,1]``, ``c1.r[1]``, ``mass`` with their values."""
    out = {}
    for name, value in params.items():
        try:
            a = np.asarray(value)
        except ValueError:
            raise ConnectionError_(f"parameter {name!r}: not a vector or matrix (rows of different lengths?): "
                                   f"{value!r}") from None
        if a.dtype == object or a.dtype.kind in "US":
            out[name] = value
        elif a.ndim == 0:
            out[name] = value.item() if hasattr(value, "item") else value
        else:
            out.update(zip(structured_names(name, a.shape), (x.item() for x in a.reshape(-1))))
    return out


def grouped(scalars: dict) -> dict:
    """``{"com[1]": a, "com[2]": b, "com[3]": c, "mass": m}`` -> ``{"com": [a, b, c], "mass": m}``
    (FMI structured names, 1-based, row-major)."""
    out, shapes = {}, {}
    for n, v in scalars.items():
        m = _STRUCTURED.match(n)
        if not m:
            out[n] = v
            continue
        out.setdefault(m.group(1), None)            # in the order of the first element
        index = tuple(int(i) - 1 for i in m.group(2).split(","))
        shapes.setdefault(m.group(1), {})[index] = v
    for base, items in shapes.items():
        shape = tuple(max(ix[k] for ix in items) + 1 for k in range(len(next(iter(items)))))
        numbers = all(isinstance(v, (int, float, np.number)) for v in items.values())
        a = np.zeros(shape) if numbers else np.full(shape, 0.0, dtype=object)    # a time signal among them
        for ix, v in items.items():
            a[ix] = v
        out[base] = a.tolist()
    return out
