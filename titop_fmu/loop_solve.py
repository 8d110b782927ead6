"""The algebraic loop of a monolithic :class:`~titop_fmu.system.System` solved exactly at
one state: the wiring of a block's inputs (:class:`Wiring`), and the two solves, dense
(:class:`DenseLoop`, any wiring, the tests' oracle) and recursive over the tree of links
(:class:`RecursiveLoop`, O(N): the articulated-body algorithm in TITOP's own terms). The
module docstring of :mod:`titop_fmu.system` gives the loop's unknowns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConnectionError_, SolverError
from .spatial import tau


@dataclass(frozen=True)
class Wiring:
    kin: list       # (parent port, (source block, "ci.m") or constant 18-vector)
    const: dict     # acceleration-level input -> constant (n, 1) column
    up: list        # (parent port, link index) of the linked parent ports
    down: list      # (child port, link index) of the linked child ports


def _at(V, z):
    """The value at the inputs ``z`` of an output ``V`` evaluated on the batch ``[0, I]``:
    ``b + L z`` with ``b = V[:, 0]``, ``L = V[:, 1:] - b`` (one column: no dependence).

    ``L`` is formed before the product: an output that does not depend on an input
    then has an exact zero there. ``V [1 - sum(z); z]``, one product, adds
    ``b z_i - b z_i`` rounding terms for every input (measured: 1e-11 instead of
    2e-15 relative between the two solves on a 64-body chain)."""
    if V.shape[1] == 1:
        return V[:, 0]
    return V[:, 0] + (V[:, 1:] - V[:, 0:1]).dot(z)


def _affine(acc):
    """``{output: (b, L)}``: each output of a block evaluated on the batch ``[0, I]`` as
    ``b + L z`` (``L`` None: it does not depend on ``z``), ``L`` formed as in :func:`_at`."""
    return {k: (V[:, 0], V[:, 1:] - V[:, 0:1] if V.shape[1] > 1 else None) for k, V in acc.items()}


_EMPTY = np.zeros(0)


def singular(t):
    return SolverError(f"the algebraic loop is singular (t={t}): check for bodies without "
                       "mass or inertia along a joint")


class NotFinite(SolverError):
    """The loop's solution, the accelerations, are not finite."""


def not_finite(t):
    return NotFinite(f"the algebraic loop solution is not finite (t={t})")


class DenseLoop:
    """The loop solved as one dense linear system over all the links' unknowns: blocks
    evaluated on the batch ``[0, I]`` of the 12 unknowns per link, ``(1 - A) z = b``."""

    def __init__(self, plan):
        self.plan = plan
        n = 12 * len(plan.system.links)
        self.batch = np.hstack([np.zeros((n, 1)), np.eye(n)])
        self.identity = np.eye(n)

    def solve(self, kins, t):
        plan, blocks = self.plan, self.plan.system.blocks
        Z = self.batch
        Y = np.empty_like(Z)
        raw = {}
        for n in plan.order:
            w = plan.wiring[n]
            u = dict(w.const)
            u.update({f"{p}.a": Z[12 * j:12 * j + 6] for p, j in w.up})
            u.update({f"{c}.w": Z[12 * j + 6:12 * j + 12] for c, j in w.down})
            acc = raw[n] = blocks[n].accelerations(kins[n], u)
            for p, j in w.up:
                Y[12 * j + 6:12 * j + 12] = acc[f"{p}.w"]
            for c, j in w.down:
                Y[12 * j:12 * j + 6] = acc[f"{c}.a"]
        z = np.zeros(0)
        if len(Z):
            b0 = Y[:, 0]
            try:
                z = np.linalg.solve(self.identity - (Y[:, 1:] - b0[:, None]), b0)
            except np.linalg.LinAlgError:
                raise singular(t) from None
            if not np.all(np.isfinite(z)):
                raise not_finite(t)
        return {n: {k: _at(v, z) for k, v in acc.items()} for n, acc in raw.items()}


class _Node:
    """What the recursive solve keeps of a block: its linked ports, its inputs on the
    batch ``[0, I]`` of ``z = [a_p; w_1..w_c]`` (``n_a`` = 6 components of ``a_p``, or 0
    for a root, or 6 per parent port of a loop closure) and the output names it passes on."""

    def __init__(self, name, block, wiring: Wiring):
        self.name, self.block = name, block
        self.up = wiring.up
        self.down = [(f"{c}.a", j) for c, j in wiring.down]
        self.wrench = [(f"{p}.w", j) for p, j in wiring.up]
        # several linked children of a block that reads their wrenches as one sum: ``w`` is
        # the one wrench at the first's port that gives that sum, and ``T[i]`` brings that
        # port's acceleration to child i's, ``a_i = T_i a_1`` (:meth:`RecursiveLoop._condense`)
        self.T = None
        if len(wiring.down) > 1 and block.children_through_sum:
            tau_c = dict(zip(block.child_ports, block.body.tau_c))
            PC = dict(zip(block.child_ports, block.body.children))
            first = tau(PC[wiring.down[0][0]])                          # tau_C1P^-1 = tau_PC1
            self.T = [tau_c[c].dot(first) for c, _ in wiring.down]
        self.n_a, n_w = 6 * len(wiring.up), 6 if self.T else 6 * len(wiring.down)
        Z = np.hstack([np.zeros((self.n_a + n_w, 1)), np.eye(self.n_a + n_w)])
        self.inputs = dict(wiring.const)
        for i, (p, _) in enumerate(wiring.up):
            self.inputs[f"{p}.a"] = Z[6 * i:6 * i + 6]
        for i, (c, _) in enumerate(wiring.down):
            if self.T and i:                                            # gathered into the first's
                self.inputs[f"{c}.w"] = np.zeros((6, Z.shape[1]))
            else:
                self.inputs[f"{c}.w"] = Z[self.n_a + 6 * i:self.n_a + 6 * i + 6]
        self.identity = np.eye(n_w)


class RecursiveLoop:
    """The loop solved in O(N) over the tree of links.

    Upward pass (children first): block ``n``, of inputs ``z = [a_p; w]`` (its
    parent's spatial acceleration at the joint, the wrenches of its linked children),
    is evaluated on the batch ``[0, I]`` of ``z``. Each child ``i`` already gave its
    wrench as ``w_i = K_i a_i + k_i`` of the acceleration ``a_i`` that ``n`` sends
    it, and ``a_i`` is an output of ``n`` (``x'dot_Ci = tau_CiP x'dot_P``, eq. (23),
    with the joint acceleration of eq. (22) or eq. (28) that depends on ``w``): so the
    children's wrenches are affine in ``z``, ``w = g + G_a a_p + G_w w``, solved for
    ``w = M a_p + m`` (:func:`_condense`). Put into ``n``'s own wrench on its parent
    (eq. (15), eq. (18) or eq. (29), the children's wrenches transported by eq. (13)), it gives
    ``n``'s map ``W_p = K a_p + k`` (:func:`_parent_map`). A block with several linked
    parent ports (a loop closure) must not feed accelerations through: its wrenches
    are constants ``k`` and it cuts its loop.

    Downward pass (parents first): ``a_p`` from the parent, ``w = M a_p + m``, and
    every output of ``n`` at ``z``.

    A TITOP body reads its children's wrenches only as their sum at its point (eq.
    (13)): its linked children are condensed as one wrench at one port (:meth:`_condense`),
    so a block costs the same with 2 children or 64, and the solve is O(N) on any tree.
    """

    def __init__(self, plan):
        try:                                        # here, not with the module (as solve_ivp)
            from scipy.linalg.lapack import dgesv
        except ImportError:                         # an assembly FMU in a process without scipy
            dgesv = _gesv
        self.solve_linear = dgesv
        self.nodes = []
        for n in plan.order:
            w = plan.wiring[n]
            if len(w.up) > 1 and w.down:
                raise ConnectionError_(
                    f"{n!r} has several linked parent ports and linked child ports: the links do "
                    "not form a tree; use System(solver='dense')")
            self.nodes.append(_Node(n, plan.system.blocks[n], w))

    def solve(self, kins, t):
        maps = {}          # link -> (K, k): wrench the child sends up, W = K a + k (K None: 0)
        raw, cond = {}, {}
        for node in reversed(self.nodes):                                  # leaves to roots
            acc = raw[node.name] = _affine(node.block.accelerations(kins[node.name], node.inputs))
            if len(node.up) > 1:                                           # loop closure
                for key, j in node.wrench:
                    b, L = acc[key]
                    if L is not None and np.any(L):
                        raise SolverError(
                            f"{node.name!r} has several linked parent ports and feeds accelerations "
                            "through to its wrenches: the loop is not a tree; use "
                            "System(solver='dense')")
                    maps[j] = (None, b)
                continue
            M = m = None
            if node.down:
                M, m = cond[node.name] = self._condense(node, acc, maps, t)
            for key, j in node.wrench:
                maps[j] = _parent_map(acc[key], M, m)
        accs, a_link, check = {}, {}, 0.0
        for node in self.nodes:                                            # roots to leaves
            z = [a_link[j] for _, j in node.up]
            if node.down:
                M, m = cond[node.name]
                z.append(m if M is None else m + M.dot(z[0]))
            z = z[0] if len(z) == 1 else np.concatenate(z) if z else _EMPTY
            check += z.sum()
            out = accs[node.name] = {k: b if L is None else b + L.dot(z) for k, (b, L) in raw[node.name].items()}
            for key, j in node.down:
                a_link[j] = out[key]
        if not np.isfinite(check):
            raise not_finite(t)
        return accs

    def _condense(self, node, acc, maps, t):
        """``(M, m)``: the wrenches of a block's linked children as ``w = M a_p + m`` of its
        parent acceleration ``a_p`` (``M`` None for a root).

        The block's batch outputs give the acceleration ``a_i`` it sends to child ``i``,
        affine in ``z = [a_p; w]``; the child's map gives ``w_i = K_i a_i + k_i``.
        Stacked, ``H = [g, G_a, G_w]``: ``w = g + G_a a_p + G_w w``, so
        ``(1 - G_w) [m, M] = [g, G_a]``.

        A block that reads its children's wrenches only as their sum at its point ``P``
        (``children_through_sum``; every TITOP body) and has several linked children is
        evaluated with one wrench ``w`` at the first child's port, the others zero: the one
        whose transport to ``P`` is that sum, ``tau_C1P^T w = sum_i tau_CiP^T w_i``. With
        ``a_i = T_i a_1``, ``T_i = tau_CiP tau_C1P^-1``, the children's maps add up to
        ``w = (sum_i T_i^T K_i T_i) a_1 + sum_i T_i^T k_i``: the articulated inertia of
        the children gathered at one port. A base with 64 children then costs 13 columns
        and a 6x6 solve instead of 391 columns and a 384x384 solve."""
        n_a = node.n_a
        H = np.zeros((len(node.identity), 1 + n_a + len(node.identity)), order="F")   # as LAPACK reads it
        children = [(i, node.down[i][0], maps[j]) for i, (_, j) in enumerate(node.down)]
        if node.T is not None:          # one wrench w at the first child's port: the sum of theirs,
            K1, k1 = None, 0.0          # tau_C1P^T w = sum_i tau_CiP^T (K_i T_i a_1 + k_i)
            for T, (_, _, (K, k)) in zip(node.T, children):
                k1 = k1 + T.T.dot(k)
                if K is not None:
                    K1 = T.T.dot(K).dot(T) + (0.0 if K1 is None else K1)
            children = [(0, node.down[0][0], (K1, k1))]
        for i, key, (K, k) in children:
            h = H[6 * i:6 * i + 6]
            if K is None:                              # a constant wrench (loop closure)
                h[:, 0] = k
                continue
            b, L = acc[key]
            h[:, 0] = K.dot(b) + k
            if L is not None:
                h[:, 1:] = K.dot(L)
        A = np.subtract(node.identity, H[:, 1 + n_a:], order="F")
        _, _, X, info = self.solve_linear(A, H[:, :1 + n_a], overwrite_a=1, overwrite_b=1)
        if info > 0:
            raise singular(t)
        return (X[:, 1:] if n_a else None), X[:, 0]


def _gesv(a, b, overwrite_a=0, overwrite_b=0):
    """``(_, _, x, info)`` of ``a x = b`` as LAPACK's ``dgesv`` returns them, by numpy (for
    assembly FMUs, which run in hosts that may have numpy but not scipy)."""
    try:
        return None, None, np.linalg.solve(a, b), 0
    except np.linalg.LinAlgError:
        return None, None, None, 1


def _parent_map(W, M, m):
    """``(K, k)``: the wrench a block sends to its parent, ``W_p = K a_p + k`` (``K`` None:
    a constant), from its output ``W = b + L_a a_p + L_w w`` (:func:`_affine`) and its
    children's wrenches ``w = M a_p + m`` (``M`` None: no linked child)."""
    b, L = W
    if L is None:
        return None, b
    La, Lw = L[:, :6], L[:, 6:]
    if M is None:
        return La, b
    return La + Lw.dot(M), b + Lw.dot(m)
