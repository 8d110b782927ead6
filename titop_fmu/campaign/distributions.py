"""The distributions of varied quantities and the designs that sample them.

A distribution is written as text, numbers in SI units or with their units (``170 deg``,
``5 mm``, :mod:`titop_fmu.quantities`):

* ``uniform(a, b)``, ``normal(mu, sigma)``, ``truncnormal(mu, sigma, a, b)`` (``a``, ``b``
  the bounds themselves, not in units of sigma);
* ``[v1, v2, ...]`` or ``choice(v1, v2, ...)``: one of the values, equally likely;
  ``linspace(a, b, n)``: the same with ``n`` values evenly spaced from ``a`` to ``b``.

A design maps sample indices to values (:func:`design`):

* ``random``: sample ``i`` draws from its own stream, ``SeedSequence(seed, spawn_key=(i,))``:
  it depends on the seed and its index alone, never on the other samples;
* ``lhs``, ``sobol``: a Latin hypercube or a scrambled Sobol sequence of ``n`` points
  (:mod:`scipy.stats.qmc`, seeded), each coordinate through the inverse distribution function;
* ``grid``: every combination of the listed values (``[..]``, ``choice``, ``linspace``), the
  first quantity varying slowest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import TitopError, did_you_mean
from ..quantities import UnitError, quantity

SAMPLINGS = ("random", "lhs", "sobol", "grid")
KINDS = {"uniform": 2, "normal": 2, "truncnormal": 4, "choice": None, "linspace": 3}
_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.S)


class SweepError(TitopError):
    """A campaign is described wrongly (a distribution, a sampling, the store)."""


def _number(where, text, unit=None) -> float:
    """A number, or a number with its unit (converted to ``unit``, SI without one)."""
    try:
        return quantity(text.strip(), unit, where)
    except UnitError as e:
        raise SweepError(str(e)) from None


@dataclass(frozen=True)
class Distribution:
    """One varied quantity's distribution (:func:`parse` reads it)."""

    kind: str
    args: tuple          # SI values

    @property
    def values(self):
        """The listed values (``choice``, ``linspace``), else None."""
        if self.kind == "choice":
            return self.args
        if self.kind == "linspace":
            a, b, n = self.args
            return tuple(np.linspace(a, b, int(n)).tolist())
        return None

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """The inverse distribution function at ``u`` in [0, 1)."""
        u = np.clip(np.asarray(u, dtype=float), np.finfo(float).tiny, 1.0 - np.finfo(float).epsneg)
        if self.kind == "uniform":
            a, b = self.args
            return a + (b - a) * u
        from scipy import stats
        if self.kind == "normal":
            mu, sigma = self.args
            return stats.norm.ppf(u, loc=mu, scale=sigma)
        if self.kind == "truncnormal":
            mu, sigma, a, b = self.args
            return stats.truncnorm.ppf(u, (a - mu) / sigma, (b - mu) / sigma, loc=mu, scale=sigma)
        values = np.array(self.values)
        return values[np.minimum((u * len(values)).astype(int), len(values) - 1)]


def parse(name: str, text: str, unit: str | None = None) -> Distribution:
    """``"normal(170deg, 2deg)"`` -> ``Distribution("normal", (2.967.., 0.0349..))``: values in
    SI, or with their units, converted to ``unit`` (the varied value's, its dimension checked);
    errors name the quantity and say what is wrong."""
    where = f"--vary {name}={text}"
    text = str(text).strip()
    if text.startswith("[") and text.endswith("]"):
        kind, body = "choice", text[1:-1]
    else:
        m = _CALL.match(text)
        if not m:
            raise SweepError(f"{where}: expected uniform(a,b), normal(mu,sigma), truncnormal(mu,sigma,a,b), "
                             "[v1,v2,..], choice(v1,v2,..) or linspace(a,b,n)")
        kind, body = m.group(1), m.group(2)
    if kind not in KINDS:
        raise SweepError(f"{where}: unknown distribution {kind!r}{did_you_mean(kind, KINDS)}; known: {', '.join(KINDS)}")
    parts = body.split(",") if body.strip() else []
    args = tuple(_number(where, a, None if kind == "linspace" and k == 2 else unit) for k, a in enumerate(parts))
    n = KINDS[kind]
    if n is not None and len(args) != n:
        raise SweepError(f"{where}: {kind} takes {n} numbers, got {len(args)}")
    if kind == "choice" and not args:
        raise SweepError(f"{where}: no values to choose from")
    if kind == "uniform" and not args[0] < args[1]:
        raise SweepError(f"{where}: uniform(a, b) needs a < b")
    if kind in ("normal", "truncnormal") and not args[1] > 0:
        raise SweepError(f"{where}: sigma must be > 0")
    if kind == "truncnormal" and not args[2] < args[3]:
        raise SweepError(f"{where}: truncnormal(mu, sigma, a, b) needs a < b")
    if kind == "linspace" and not (args[2] >= 1 and args[2] == int(args[2]) and args[2] <= 1e6):
        raise SweepError(f"{where}: linspace(a, b, n) needs a whole number n >= 1")
    return Distribution(kind, args)


def grid_size(distributions) -> int:
    """The number of combinations of a full grid over ``distributions`` (all listed values)."""
    return math.prod(len(d.values) for d in distributions)


def design(distributions: list, n: int, seed: int, sampling: str = "random") -> np.ndarray:
    """``(n, len(distributions))`` values: row ``i`` is sample ``i`` (see the module docstring)."""
    d = len(distributions)
    if sampling == "grid":
        sizes = [len(x.values) for x in distributions]
        idx = np.array(np.unravel_index(np.arange(n), sizes)).T.reshape(n, d)
        return np.array([[x.values[k] for x, k in zip(distributions, row)] for row in idx], dtype=float).reshape(n, d)
    if sampling == "random":
        u = np.array([np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))).random(d)
                      for i in range(n)]).reshape(n, d)
    else:
        import warnings

        from scipy.stats import qmc
        engine = qmc.LatinHypercube(d, seed=seed) if sampling == "lhs" else qmc.Sobol(d, scramble=True, seed=seed)
        with warnings.catch_warnings():         # Sobol's balance needs 2^m points: said in the docs, not per run
            warnings.simplefilter("ignore", UserWarning)
            u = engine.random(n)
    return np.column_stack([x.ppf(u[:, k]) for k, x in enumerate(distributions)]) if d else np.zeros((n, 0))
