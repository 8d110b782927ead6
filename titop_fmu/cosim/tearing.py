"""Algebraic loops of a system (cyclic strongly connected components of its coupling
inputs' dependency graph), their tearing, and the evaluation schedules of the torn graph."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import ConnectionError_


@dataclass
class Op:
    """One unit call of a schedule: set inputs ``set_idx`` (local) from the global output
    vector at ``set_src``, then read outputs ``get_idx`` (local) into ``get_pos``."""

    unit: int
    set_idx: np.ndarray
    set_src: np.ndarray
    get_idx: np.ndarray
    get_pos: np.ndarray


@dataclass
class Loop:
    """One algebraic loop: its units, coupling inputs, and torn coupling inputs."""

    index: int
    units: list
    inputs: np.ndarray          # coupling-input positions in the loop
    torn: np.ndarray            # torn coupling-input positions
    label: str = ""


def _cyclic_components(succ) -> list:
    """The strongly connected components of the graph ``k -> succ[k]`` that hold a cycle
    (more than one node, or a self-loop), each sorted, ordered by their first node."""
    if not succ:
        return []
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    rows = [k for k, s in enumerate(succ) for _ in s]
    cols = [m for s in succ for m in s]
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(succ), len(succ)))
    _, label = connected_components(graph, directed=True, connection="strong")
    comps = {}
    for k, c in enumerate(label):
        comps.setdefault(int(c), []).append(k)
    cyclic = [c for c in comps.values() if len(c) > 1 or c[0] in succ[c[0]]]
    return sorted(cyclic, key=lambda c: c[0])


def _feeds(cin_src) -> dict:
    """Global output -> the coupling inputs it feeds."""
    feeds = {}
    for m, g in enumerate(cin_src):
        feeds.setdefault(int(g), []).append(m)
    return feeds


def _reverse_dependencies(tlist, dep_in) -> list:
    """Per unit, per local input: the local outputs that depend on it directly."""
    rev = []
    for j, t in enumerate(tlist):
        r = [[] for _ in t.input_names]
        for o, deps in enumerate(dep_in[j]):
            for i in deps:
                r[i].append(o)
        rev.append(r)
    return rev


def _coupling_graph(tlist, dep_in, out_offset, cin_unit, cin_local, cin_src):
    """Graph on coupling inputs only: k -> m if an output that input k feeds directly
    (same unit) is the source of coupling input m."""
    n = len(cin_unit)
    feeds, rev = _feeds(cin_src), _reverse_dependencies(tlist, dep_in)
    succ = []
    for k in range(n):
        j, i = cin_unit[k], cin_local[k]
        s = []
        for o in rev[j][i]:
            s.extend(feeds.get(int(out_offset[j] + o), ()))
        succ.append(sorted(set(s)))
    return succ


def loops_and_tearing(names, tlist, dep_in, out_offset, cin_unit, cin_local, cin_src):
    """Algebraic loops (cyclic strongly connected components of the coupling-input graph)
    and their tearing.

    Tearing is chosen at unit level so that evaluating a loop is a single sweep,
    one call per unit: the loop's units are put in an order and every coupling
    input of the loop fed by a unit at the same or a later place is torn. The
    order minimises the number of torn scalars (exhaustively up to 8 units,
    greedily beyond), ties broken by the declaration order of the units.
    """
    succ = _coupling_graph(tlist, dep_in, out_offset, cin_unit, cin_local, cin_src)
    cyclic = _cyclic_components(succ)
    out_unit = np.searchsorted(out_offset, cin_src, side="right") - 1
    loops, all_torn = [], []
    for li, comp in enumerate(cyclic):
        units = sorted({int(cin_unit[m]) for m in comp})
        # weight[a][b]: loop scalars flowing from unit a to unit b
        weight = {}
        for m in comp:
            a, b = int(out_unit[m]), int(cin_unit[m])
            weight[(a, b)] = weight.get((a, b), 0) + 1
        order = _unit_order(units, weight)
        place = {u: i for i, u in enumerate(order)}
        torn = sorted(m for m in comp if place[int(out_unit[m])] >= place[int(cin_unit[m])])
        label = f"loop {li + 1} ({', '.join(names[j] for j in units)})"
        loops.append(Loop(li, [names[j] for j in units], np.array(comp, dtype=int),
                          np.array(torn, dtype=int), label))
        all_torn.extend(torn)
    return loops, np.array(sorted(all_torn), dtype=int)


def _unit_order(units, weight):
    """An order of ``units`` with few scalars flowing backwards (or to the same unit)."""
    def cost(order):
        place = {u: i for i, u in enumerate(order)}
        return sum(w for (a, b), w in weight.items() if place[a] >= place[b])

    if len(units) <= 8:
        best = min(itertools.permutations(units), key=lambda o: (cost(o), o))
        return list(best)
    order, left = [], set(units)                        # greedy (Eades-Lin-Smyth flavour)
    while left:
        def score(u):
            out_w = sum(w for (a, b), w in weight.items() if a == u and b in left and b != u)
            in_w = sum(w for (a, b), w in weight.items() if b == u and a in left and a != u)
            return (in_w - out_w, u)
        u = min(left, key=score)
        order.append(u)
        left.discard(u)
    return order


def schedules(tlist, dep_in, out_offset, n_out, cin_unit, cin_local, cin_src, unit_cin, torn):
    """``(pre, loop)`` schedules of unit calls (see the module docstring)."""
    torn_set = set(int(k) for k in torn)
    cin_of = {}                                         # (unit, local input) -> coupling input
    for k, (j, i) in enumerate(zip(cin_unit, cin_local)):
        cin_of[(int(j), int(i))] = k
    # outputs depending (transitively) on a torn variable
    tainted = np.zeros(n_out, dtype=bool)
    feeds, rev = _feeds(cin_src), _reverse_dependencies(tlist, dep_in)
    stack = list(torn_set)
    seen = set(stack)
    while stack:
        k = stack.pop()
        j, i = int(cin_unit[k]), int(cin_local[k])
        for o in rev[j][i]:
            g = int(out_offset[j] + o)
            if not tainted[g]:
                tainted[g] = True
                for m in feeds.get(g, ()):
                    if m not in seen and m not in torn_set:
                        seen.add(m)
                        stack.append(m)
    all_out = np.arange(n_out)
    pre, is_set = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                          targets=set(all_out[~tainted].tolist()), computed=set(), taint_torn=True, is_set=set())
    loop, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                      targets=set(all_out[tainted].tolist()), computed=set(all_out[~tainted].tolist()),
                      taint_torn=False, is_set=is_set)
    full, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                      targets=set(all_out.tolist()), computed=set(), taint_torn=False, is_set=set())
    return pre, loop, full, tainted


def _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set, targets, computed,
            taint_torn, is_set):
    """Schedule: repeatedly take the unit with ready outputs (all the inputs they
    depend on known), set its known coupling inputs not set yet, read them."""
    ops = []
    is_set = set(is_set)
    computed = set(computed)
    todo = set(targets)

    def known(j, i):
        k = cin_of.get((j, i))
        if k is None:
            return True                                 # constant input
        if k in torn_set:
            return not taint_torn
        return int(cin_src[k]) in computed

    n_units = len(tlist)
    remaining = [set(int(out_offset[j] + o) for o in range(len(t.output_names))) & todo
                 for j, t in enumerate(tlist)]
    while todo:
        ready_by_unit = []
        for j, t in enumerate(tlist):
            ready = [o for o in range(len(t.output_names))
                     if int(out_offset[j] + o) in todo and all(known(j, int(i)) for i in dep_in[j][o])]
            ready_by_unit.append(ready)
        # prefer a unit all of whose outputs still to compute are ready: one call per unit
        whole = [j for j in range(n_units) if ready_by_unit[j] and len(ready_by_unit[j]) == len(remaining[j])]
        some = [j for j in range(n_units) if ready_by_unit[j]]
        if not some:                                    # cannot happen on an acyclic torn graph
            raise ConnectionError_("internal: no evaluation order for outputs "
                                   + ", ".join(str(g) for g in sorted(todo)[:5]))
        j = whole[0] if whole else some[0]
        ready = ready_by_unit[j]
        ks = [int(k) for k in unit_cin[j] if int(k) not in torn_set and int(k) not in is_set
              and int(cin_src[k]) in computed]
        is_set.update(ks)
        ops.append(Op(j, np.array([cin_local[k] for k in ks], dtype=int),
                      np.array([cin_src[k] for k in ks], dtype=int),
                      np.array(ready, dtype=int), out_offset[j] + np.array(ready, dtype=int)))
        for o in ready:
            g = int(out_offset[j] + o)
            computed.add(g)
            todo.discard(g)
            remaining[j].discard(g)
    # coupling inputs fed by these outputs but read by no scheduled output are set by the master
    return ops, is_set
