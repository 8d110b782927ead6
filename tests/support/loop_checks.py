"""Independent checks of a compiled structure's loops and their unknowns (reachability on
the units' declared dependencies, not the master's graph code)."""

import numpy as np


def coupling_graph(st):
    """``k -> m`` when an output of coupling input ``k``'s unit depends directly on ``k``
    (the units' declared dependencies) and feeds coupling input ``m``; built here from
    the declarations, independently of the master's graph code."""
    edges = {}
    for k in range(st.n_cin):
        j, i = int(st.cin_unit[k]), int(st.cin_local[k])
        out = set()
        for o, deps in enumerate(st.types[j].dependencies):
            if i in np.asarray(deps):
                out.update(np.flatnonzero(st.cin_src == st.out_offset[j] + o).tolist())
        edges[k] = out
    return edges


def acyclic(edges, nodes, removed=()):
    """Kahn's algorithm on ``nodes`` without ``removed`` (a removed input's value is given: no
    edge reaches it any more)."""
    keep = [k for k in nodes if k not in set(removed)]
    indeg = dict.fromkeys(keep, 0)
    for k in keep:
        for m in edges[k]:
            if m in indeg:
                indeg[m] += 1
    ready = [k for k in keep if indeg[k] == 0]
    done = 0
    while ready:
        k = ready.pop()
        done += 1
        for m in edges[k]:
            if m in indeg:
                indeg[m] -= 1
                if indeg[m] == 0:
                    ready.append(m)
    return done == len(keep)


def cyclic_components(edges):
    """The sets of coupling inputs on a common cycle (brute-force reachability)."""
    def reach(k):
        seen, todo = set(), list(edges[k])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(edges[m])
        return seen

    r = {k: reach(k) for k in edges}
    return {frozenset(m for m in edges if m in r[k] and k in r[m]) for k in edges if k in r[k]}


def labels(st, ks):
    return {st.cin_label(int(k)) for k in ks}


def check_loops(st):
    """The loops are the cyclic components of the coupling inputs; the loop solve's unknowns
    are all their inputs, and given them, no cycle is left to evaluate."""
    edges = coupling_graph(st)
    assert {frozenset(int(k) for k in lp.inputs) for lp in st.loops} == cyclic_components(edges)
    assert acyclic(edges, range(st.n_cin)) == (not st.loops)
    assert sorted(int(k) for k in st.unknowns) == sorted(int(k) for lp in st.loops for k in lp.inputs)
    assert acyclic(edges, range(st.n_cin), [int(k) for k in st.unknowns])
