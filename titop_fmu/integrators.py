"""A small deterministic ODE integrator for communication steps.

Dormand-Prince 5(4) with error control (Hairer, Norsett & Wanner, Solving
ODEs I, II.5). Written out here rather than calling scipy because a unit
integrates many short steps: the call must be cheap, and it must be
bit-for-bit repeatable from a saved state (the step-size guess is part of the
unit's state).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import SolverError

# Butcher tableau: row i of _A gives stage i + 1 from stages 0..i (lower triangular)
_A = np.array([
    [1 / 5, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
])
_B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_E = _B - np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
#: the stages' times within a step (fractions of it)
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])


#: most internal steps in one call
MAX_STEPS = 100_000


def dopri5(f, x, h, rtol=1e-10, atol=1e-10, h_guess=None, max_steps=MAX_STEPS, t0=None):
    """Integrate ``xdot = f(x)`` (autonomous over the step) over a duration ``h``; with a time
    ``t0``, ``xdot = f(t, x)`` from ``t = t0`` (each stage at its own time).

    Returns ``(x_end, h_next, n_evals)``; ``h_next`` is the step-size guess to
    pass to the next call. Raises :class:`SolverError` if the step size
    collapses or a derivative is not finite.
    """
    x = np.asarray(x, dtype=float)
    if h <= 0 or x.size == 0:
        return x.copy(), h_guess, 0
    if t0 is not None:
        g, f = f, lambda x, c: g(t0 + (t + c * hs), x)
    else:
        g, f = f, lambda x, c: g(x)
    t, hs = 0.0, min(h, h_guess) if h_guess else h
    k1 = f(x, 0.0)
    n = 1
    K = np.empty((7, x.size))                         # the stages' derivatives
    for _ in range(max_steps):
        h_free = hs                                   # the controller's step, before the end cuts it
        if t + hs >= h * (1 - 1e-12):
            hs = h - t
        K[0] = k1
        for i in range(1, 7):
            xi = x + hs * _A[i - 1, :i].dot(K[:i])
            K[i] = f(xi, _C[i])
        n += 6
        x_new = xi                                    # stage 7 is the 5th-order solution (FSAL)
        q = hs * _E.dot(K) / (atol + rtol * np.maximum(np.abs(x), np.abs(x_new)))
        err = math.sqrt(q.dot(q) / q.size)                 # RMS of the scaled error
        if not math.isfinite(err):
            raise SolverError("non-finite state derivative during a step")
        if err <= 1.0:
            t += hs
            x, k1 = x_new, K[6].copy()
            factor = 5.0 if err == 0 else min(5.0, 0.9 * err ** -0.2)
            h_last = hs
            hs *= factor
            if t >= h * (1 - 1e-12):
                # a last step cut short by the end (a sliver, at times) does not shrink the next call's
                return x, max(h_free, min(hs, h_last * 5.0)), n
        else:
            hs *= max(0.2, 0.9 * err ** -0.2)
            if hs < 1e-14 * max(1.0, h):
                raise SolverError(f"step size underflow ({hs:g} s) in a communication step")
    raise SolverError(f"more than {max_steps} internal steps in one communication step")
