"""Numbers of the master: angles modulo 2 pi, extrapolation weights and the tableau's columns,
Lagrange and quintic Hermite interpolation."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np


def wrap(a):
    """Angles to ``[-pi, pi)``."""
    return (a + np.pi) % (2.0 * np.pi) - np.pi


def wrap_where(d, angles):
    """``d`` with its entries at ``angles`` (a bool mask, or None) wrapped to ``[-pi, pi)``,
    in place: the difference of two angle-valued vectors taken modulo 2 pi."""
    if angles is not None and angles.any():
        d[angles] = wrap(d[angles])
    return d


def extrapolation_weights(sequence) -> np.ndarray:
    """Aitken-Neville weights of runs with ``n_r`` base steps, extrapolating in ``(1/n)^2`` to 0."""
    return lagrange_weights(1.0 / np.asarray(sequence, dtype=float) ** 2, 0.0)


def tableau_columns(sequence) -> list:
    """The weights of the extrapolation tableau's columns over the runs: ``D_j = T(runs 0..j) -
    T(runs 1..j)`` for ``j = 1 .. k - 1``, each a length-``k`` vector summing to 0."""
    k = len(sequence)
    return [np.concatenate([extrapolation_weights(sequence[:j + 1]), np.zeros(k - j - 1)])
            - np.concatenate([[0.0], extrapolation_weights(sequence[1:j + 1]), np.zeros(k - j - 1)])
            for j in range(1, k)]


def lagrange_weights(nodes, t) -> np.ndarray:
    """The weights of the values at ``nodes`` in their Lagrange polynomial at ``t`` (on
    Python floats: numpy's scalars cost ten times as much); at several times ``t`` (an
    array), a row of weights per time, the same products in the same order."""
    if np.ndim(t):
        x = np.asarray(nodes, dtype=float)
        same = np.eye(len(x), dtype=bool)
        # factors[:, i, j] = (t - x_j) / (x_i - x_j), 1 for j = i, multiplied over j in order
        factors = (np.asarray(t, dtype=float)[:, None, None] - x) / np.where(same, 1.0, x[:, None] - x)
        factors[:, same] = 1.0
        return factors.prod(axis=2)
    nodes = np.asarray(nodes, dtype=float).tolist()
    t = float(t)
    w = []
    for i, x in enumerate(nodes):
        wi = 1.0
        for j, y in enumerate(nodes):
            if j != i:
                wi *= (t - y) / (x - y)
        w.append(wi)
    return np.array(w)


#: the limits of the :func:`single_threaded_blas` contexts entered, innermost last: ``(names of
#: the libraries limited since it was entered, their limits)``
_LIMITS = []


@contextmanager
def single_threaded_blas():
    """Context: BLAS on one thread. The master's linear algebra is on matrices of the size
    of the coupling inputs (tens to a few hundred), where a multithreaded BLAS costs more
    than it gives (OpenBLAS solves a 120x120 system about 100 times slower on 2 threads
    than on one on a 2-core machine), and the worker processes already use the cores. A
    library with its own BLAS loaded meanwhile is limited by :func:`blas_loaded`."""
    from threadpoolctl import threadpool_limits
    entered = (set(), [threadpool_limits(limits=1, user_api="blas")])
    _LIMITS.append(entered)
    try:
        yield
    finally:
        _LIMITS.pop()
        for limits in reversed(entered[1]):
            limits.restore_original_limits()


def blas_loaded(name):
    """The library ``name``, with a BLAS of its own (scipy's, under its sparse LU), is loaded:
    inside :func:`single_threaded_blas` its BLAS goes on one thread too, until the context
    ends (the limits cover the libraries loaded when it was entered). A multithreaded
    OpenBLAS waits for its threads spinning: at real-time priority (``chrt -f``) a master
    and its worker on two cores, each spinning for a thread the other kept off its core,
    never went on."""
    if _LIMITS and name not in _LIMITS[-1][0]:
        from threadpoolctl import threadpool_limits
        _LIMITS[-1][0].add(name)
        _LIMITS[-1][1].append(threadpool_limits(limits=1, user_api="blas"))


def hermite5(t, a, b, ya, da, dda, yb, db, ddb):
    """Quintic Hermite interpolation on ``[a, b]`` from values, first and second
    derivatives at both ends."""
    h = b - a
    s = (t - a) / h
    s2, s3 = s * s, s * s * s
    h00 = 1 - 10 * s3 + 15 * s3 * s - 6 * s3 * s2
    h01 = 1 - h00
    h10 = s - 6 * s3 + 8 * s3 * s - 3 * s3 * s2
    h11 = -4 * s3 + 7 * s3 * s - 3 * s3 * s2
    h20 = 0.5 * (s2 - 3 * s3 + 3 * s3 * s - s3 * s2)
    h21 = 0.5 * (s3 - 2 * s3 * s + s3 * s2)
    return h00 * ya + h01 * yb + h * (h10 * da + h11 * db) + h * h * (h20 * dda + h21 * ddb)
