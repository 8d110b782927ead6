"""The step Jacobian ``J = dG/dz`` of the coupling iteration (:mod:`.run`) and its solves.

``J = c/2 (I - M)^-1 P``: ``P`` the measured step sensitivities (base step
``h_ref``), ``M`` the feedthrough, ``c = h / h_ref`` the rescaling with the base
step, plus Broyden's rank-one corrections along the iterations. The iteration
solves ``(I - J) corr = r`` at every iteration and needs ``J x`` and ``|J|``.

Two representations, by size:

* **dense** (up to :data:`DENSE_UP_TO` coupling inputs): ``J`` and ``(I - J)^-1``,
  the inverse formed once per ``P`` and kept through the Broyden updates by
  Sherman-Morrison, O(n^2) per iteration. Small systems take hundreds of updates
  between two measurements of ``P``: a dense inverse is the cheapest there. When the
  base step changes (the macro step does at nearly every interval), the inverse at the
  step before is the preconditioner of a few refinements, O(n^2) each, of the solve
  with ``J`` at the new step (:data:`MAX_REFINE`, to :data:`REFINED`), and is formed
  again, O(n^3), only where they do not converge: formed at every change of the step,
  the inverse took 65 % of a 30 s run of ``examples/spacecraft_gimbal.toml``.
* **sparse** (larger): ``M`` and ``P`` are block-sparse (same-unit pairs), so
  ``I - J = (I - M)^-1 B`` with ``B = (I - M) - c/2 P`` sparse with the
  connections' structure; one sparse LU of ``B`` per ``P`` or ``h`` (O(N) on a
  tree), the Broyden corrections kept as a low-rank term ``c U V^T`` and solved by
  Woodbury's identity. No O(n^3) inverse: on a 32-body chain (768 coupling
  inputs) the dense inverse took 31 to 118 ms, and was formed 31 times in 0.1 s
  simulated; the sparse LU takes 1.4 ms. Past :data:`MAX_RANK` corrections the
  low-rank term would cost more than it saves: :meth:`StepJacobian.update` declines
  the correction, and the coupling iteration measures ``P`` again (the dense ``J``
  it once went to instead cost 6 ms an update and took 7.3 of the 16.8 s of a 32-body
  chain's 0.5 s; a fresh ``P`` there costs 29 ms per 64 corrections).
"""

from __future__ import annotations

import numpy as np

from .loop import DENSE_UP_TO, splu

#: Broyden corrections kept as a low-rank term (past them, a fresh P)
MAX_RANK = 64
#: refinements of a dense solve with an inverse formed at another base step, at most ...
MAX_REFINE = 8
#: ... until the last changed the solution by this, relative to it (else the inverse is formed again):
#: the correction of a coupling iteration that goes on until its change is within the tolerance
#: (on the balloon, 1e-2 and 1e-6 took the same iterations, 14355 and 14381; 1e-1, 14581)
REFINED = 1e-2


class StepJacobian:
    """``dG/dz`` from measured step sensitivities (see the module docstring), of ``n`` coupling
    inputs. Dense, it is kept in place (the base steps in C, :mod:`.core`, use these arrays):
    ``J`` and ``Jinv``, in Fortran order (by columns: the C's products with them are sums of
    columns), and ``jac = [h, Jinv formed, h_exact]``, ``h`` the base step ``J`` is at
    (0: none yet), ``Jinv = (I - J)^-1`` exactly where ``h == h_exact`` (formed at that step,
    the Broyden updates since made at it), a preconditioner otherwise."""

    def __init__(self, n: int, dense_up_to: int | None = None):
        dense_up_to = DENSE_UP_TO if dense_up_to is None else dense_up_to
        self.dense = n <= dense_up_to
        m = n if self.dense else 0
        self.J, self.Jinv, self.jac = np.zeros((m, m), order="F"), np.zeros((m, m), order="F"), np.zeros(3)
        self._sparse = None             # sparse: _LowRank

    @property
    def ready(self) -> bool:
        return self.jac[0] > 0.0

    @property
    def h(self) -> float:
        return float(self.jac[0])

    def reset(self, P, sens, h):
        """``P`` measured over a base step ``h``; ``sens`` holds the feedthrough ``M`` and
        solves with ``I - M``."""
        if self.dense:
            self.J[:] = 0.5 * sens.solve(P)
        else:
            self._sparse = _LowRank.measured(P, sens)
        self.jac[:] = h, 0.0, 0.0

    def _at(self, h):
        """Rescale to the base step ``h`` (dense: the inverse stays, at its own step); a step
        that differs from the last one only by the rounding of ``t + H k/n`` (an ulp) keeps
        ``J`` and its factors."""
        h0 = self.jac[0]
        if abs(h - h0) > 1e-12 * h0:
            if self.dense:
                self.J *= h / h0
            else:
                self._sparse.rescale(h / h0)
            self.jac[0] = h

    def norm(self, h) -> float:
        """``|J|_inf`` at the base step ``h`` (sparse: of ``J`` without its Broyden corrections)."""
        self._at(h)
        if self.dense:
            return float(np.abs(self.J).sum(axis=1).max())
        return self._sparse.norm()

    def correction(self, h, r):
        """``(I - J)^-1 r`` with ``J`` at the base step ``h``."""
        self._at(h)
        if not self.dense:
            return self._sparse.solve(r)
        if not self.jac[1]:
            self._invert()
        x = self.Jinv @ r
        if self.jac[2] == self.jac[0]:
            return x
        for _ in range(MAX_REFINE):
            d = self.Jinv @ (r - x + self.J @ x)
            x += d
            if np.abs(d).max() <= REFINED * np.abs(x).max():
                return x
        self._invert()
        return self.Jinv @ r

    def _invert(self):
        self.Jinv[:] = np.linalg.inv(np.eye(len(self.J)) - self.J)
        self.jac[1:] = 1.0, self.jac[0]

    def update(self, dz, dG, w) -> bool:
        """Broyden's update along ``dz`` (``G`` changed by ``dG``) in the inputs scaled by
        ``w``: ``J += (dG - J dz) (w^2 dz)^T / |w dz|^2``. False, ``J`` unchanged, where the
        sparse low-rank term holds :data:`MAX_RANK` corrections already: time for a fresh ``P``."""
        x = dz * w
        n2 = float(x @ x)
        if n2 <= 0:
            return True
        v = x * w
        if not self.dense:
            return self._sparse.add((dG - self._sparse.times(dz)) / n2, v)
        J, inv = self.J, self.Jinv
        u = (dG - J @ dz) / n2
        J += np.outer(u, v)
        if self.jac[1]:                                 # (A - u v^T)^-1, A = I - J before
            Au, vA = inv @ u, v @ inv
            den = 1.0 - float(v @ Au)
            if abs(den) > 1e-8:
                inv += np.outer(Au, vA) / den
                if self.jac[2] != self.jac[0]:
                    self.jac[2] = 0.0                   # an update at another step: inexact at any
            else:
                self.jac[1] = 0.0
        return True

    def snapshot(self):
        """What :meth:`restore` needs; the dense ``J`` and its inverse, which the updates change
        in place, are copied (the low-rank term's arrays never change)."""
        return (self.jac.copy(), self.J.copy(), self.Jinv.copy() if self.jac[1] else None,
                None if self._sparse is None else self._sparse.snapshot())

    def restore(self, snap):
        jac, J, Jinv, sparse = snap
        np.copyto(self.J, J)
        if Jinv is not None:
            np.copyto(self.Jinv, Jinv)
        np.copyto(self.jac, jac)
        self._sparse = None if sparse is None else _LowRank(*sparse)


class _LowRank:
    """``J = c (J0 + U V^T)``, ``J0 = 1/2 (I - M)^-1 P``, with ``I - M`` and ``P`` sparse."""

    def __init__(self, P, IM, c=1.0, U=None, V=None, lu_IM=None):
        n = P.shape[0]
        self.P, self.IM = P, IM                     # scipy.sparse, CSC
        self.c = c
        self.U = np.zeros((n, 0)) if U is None else U   # the corrections, at c = 1: (n, k), (k, n)
        self.V = np.zeros((0, n)) if V is None else V
        self._lu_IM = splu(IM) if lu_IM is None else lu_IM
        self._norm0 = None
        self._factor()

    @classmethod
    def measured(cls, P, sens):
        """From the dense ``P`` (on ``M``'s block pattern) and the factors of ``I - M`` that ``sens`` holds."""
        IM, lu = sens.factors()
        return cls(sens.sparse(P), IM, lu_IM=lu)

    def _factor(self):
        """The LU of ``B = (I - M) - c/2 P`` and Woodbury's ``Y = A^-1 c U``, ``S = 1 - V^T Y``
        (``A = I - c J0 = (I - M)^-1 B``)."""
        self._lu_B = splu((self.IM - (0.5 * self.c) * self.P).tocsc())
        self._Y = np.zeros((self.P.shape[0], 0))
        if self.V.shape[0]:
            self._Y = self._A_solve(self.c * self.U)
        self._woodbury()

    def _woodbury(self):
        k = self.V.shape[0]
        self._S = np.eye(k) - (self.V @ self._Y if k else np.zeros((0, 0)))

    def _A_solve(self, X):
        """``A^-1 X = B^-1 (I - M) X``."""
        return self._lu_B.solve(self.IM @ X)

    def rescale(self, ratio):
        self.c *= ratio
        self._factor()

    def norm(self) -> float:
        """``|c J0|_inf`` by Hager's estimator (Higham's deterministic form) on ``J0^T``: a
        lower bound, exact in most cases, from a few solves instead of the dense ``J0``
        (O(n^2): 17 ms for a 32-body chain, at every ``P``)."""
        if self._norm0 is None:
            n = self.P.shape[0]
            J0 = lambda x: 0.5 * self._lu_IM.solve(self.P @ x)                       # noqa: E731
            J0T = lambda x: 0.5 * (self.P.T @ self._lu_IM.solve(x, trans="T"))       # noqa: E731
            x, est = np.full(n, 1.0 / n), 0.0
            for _ in range(5):
                y = J0T(x)
                est = float(np.abs(y).sum())
                z = J0(np.where(y >= 0, 1.0, -1.0))
                j = int(np.argmax(np.abs(z)))
                if abs(z[j]) <= z @ x:
                    break
                x = np.zeros(n)
                x[j] = 1.0
            self._norm0 = est
        return self.c * self._norm0

    def times(self, x):
        """``J x``."""
        out = 0.5 * self._lu_IM.solve(self.P @ x)
        if self.V.shape[0]:
            out += self.U @ (self.V @ x)
        return self.c * out

    def solve(self, r):
        """``(I - J)^-1 r = (A - c U V^T)^-1 r`` by Woodbury's identity."""
        x = self._A_solve(r)
        if self.V.shape[0]:
            x = x + self._Y @ np.linalg.solve(self._S, self.V @ x)
        return x

    def add(self, u, v) -> bool:
        """Add the correction ``u v^T`` (at the current ``c``); False, nothing added, when the
        low-rank term has :data:`MAX_RANK` terms already."""
        if self.V.shape[0] >= MAX_RANK:
            return False
        self.U = np.column_stack([self.U, u / self.c])
        self.V = np.vstack([self.V, v])
        self._Y = np.column_stack([self._Y, self._A_solve(u)])
        self._woodbury()
        return True

    def snapshot(self):
        """The arguments that make it again (none of them changes in place)."""
        return self.P, self.IM, self.c, self.U, self.V, self._lu_IM
