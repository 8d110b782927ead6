"""Outputs and coupling inputs at a communication point: the algebraic loops solved.

At a communication point the states are fixed; what is left is algebraic:
evaluate the outputs that do not depend on a loop (the
:attr:`~.structure.Structure.pre` schedule, once), then solve ``r(z) = 0`` by
Newton on the loops' unknowns ``z``, every coupling input of every loop
(:attr:`~.structure.Structure.unknowns`), where ``r(z)`` is "what the source
output of each unknown becomes when every unit is evaluated at its inputs
``z``, minus ``z``".

The Jacobian is built from the local direct-feedthrough sensitivities of each
unit, ``M[m, k] = d(source of coupling input m) / d(coupling input k)`` for ``m``,
``k`` on the same unit: its directional derivatives where its type says it gives
them (``fmi2GetDirectionalDerivative``; TITOP blocks: exact, being affine in the
loop variables), else input perturbations (set an input, read the outputs, no
``doStep``: one extra evaluation per coupling input with a declared dependency),
and for the coupling inputs of attitudes, perturbed about rotation-vector axes
(:mod:`.charts`). Then ``J = dr/dz = M[z, z] - I``, sparse with the
connections (:class:`Sensitivities`). ``M`` is kept, ``J`` corrected by Broyden
updates along the Newton steps, and reused at later points; ``M`` is measured
again only when the iterations still needed at the observed rate would cost
more unit evaluations than measuring it (TITOP blocks are affine in the loop
variables at fixed state, so a fresh ``M`` solves the loop in one iteration). It
is also the feedthrough part of the step Jacobian of :mod:`.run`.

Non-convergence is an error naming the loop, the time and the residual.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SolverError
from .charts import ATTITUDE
from .numerics import blas_loaded, wrap_where
from .plan import compiled as compiled_plan
from .structure import Structure


class LoopError(SolverError):
    """An algebraic loop did not converge; ``.loop``, ``.time``, ``.residual`` say which, when, how far."""

    def __init__(self, message, loop=None, time=None, residual=None):
        super().__init__(message)
        self.loop, self.time, self.residual = loop, time, residual


#: systems of up to this many coupling inputs solve with ``I - M`` (and the step Jacobian,
#: :mod:`.step_jacobian`) densely
DENSE_UP_TO = 256
#: past DENSE_UP_TO, the Broyden corrections of ``J^-1`` kept in product form; then they start
#: again from ``M`` (a 32-body chain made 58 on average between two measurements of ``M``)
LOOP_RANK = 64


def splu(A):
    """scipy's sparse LU of ``A`` (CSC); ``np.linalg.LinAlgError`` if ``A`` is singular."""
    from scipy.sparse.linalg import splu as _splu   # here: the FMUs import this package without scipy

    blas_loaded("scipy")
    try:
        return _splu(A)
    except RuntimeError as e:                       # "Factor is exactly singular"
        raise np.linalg.LinAlgError(str(e)) from None


class Sensitivities:
    """The shared local Jacobian ``M`` (coupling inputs x coupling inputs, block-sparse:
    only same-unit pairs) and the Newton steps of the loops derived from it. Shared by the
    runs of a master (their states differ by their coupling error only).

    ``I - M`` has the sparsity of the connections and a tree's factors do not fill in:
    one sparse LU per ``M``, O(N) (up to :data:`DENSE_UP_TO` coupling inputs a dense
    solve, as fast there). ``J^-1`` (unknowns x unknowns) is ``-[(I - M)^-1]`` on the
    unknowns' rows and columns, which Broyden's updates along the Newton steps correct
    (Sherman-Morrison). Up to :data:`DENSE_UP_TO` coupling inputs it is formed, ``H``,
    and a Newton step is one product with it; past it, ``H`` would cost a solve per unknown
    at every ``M`` and O(n^2) per update (1.9 s of 6 s on a 32-body chain), and ``J^-1``
    is kept in product form, ``H0 + A B^T``: a product with ``H0`` is one sparse solve, the
    updates add columns to ``A`` and ``B`` (at most :data:`LOOP_RANK`, then they start
    again from ``H0``)."""

    def __init__(self, st: Structure):
        self.st = st
        self.unknowns = st.unknowns
        self._M = None
        # where the base steps in C measure M (:mod:`.core`): their copy of it, which they measure in
        # place, kept equal to M; M_fresh set when they did, until M is read
        self.Mc = None
        self.M_fresh = np.zeros(1)
        self.refreshes = 0
        self._lu = None                 # (I - M, its sparse LU)
        self._pattern = None            # M's block pattern in CSC order (sparse)
        n = len(st.unknowns)
        self.product = st.n_cin > DENSE_UP_TO
        # J^-1, Broyden-updated, kept in place (the base steps in C, :mod:`.core`, use these
        # arrays): H, largest |M_ij|, and H's state: -1 no M yet, 0 H not formed from M, 1 formed
        # (in product form: the LU of I - M made, the corrections counted from there)
        self.H = np.zeros((0, 0) if self.product else (n, n))
        self.M_max = np.zeros(1)
        self.H_state = np.array([-1.0])
        # in product form, J^-1 = H0 + A[:, :k] B[:, :k]^T
        m = LOOP_RANK if self.product else 0
        self._A, self._B, self._k = np.zeros((n, m)), np.zeros((n, m)), 0

    @property
    def M(self):
        """The local Jacobian ``M`` last measured (by the C, where it measured it last)."""
        if self.M_fresh[0]:
            self.M_fresh[0] = 0.0
            self._M, self._lu = self.Mc.copy(), None
        return self._M

    @M.setter
    def M(self, M):
        self._M = M
        self.M_fresh[0] = 0.0
        if self.Mc is not None and M is not None:
            np.copyto(self.Mc, M)

    def set_M(self, M):
        self.M = M
        self.M_max[0] = self._largest(M)
        self._lu = None
        self.H_state[0] = 0.0
        self.refreshes += 1

    def snapshot(self):
        if self.H_state[0] != 1.0:
            return self.M, None
        k = self._k
        return self.M, (self._A[:, :k].copy(), self._B[:, :k].copy()) if self.product else self.H.copy()

    def restore(self, snap):
        """Back to a :meth:`snapshot` (its matrix ``M`` is taken, not copied)."""
        self.M, H = snap
        self.M_max[0] = 0.0 if self.M is None else self._largest(self.M)
        self._lu = None
        self.H_state[0] = -1.0 if self.M is None else 0.0 if H is None else 1.0
        if H is None:
            return
        if self.product:
            self._k = k = H[0].shape[1]
            self._A[:, :k], self._B[:, :k] = H
        else:
            np.copyto(self.H, H)

    def pattern(self):
        """``M``'s block pattern (each unit's rows x its coupling inputs: ``M``'s and ``P``'s) in
        CSC order: ``(positions in the flattened matrix, their rows, the columns' starts)``, kept."""
        if self._pattern is None:
            n = self.st.n_cin
            r = np.concatenate([np.repeat(lay.rows, len(lay.cin)) for lay in self.st.layouts] + [[]]).astype(int)
            c = np.concatenate([np.tile(lay.cin, len(lay.rows)) for lay in self.st.layouts] + [[]]).astype(int)
            flat = np.unique(c * n + r)             # by column, then row: CSC order, each entry once
            cols, rows = np.divmod(flat, n)
            self._pattern = (rows * n + cols, rows, np.searchsorted(cols, np.arange(n + 1)))
        return self._pattern

    def _largest(self, M):
        """``max |M_ij|``, over the block pattern (on a 64-body chain, 1536 coupling inputs: 0.11 ms, the
        whole matrix 1.3 ms)."""
        return float(np.abs(M.ravel()[self.pattern()[0]]).max(initial=0.0))

    def sparse(self, X):
        """The dense ``X`` (coupling inputs x coupling inputs) on ``M``'s block pattern, as a CSC
        matrix: its entries gathered, not searched (scipy's search of a 768 x 768 matrix took 2 ms)."""
        from scipy import sparse                # here: the FMUs import this package without scipy

        at, rows, indptr = self.pattern()
        return sparse.csc_matrix((X.ravel()[at], rows, indptr), shape=X.shape)

    def factors(self):
        """``(I - M, its sparse LU)``, formed once per ``M``; ``np.linalg.LinAlgError`` if
        ``I - M`` is singular."""
        if self._lu is None:
            from scipy import sparse            # here: the FMUs import this package without scipy

            IM = (sparse.identity(self.st.n_cin, format="csc") - self.sparse(self.M)).tocsc()
            self._lu = IM, splu(IM)
        return self._lu

    def solve(self, X):
        """``(I - M)^-1 X``; ``np.linalg.LinAlgError`` if ``I - M`` is singular. Up to
        :data:`DENSE_UP_TO` coupling inputs by a dense LU (numpy's): as fast there, and a
        small system's run never imports scipy (a fifth of a second)."""
        n = self.st.n_cin
        if n <= DENSE_UP_TO:
            return np.linalg.solve(np.eye(n) - self.M, X)
        return self.factors()[1].solve(X)

    def form_H(self):
        """``H = J^-1`` from ``M`` (in product form: the LU of ``I - M``), unless it is formed;
        ``np.linalg.LinAlgError`` if ``I - M`` is singular."""
        if self.H_state[0] != 1.0:
            if self.product:
                self.factors()
                self._k = 0
            else:
                n, u = self.st.n_cin, self.unknowns
                E = np.zeros((n, len(u)))
                E[u, np.arange(len(u))] = 1.0
                self.H[:] = -self.solve(E)[u]
            self.H_state[0] = 1.0

    def _H0_times(self, v, trans=False):
        """``H0 v`` (or ``H0^T v``), ``H0 = -[(I - M)^-1]`` on the unknowns: one sparse solve."""
        x = np.zeros(self.st.n_cin)
        x[self.unknowns] = v
        return -self.factors()[1].solve(x, trans="T" if trans else "N")[self.unknowns]

    def inverse_times(self, v):
        """``J^-1 v``, ``J`` the loops' Jacobian with the Broyden updates so far."""
        self.form_H()
        if not self.product:
            return self.H @ v
        k = self._k
        return self._H0_times(v) + self._A[:, :k] @ (self._B[:, :k].T @ v)

    def broyden(self, dz, r):
        """Broyden's (good) rank-one update of ``J`` along the Newton step ``dz = -H r0`` (``H``
        as it is now) that led to the residual ``r``, on its inverse ``H``: ``H += (s - H y)
        s^T H / (s^T H y)``, ``s = dz``, ``y = r - r0``; returns the next Newton step ``-H r``
        with the updated ``H``. One product with ``H`` (``H y = H r + dz``) and one with ``H^T``
        (in product form, with ``H0`` a sparse solve each), not three."""
        if self.product and self._k == LOOP_RANK:
            self._k = 0                                 # again from H0; dz was the H before's, no pair for H0
            return -self.inverse_times(r)
        Hr = self.inverse_times(r)
        Hy = Hr + dz
        den = float(dz @ Hy)
        if not (math.isfinite(den) and abs(den) > 1e-14 * (math.sqrt(dz.dot(dz)) * math.sqrt(Hy.dot(Hy)))):
            return -Hr
        a = (dz - Hy) / den
        if not self.product:
            b = dz @ self.H
            self.H += np.multiply(a[:, None], b)
        else:
            k = self._k
            b = self._H0_times(dz, trans=True) + self._B[:, :k] @ (self._A[:, :k].T @ dz)
            self._A[:, k], self._B[:, k] = a, b
            self._k = k + 1
        return -(Hr + a * float(b @ r))


def _difference_plan(lay, cs, dep):
    """Per column ``c`` of ``cs`` left to finite differences (:meth:`LoopSolver.local_jacobian`):
    its coupling input ``k``, the coupling inputs it moves (its attitude's three, or itself),
    the step along its rotation-vector axis (None: a plain input), the local inputs set and
    the outputs hit (None: no declared dependency, a zero column)."""
    plan = []
    for c in cs:
        k = lay.cin[c]
        if lay.chart_in.in_triple[c]:
            tr = lay.chart_in.triples[np.flatnonzero((lay.chart_in.triples == c).any(axis=1))[0]]
            at, step, i = lay.cin[tr], 1e-6 * (tr == c), lay.local_in[tr]
        else:
            at, step, i = np.array([k]), None, lay.local_in[[c]]
        hit = dep[:, i].any(axis=1)
        plan.append((k, at, step, i, hit if hit.any() else None))
    return plan


def _slice(positions):
    """``positions`` as a slice when they are consecutive (a view, no copy), else as they are."""
    if len(positions) and np.array_equal(positions, np.arange(positions[0], positions[0] + len(positions))):
        return slice(int(positions[0]), int(positions[0]) + len(positions))
    return positions


class LoopSolver:
    """Solves one run's units at a communication point (see the module docstring).

    ``rtol``/``atol``: convergence test ``|r_i| <= atol + rtol * scale_i`` with
    ``scale_i`` the largest ``|z_i|`` seen so far (at least 1).
    """

    def __init__(self, st: Structure, units: list, sens: Sensitivities, rtol=1e-11, atol=1e-13,
                 max_iter=12):
        if not (rtol >= 0 and atol >= 0 and rtol + atol > 0):       # else |r| / 0: "not finite"
            raise SolverError(f"loop tolerances must be >= 0 and not both 0, got rtol={rtol}, atol={atol}")
        self.st, self.units, self.sens = st, units, sens
        self.rtol, self.atol, self.max_iter = rtol, atol, max_iter
        self.Y = np.zeros(st.n_out)
        self.Ucur = np.zeros(st.n_cin)           # value each coupling input is set to on its unit
        self.unknowns = u = st.unknowns
        self.z = np.zeros(len(u))
        self.zscale = np.ones(len(u))
        self.residual = 0.0                       # last weighted residual (<= 1: converged)
        self._tol = None
        self.solves = 0
        self.iterations = 0
        # the unknowns grouped per unit
        self._unknowns_by_unit = {}             # unit -> (local inputs, positions in z)
        for j in range(len(units)):
            pos = np.flatnonzero(st.cin_unit[u] == j)
            if pos.size:
                self._unknowns_by_unit[j] = (st.cin_local[u[pos]], pos)
        self._plans = {name: self._plan(ops, with_unknowns=name != "pre")
                       for name, ops in (("pre", st.pre), ("loop", st.loop_ops), ("full", st.full))}
        self._compiled = {}                     # name -> the plan in C (plan.CompiledPlan), or False
        self._loop_of = np.zeros(len(u), dtype=int)
        for lp in st.loops:
            self._loop_of[np.searchsorted(u, lp.inputs)] = lp.index
        self._angle = st.cin_angle[u] if st.cin_angle[u].any() else None
        self._src = st.cin_src[u]                # the outputs feeding the unknowns
        self._deps = {}
        self._columns = {}                      # the Jacobian's columns per unit, by kind (local_jacobian)
        # a fresh M costs about as many unit evaluations as this many Newton iterations
        per_iteration = max(1, sum(1 for *_, get_idx, _ in self._plans["loop"] if get_idx.size))
        self._refresh_cost = (len(u) + len(units)) / per_iteration

    # -- evaluation -------------------------------------------------------------------------
    def _plan(self, ops, with_unknowns):
        """Unit calls of a schedule: each sets its inputs (sources from ``Y``, and the
        unit's unknowns from ``z`` at its first call) and reads its outputs: ``(unit, local
        inputs, their sources in Y, their positions in z, their coupling-input positions,
        local outputs, their positions in Y)``, each index array None when empty."""
        plan = []
        none = np.zeros(0, dtype=int)
        unknowns = dict(self._unknowns_by_unit) if with_unknowns else {}
        for op in ops:
            local, pos = unknowns.pop(op.unit, (none, none))            # at the unit's first call
            plan.append((op.unit, np.concatenate([op.set_idx, local]), op.set_src, pos,
                         np.concatenate([op.set_cin, self.unknowns[pos]]), op.get_idx, op.get_pos))
        for j, (local, pos) in unknowns.items():        # unknowns of a unit with no call (no output)
            plan.insert(0, (j, local, none, pos, self.unknowns[pos], none, none))
        return [(self.units[j], *(a if a.size else None for a in arrays[:1]),
                 *(_slice(a) if a.size else None for a in arrays[1:3]),
                 *(a if a.size else None for a in arrays[3:])) for j, *arrays in plan]

    def _run(self, plan, z=None):
        Y, Ucur = self.Y, self.Ucur
        for u, idx, src, zpos, cin, get_idx, get_pos in plan:
            if idx is None:
                if get_idx is not None:
                    Y[get_pos] = u.get_outputs(get_idx)
                continue
            v = z[zpos] if src is None else Y[src] if zpos is None else np.concatenate([Y[src], z[zpos]])
            Ucur[cin] = v
            if get_idx is None:
                u.set_inputs(idx, v)
            else:
                Y[get_pos] = u.evaluate(idx, v, get_idx)

    def plan_in_c(self, name):
        """The plan ``name``'s unit calls in C (a :class:`~.plan.CompiledPlan`, made at first use
        and kept), or False where a unit of it is not an FMU or C is not to be had."""
        fast = self._compiled.get(name)
        if fast is None:
            fast = self._compiled[name] = compiled_plan(self._plans[name], self.Y, self.Ucur, len(self.unknowns)) \
                or False
        return fast

    def _evaluate(self, name, z=None):
        """The plan ``name``'s unit calls: in C where every unit of it is an FMU (:meth:`plan_in_c`),
        else :meth:`_run`."""
        fast = self.plan_in_c(name)
        if fast:
            fast.run(z)
        else:
            self._run(self._plans[name], z)

    def flush_counters(self):
        """The calls and seconds of the plans run in C, counted in their units."""
        for fast in self._compiled.values():
            if fast:
                fast.flush()

    def _propagate(self, z, full=False):
        self._evaluate("full" if full else "loop", z)
        return wrap_where(self.Y[self._src] - z, self._angle)

    def solve(self, t: float, z0=None, tol=None, weights=None):
        """Evaluate every output at the current states; returns ``(Y, U)``: all outputs
        (global order) and every coupling input's consistent value.

        Converged: ``|r_i| <= atol + rtol * scale_i``, or, given ``tol`` and ``weights``
        (per coupling input), ``|r_i| * weights_i <= tol`` -- whichever is looser."""
        st = self.st
        self.solves += 1
        if len(self.unknowns):
            self._tol = None if tol is None else (tol, weights[self.unknowns])
            self._newton(t, self.z if z0 is None else np.array(z0, dtype=float))
        else:
            self._evaluate("pre")
        return self.Y, self.Y[st.cin_src]

    def _newton(self, t, z):
        sens = self.sens
        fresh = False
        r = self._propagate(z, full=True)
        prev = step = None
        for it in range(self.max_iter + 1):
            np.maximum(self.zscale, np.abs(z), out=self.zscale)
            ar = np.abs(r)
            err = ar / (self.atol + self.rtol * self.zscale)
            if self._tol is not None:
                err = np.minimum(err, ar * self._tol[1] / self._tol[0])
            e = float(err.max()) if err.size else 0.0
            if not math.isfinite(e):
                self._fail(t, r, err, it, "the residual is not finite")
            if e <= 1.0:
                np.copyto(self.z, z)                # in place: the base steps in C read it
                self.residual = e
                return
            if it == self.max_iter:
                break
            if sens.H_state[0] < 0.0 or (not fresh and prev is not None and self._worth_refreshing(e, prev, it)):
                self.refresh_M()
                fresh, step = True, None
            elif fresh and prev is not None and e > 0.5 * prev and it > 6:
                break                                       # a fresh Jacobian and no progress
            try:
                dz = sens.inverse_times(-r) if step is None else step
            except np.linalg.LinAlgError:
                self._fail(t, r, err, it, "the loop Jacobian is singular")
            # finite differences (step 1e-6) give M to ~1e-8 relative: a step implying
            # |J^-1| |M| >= 1e8 is noise (e.g. y = u + 1, u = y: no solution, and the steps
            # run off to where z + 1 == z and the residual vanishes in rounding)
            largest = float(np.abs(dz).max())                   # not finite if any entry is not
            if not math.isfinite(largest) or largest * 1e-8 * max(1.0, float(sens.M_max[0])) >= ar.max():
                self._fail(t, r, err, it, "the loop Jacobian is numerically singular (no solution, "
                                          "or not a unique one)")
            prev = e
            z = z + dz
            r = self._propagate(z)
            step = sens.broyden(dz, r)
            self.iterations += 1
        self._fail(t, r, err, self.max_iter, "Newton did not converge")

    def _worth_refreshing(self, e, prev, it):
        """Whether to re-measure ``M``: the iterations still needed at the rate of the last
        one (residual ``prev`` -> ``e``, both above the tolerance 1) cost more unit
        evaluations than a fresh ``M`` (with which an affine loop converges in one), or
        would not fit in the iterations left."""
        rate = e / prev
        left = math.inf if rate >= 1.0 else math.log(e) / -math.log(rate)
        return left > min(self._refresh_cost, self.max_iter - it - 1)

    def _fail(self, t, r, err, it, why):
        st = self.st
        worst = int(np.argmax(err)) if err.size and np.all(np.isfinite(err)) else 0
        lp = st.loops[int(self._loop_of[worst])] if len(st.loops) else None
        k = self.unknowns[worst]
        res = float(np.max(np.abs(r))) if np.all(np.isfinite(r)) else float("nan")
        raise LoopError(
            f"{lp.label if lp else 'algebraic loop'} did not converge at t={t:.9g} s: {why} after {it} "
            f"Newton iteration(s); residual {res:.3g} (weighted {float(np.max(err)):.3g} > 1), largest at "
            f"{st.cin_label(k)}", loop=lp.label if lp else None, time=t, residual=res)

    # -- local Jacobian ---------------------------------------------------------------------
    def local_jacobian(self, columns=None):
        """``M``: finite differences of every unit's source outputs w.r.t. its coupling
        inputs (all, or the coupling inputs ``columns``), around the values currently
        set; structural zeros (no declared dependency) stay exact zeros."""
        st = self.st
        n = st.n_cin
        M = np.zeros((n, n)) if self.sens.M is None else self.sens.M.copy()
        wanted = None if columns is None else np.asarray(columns, dtype=int)
        key = None if wanted is None else wanted.tobytes()
        for j, (u, lay) in enumerate(zip(self.units, st.layouts)):
            cs = self._columns.get((j, key))
            if cs is None:
                cs = self._columns[j, key] = (np.arange(len(lay.cin)) if wanted is None
                                              else np.flatnonzero(np.isin(lay.cin, wanted)))
            if not cs.size or not lay.rows.size:
                continue
            rows, inv = lay.rows, lay.of_row
            if st.types[j].derivatives:                     # exact columns from the unit
                cs = self._exact_columns(j, u, lay, cs, M)
                if not cs.size:
                    continue
            fd = self._columns.get((j, key, "fd"))
            if fd is None:
                dep = self._dep_matrix(j)[lay.outputs]      # (outputs, local inputs) bool
                fd = self._columns[j, key, "fd"] = _difference_plan(lay, cs, dep)
            y0 = u.get_outputs(lay.outputs)
            prev = None                                     # (local inputs, values) to restore
            for k, at, step, i, hit in fd:
                if hit is None:
                    M[rows, k] = 0.0
                    continue
                if step is not None:                        # the attitude turned about a rotation-vector axis
                    x, d = self.Ucur[at], 1e-6
                    v = ATTITUDE.plus(x, step)
                else:
                    x = self.Ucur[[k]]
                    d = 1e-6 * max(1.0, abs(x[0]))
                    v = x + d
                if prev is None:
                    u.set_inputs(i, v)
                else:                                       # restore the previous ones, perturb these
                    back = ~(prev[0][:, None] == i).any(axis=1)     # np.isin costs 60 us on these few
                    u.set_inputs(np.concatenate([prev[0][back], i]), np.concatenate([prev[1][back], v]))
                prev = (i, x)
                y = u.get_outputs(lay.outputs)
                M[rows, k] = np.where(hit[inv], lay.chart_out.minus(y[inv], y0[inv]) / d, 0.0)
            if prev is not None:
                u.set_inputs(prev[0], prev[1])
        return M

    def _exact_columns(self, j, u, lay, cs, M):
        """Fill the columns ``lay.cin[cs]`` of unit ``j`` (it gives directional derivatives) in
        ``M``, one unit call for all (an FMU makes one ``fmi2GetDirectionalDerivative`` per
        column); returns the positions ``cs`` left to finite differences: the coupling inputs
        of an attitude (their chart turns them about rotation-vector axes) and those an
        attitude output depends on."""
        zero, i, seeds, at, hit, left = self.exact_plan(j, cs)
        M[lay.rows[:, None], zero] = 0.0
        if len(i):
            D = u.directional_derivatives(lay.outputs, i, seeds)
            M[at] = np.where(hit, D[lay.of_row], 0.0)
        return left

    def exact_plan(self, j, cs):
        """Which of unit ``j``'s columns ``lay.cin[cs]`` of ``M`` are zero, and which its exact
        derivatives give (:meth:`_exact_columns`): ``(zero columns of M, the local inputs of the
        exact ones, the seeds (identity), M[at] their entries, hit (rows x exact columns: a
        declared dependency), the positions in cs left to finite differences)``, kept."""
        key = (j, cs.tobytes())
        plan = self._columns.get(key)
        if plan is None:                    # which columns are which: the structure's, kept
            lay = self.st.layouts[j]
            dep = self._dep_matrix(j)[lay.outputs]
            inv = lay.of_row
            exact, left, zero = [], [], []
            for c in cs:
                hit = dep[:, lay.local_in[c]]
                if lay.chart_in.in_triple[c] or (hit[inv] & lay.chart_out.in_triple).any():
                    left.append(c)
                elif not hit.any():
                    zero.append(c)
                else:
                    exact.append(c)
            i = lay.local_in[exact]
            plan = self._columns[key] = (lay.cin[zero], i, np.eye(len(exact)), np.ix_(lay.rows, lay.cin[exact]),
                                         dep[np.ix_(inv, i)], np.array(left, dtype=int))
        return plan

    def _dep_matrix(self, j):
        D = self._deps.get(j)
        if D is None:
            t = self.st.types[j]
            D = np.zeros((len(t.output_names), len(t.input_names)), dtype=bool)
            for o, d in enumerate(self.st.dep_in[j]):
                D[o, d] = True
            self._deps[j] = D
        return D

    def refresh_M(self, full=False):
        """Re-measure ``M``: every column, or (default, once there is one) the columns of
        the coupling inputs in algebraic loops, which the loops' Jacobian uses."""
        cols = None if full or self.sens.M is None else self.unknowns
        self.sens.set_M(self.local_jacobian(cols))
