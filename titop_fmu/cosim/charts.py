"""Differences and steps of vectors holding angles and attitudes: plain angles modulo 2 pi,
3-2-1 Euler triples on the rotation group (local rotation-vector coordinates).

The master extrapolates, averages, interpolates and iterates on coupling inputs and
recorded values. Done component-wise on Euler angles, all of these go wrong near
``theta = +-pi/2``, where ``phi`` and ``psi`` turn fast (or jump) while the attitude
turns slowly. A :class:`Chart` does them on the attitude instead: ``a - b`` becomes
``b^-1 a`` as a rotation vector in ``b``'s frame, ``b + d`` becomes ``b e^{(*d)}``
back in Euler angles (``theta`` in ``[-pi/2, pi/2]``). Vectors without angles are
untouched: the arithmetic is then exactly ``-`` and ``+``.

The master does this arithmetic at every coupling iteration: with angles, it runs in its C
library (``master.c``, ``titop_chart_*``: the Python below operation for operation, a fifth
of its cost), and in the Python below where there is no C compiler; the same results, bit
for bit.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..spatial import quat_rotation_vectors, quats_from_euler, rotated_eulers
from . import clib
from .numerics import wrap

#: the arithmetic of charts with angles in C where it can be had (False: in Python)
COMPILED = True


class Chart:
    """The coordinates of a vector of ``n`` values: ``angles`` (bool mask) are angles,
    each row of ``triples`` (``(m, 3)`` positions) the ``phi, theta, psi`` of one attitude."""

    def __init__(self, n: int, angles=None, triples=()):
        self.n = n
        self.triples = np.asarray(triples, dtype=int).reshape(-1, 3)
        self.in_triple = np.zeros(n, dtype=bool)
        self.in_triple[self.triples.ravel()] = True
        self.angles = np.zeros(n, dtype=bool) if angles is None else np.asarray(angles, dtype=bool).copy()
        self.angles &= ~self.in_triple                  # plain angles: wrapped differences
        self.any_angle = bool(self.angles.any())
        self.plain = not self.any_angle and not len(self.triples)
        self._tri = self.triples.ravel()                # the positions of every triple, in order
        self._quats = {}                                # attitudes -> their quaternions (minus)
        self._c = None                                  # its _Compiled arithmetic, made at first use

    def __getstate__(self):                             # to a worker process: no ctypes objects
        state = dict(self.__dict__)
        state["_c"], state["_quats"] = None, {}
        return state

    def _compiled(self):
        """The chart's :class:`_Compiled` arithmetic, or False (plain, or no C library)."""
        c = self._c
        if c is None:
            c = self._c = _Compiled(self) if not self.plain and COMPILED and clib.library() else False
        return c

    def minus(self, a, b):
        """``a (-) b``: the difference of two vectors (attitudes: ``b^-1 a`` as a rotation vector)."""
        c = self._compiled()
        if c:
            return c.minus(a, b)
        a = np.asarray(a, dtype=float)
        d = a - b
        if self.plain:
            return d
        if self.any_angle:
            d[self.angles] = wrap(d[self.angles])
        if self._tri.size:
            d[self._tri] = quat_rotation_vectors(self._quat(a), self._quat(b))
        return d

    def _quat(self, v):
        """The quaternions of the attitudes of ``v``, kept by value: the iterations difference
        the same vectors again and again (a base step's start, its iterates, the history of the
        predictor), and the trigonometry is most of a difference's cost."""
        key = tuple(v[self._tri].tolist())
        q = self._quats.get(key)
        if q is None:
            if len(self._quats) >= 4096:
                self._quats.clear()
            q = self._quats[key] = quats_from_euler(key)
        return q

    def plus(self, b, d):
        """``b (+) d``: ``b`` moved by the difference ``d`` (attitudes: ``b e^{(*d)}``)."""
        c = self._compiled()
        if c and self._tri.size:
            return c.plus(b, d)
        out = np.asarray(b, dtype=float) + d
        if self._tri.size:
            out[self._tri] = rotated_eulers(b[self._tri].tolist(), d[self._tri].tolist())
        return out

    def offset(self, weights, values, ref):
        """``sum_i w_i (values_i (-) ref)``: a weighted sum of differences from ``ref`` (the
        attitudes' rotation vectors summed on floats, in the same order)."""
        c = self._compiled()
        if c:
            return c.offset(weights, values, ref)
        out = np.zeros(len(ref))
        if not self._tri.size:
            for w, v in zip(weights, values):
                out += w * self.minus(v, ref)
            return out
        q_ref, acc = self._quat(ref), [0.0] * len(self._tri)
        for w, v in zip(weights, values):
            v = np.asarray(v, dtype=float)
            d = v - ref
            if self.any_angle:
                d[self.angles] = wrap(d[self.angles])
            out += w * d
            w = float(w)
            acc = [a + w * x for a, x in zip(acc, quat_rotation_vectors(self._quat(v), q_ref))]
        out[self._tri] = acc
        return out

    def combine(self, weights, values, ref):
        """``ref (+) sum_i w_i (values_i (-) ref)``: the weighted combination of ``values``
        (weights summing to 1: an interpolation or extrapolation), taken on the chart."""
        return self.plus(ref, self.offset(weights, values, ref))

    def restricted(self, positions) -> Chart:
        """The chart of the sub-vector at ``positions`` (attitudes split by it: plain angles)."""
        positions = np.asarray(positions, dtype=int)
        where = {int(p): i for i, p in enumerate(positions)}
        triples = [[where[int(k)] for k in tr] for tr in self.triples if all(int(k) in where for k in tr)]
        angles = self.angles[positions].copy()
        for tr in self.triples:
            for k in tr:
                if int(k) in where and not all(int(j) in where for j in tr):
                    angles[where[int(k)]] = True
        return Chart(len(positions), angles, triples)


#: the chart of one attitude, ``[phi, theta, psi]``
ATTITUDE = Chart(3, triples=[(0, 1, 2)])


class _Compiled:
    """A chart's arithmetic in the master's C library: its positions and buffers, and the calls'
    arguments converted once (a conversion per call would cost as much as the arithmetic)."""

    def __init__(self, chart: Chart):
        n = chart.n
        self.ang = np.flatnonzero(chart.angles).astype(np.intc)
        self.tri = np.ascontiguousarray(chart.triples.ravel(), dtype=np.intc)
        self.a, self.b, self.out, self.work = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n + len(self.tri))
        n_, na, m = ctypes.c_int(n), ctypes.c_int(len(self.ang)), ctypes.c_int(len(self.tri) // 3)
        a, b, out, ang, tri = (clib.address(x) for x in (self.a, self.b, self.out, self.ang, self.tri))
        self._minus, self._plus, self._offset = (clib.function(f"titop_chart_{f}", None) for f in ("minus", "plus", "offset"))
        self._minus_args = (n_, a, b, na, ang, m, tri, out)
        self._plus_args = (n_, b, a, m, tri, out)
        self._offset_tail = (b, na, ang, m, tri, out, clib.address(self.work))
        self._n, self._k = n_, 0

    def minus(self, a, b):
        np.copyto(self.a, a)
        np.copyto(self.b, b)
        self._minus(*self._minus_args)
        return self.out.copy()

    def plus(self, b, d):
        np.copyto(self.b, b)
        np.copyto(self.a, d)
        self._plus(*self._plus_args)
        return self.out.copy()

    def offset(self, weights, values, ref):
        k = len(values)
        if k > self._k:                                 # room for k values
            self._k = k
            self.w, self.v = np.zeros(k), np.zeros((k, len(self.a)))
            self._offset_head = (clib.address(self.w), clib.address(self.v))
        self.w[:k] = weights
        self.v[:k] = values
        np.copyto(self.b, ref)
        self._offset(self._n, ctypes.c_int(k), *self._offset_head, *self._offset_tail)
        return self.out.copy()
