"""Dense output: the observed values between the mesh points of the accepted macro intervals."""

from __future__ import annotations

import numpy as np

from .charts import ATTITUDE, Chart
from .numerics import hermite5, lagrange_weights, wrap


def dense(mesh_t, mesh_v, grid, chart: Chart | None = None, degree=5):
    """Values at ``grid`` from the values at ``mesh_t``.

    ``mesh_v`` is ``(N, n)`` values, or ``(N, 3, n)`` values with first and
    second derivatives. Between two mesh points a column with both derivatives
    known at both ends is a quintic Hermite polynomial, any other column a local
    Lagrange polynomial through the ``degree + 1`` mesh points around. The
    ``chart``'s angles are unwrapped first and wrapped back to ``[-pi, pi)``. Its
    attitudes are interpolated on the rotation group (Lagrange in rotation-vector
    coordinates about the mesh point before), except between two mesh points where
    the Euler angles' derivatives are known and ``|cos(theta)| >= 1/2``: there the
    Euler angles are smooth, their rates at most twice the angular velocity, and
    Hermite interpolation of the unwrapped angles is the more accurate.
    """
    mesh_t = np.asarray(mesh_t, dtype=float)
    cuts = np.flatnonzero(np.diff(mesh_t) == 0) + 1
    if cuts.size:                       # time events: the left and the right limits at one time
        return _pieces(mesh_t, np.asarray(mesh_v, dtype=float), np.asarray(grid, dtype=float), chart, degree, cuts)
    mv = np.array(mesh_v, dtype=float)
    has_d = mv.ndim == 3
    v = mv[:, 0, :].copy() if has_d else mv.copy()
    chart = chart or Chart(v.shape[1])
    ang = chart.angles | chart.in_triple               # unwrapped for Hermite and Lagrange alike
    if ang.any():
        v[:, ang] = np.unwrap(v[:, ang], axis=0)
    n = len(mesh_t)
    grid = np.asarray(grid, dtype=float)
    out = np.empty((len(grid), v.shape[1]))
    idx = np.clip(np.searchsorted(mesh_t, grid, side="right") - 1, 0, n - 1)
    k = min(degree + 1, n)
    # a grid point on a mesh point takes its values; the others, interval by interval
    tol = 1e-12 * np.maximum(1.0, np.abs(grid))
    on = np.abs(mesh_t[idx] - grid) <= tol
    on_next = ~on & (idx + 1 < n) & (np.abs(mesh_t[np.minimum(idx + 1, n - 1)] - grid) <= tol)
    out[on], out[on_next] = v[idx[on]], v[idx[on_next] + 1]
    between = np.flatnonzero(~(on | on_next))
    for g in np.split(between, np.flatnonzero(np.diff(idx[between])) + 1) if between.size else ():
        i, t = int(idx[g[0]]), grid[g]
        lo = int(min(max(i - (k // 2 - 1), 0), n - k))
        w = lagrange_weights(mesh_t[lo:lo + k], t)
        out[g] = w @ v[lo:lo + k]
        if has_d and i + 1 < n:
            d1, d2 = mv[i:i + 2, 1, :], mv[i:i + 2, 2, :]
            ok = np.all(np.isfinite(d1), axis=0) & np.all(np.isfinite(d2), axis=0)
            if ok.any():
                out[np.ix_(g, ok)] = hermite5(t[:, None], mesh_t[i], mesh_t[i + 1], v[i, ok], d1[0, ok], d2[0, ok],
                                              v[i + 1, ok], d1[1, ok], d2[1, ok])
        for tr in chart.triples:
            if has_d and i + 1 < n and ok[tr].all() and min(abs(np.cos(v[i, tr[1]])), abs(np.cos(v[i + 1, tr[1]]))) >= 0.5:
                continue
            for r, wr in zip(g, w):
                x = ATTITUDE.combine(wr, v[lo:lo + k, tr], v[i, tr])
                out[r, tr] = np.unwrap(np.vstack([v[i, tr], x]), axis=0)[1]
    if ang.any():
        out[:, ang] = wrap(out[:, ang])
    return out


def _pieces(mesh_t, mesh_v, grid, chart, degree, cuts):
    """:func:`dense` on each piece of a mesh cut at its events (a time given twice: the left,
    then the right limits), a grid point at an event taking the right limit (the values are
    right-continuous), nothing interpolated across an event."""
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(mesh_t)]])
    piece = np.clip(np.searchsorted(mesh_t[starts], grid, side="right") - 1, 0, len(starts) - 1)
    out = np.empty((len(grid), mesh_v.shape[-1]))
    for k, (a, b) in enumerate(zip(starts, ends)):
        sel = piece == k
        if sel.any():
            out[sel] = dense(mesh_t[a:b], mesh_v[a:b], grid[sel], chart, degree)
    return out
