"""Algebraic loops of a system (cyclic strongly connected components of its coupling
inputs' dependency graph) and the evaluation schedules with the loops' unknowns given."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConnectionError_


@dataclass
class Op:
    """One unit call of a schedule: set the coupling inputs ``set_cin`` (their local
    indices ``set_idx``) from the global output vector at ``set_src``, then read outputs
    ``get_idx`` (local) into ``get_pos``."""

    unit: int
    set_cin: np.ndarray
    set_idx: np.ndarray
    set_src: np.ndarray
    get_idx: np.ndarray
    get_pos: np.ndarray


@dataclass
class Loop:
    """One algebraic loop: its units and coupling inputs."""

    index: int
    units: list
    inputs: np.ndarray          # coupling-input positions in the loop
    label: str = ""


def _cyclic_components(succ) -> list:
    """The strongly connected components of the graph ``k -> succ[k]`` that hold a cycle
    (more than one node, or a self-loop), each sorted, ordered by their first node.

    Tarjan's algorithm, iterative (a long chain's loop is deeper than Python's recursion):
    O(nodes + edges), without scipy, which a small system's run then never imports."""
    n = len(succ)
    index, low = [-1] * n, [0] * n
    on_stack, stack, comps, counter = [False] * n, [], [], 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            if i == 0:                                  # first visit
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            edges = succ[v]
            while i < len(edges):
                w = edges[i]
                i += 1
                if index[w] < 0:                        # descend; come back to v's next edge
                    work[-1] = (v, i)
                    work.append((w, 0))
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            else:                                       # every edge of v seen
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    cyclic = [c for c in comps if len(c) > 1 or c[0] in succ[c[0]]]
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


def find_loops(names, tlist, dep_in, out_offset, cin_unit, cin_local, cin_src) -> list:
    """The algebraic loops: cyclic strongly connected components of the coupling-input graph."""
    succ = _coupling_graph(tlist, dep_in, out_offset, cin_unit, cin_local, cin_src)
    loops = []
    for li, comp in enumerate(_cyclic_components(succ)):
        units = sorted({int(cin_unit[m]) for m in comp})
        label = f"loop {li + 1} ({', '.join(names[j] for j in units)})"
        loops.append(Loop(li, [names[j] for j in units], np.array(comp, dtype=int), label))
    return loops


def schedules(tlist, dep_in, out_offset, n_out, cin_unit, cin_local, cin_src, unit_cin, given):
    """``(pre, loop, full, tainted)``: the schedules of unit calls with the values of the
    coupling inputs ``given`` given (the loops' unknowns) -- of the outputs that do not depend
    on them, of those that do, and of all -- and which outputs depend on them."""
    given_set = set(int(k) for k in given)
    cin_of = {}                                         # (unit, local input) -> coupling input
    for k, (j, i) in enumerate(zip(cin_unit, cin_local)):
        cin_of[(int(j), int(i))] = k
    # outputs depending (transitively) on a given coupling input
    tainted = np.zeros(n_out, dtype=bool)
    feeds, rev = _feeds(cin_src), _reverse_dependencies(tlist, dep_in)
    stack = list(given_set)
    seen = set(stack)
    while stack:
        k = stack.pop()
        j, i = int(cin_unit[k]), int(cin_local[k])
        for o in rev[j][i]:
            g = int(out_offset[j] + o)
            if not tainted[g]:
                tainted[g] = True
                for m in feeds.get(g, ()):
                    if m not in seen and m not in given_set:
                        seen.add(m)
                        stack.append(m)
    all_out = np.arange(n_out)
    pre, is_set = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, given_set,
                          targets=set(all_out[~tainted].tolist()), computed=set(), taint_given=True, is_set=set())
    loop, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, given_set,
                      targets=set(all_out[tainted].tolist()), computed=set(all_out[~tainted].tolist()),
                      taint_given=False, is_set=is_set)
    full, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, given_set,
                      targets=set(all_out.tolist()), computed=set(), taint_given=False, is_set=set())
    return pre, loop, full, tainted


def _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, given_set, targets, computed,
            taint_given, is_set):
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
        if k in given_set:
            return not taint_given
        return int(cin_src[k]) in computed

    def ready_outputs(j):
        return [o for o in range(len(tlist[j].output_names))
                if int(out_offset[j] + o) in todo and all(known(j, int(i)) for i in dep_in[j][o])]

    n_units = len(tlist)
    remaining = [set(int(out_offset[j] + o) for o in range(len(t.output_names))) & todo
                 for j, t in enumerate(tlist)]
    readers = {}                                        # output -> the units reading it
    for (j, _), k in cin_of.items():
        readers.setdefault(int(cin_src[k]), set()).add(j)
    ready_by_unit = [ready_outputs(j) for j in range(n_units)]
    while todo:
        # prefer a unit all of whose outputs still to compute are ready: one call per unit
        whole = [j for j in range(n_units) if ready_by_unit[j] and len(ready_by_unit[j]) == len(remaining[j])]
        some = [j for j in range(n_units) if ready_by_unit[j]]
        if not some:                                    # cannot happen: the loops' unknowns are given
            raise ConnectionError_("internal: no evaluation order for outputs "
                                   + ", ".join(str(g) for g in sorted(todo)[:5]))
        j = whole[0] if whole else some[0]
        ready = ready_by_unit[j]
        ks = [int(k) for k in unit_cin[j] if int(k) not in given_set and int(k) not in is_set
              and int(cin_src[k]) in computed]
        is_set.update(ks)
        ks = np.array(ks, dtype=int)
        ops.append(Op(j, ks, cin_local[ks], cin_src[ks],
                      np.array(ready, dtype=int), out_offset[j] + np.array(ready, dtype=int)))
        stale = {j}                                     # a unit's ready outputs change with its
        for o in ready:                                 # own computed and its inputs' sources
            g = int(out_offset[j] + o)
            computed.add(g)
            todo.discard(g)
            remaining[j].discard(g)
            stale |= readers.get(g, set())
        for m in stale:
            ready_by_unit[m] = ready_outputs(m)
    # coupling inputs fed by these outputs but read by no scheduled output are set by the master
    return ops, is_set
