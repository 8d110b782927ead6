"""Trees of bodies: the one check that links form a forest, and its parents-first order."""

from __future__ import annotations

from .errors import ConnectionError_


def tree_order(children: dict, what: str = "tree topology", hint: str = "") -> list:
    """The nodes of ``{node: [its children]}`` parents first, level by level (each level in
    the order of ``children``); a directed cycle is a :class:`ConnectionError_` naming it,
    e.g. ``cycle in the tree topology: x -> y -> z -> x (hint)``."""
    parents = {n: 0 for n in children}
    for n in children:
        for c in children[n]:
            parents[c] += 1
    order, level = [], [n for n in children if parents[n] == 0]
    while level:
        order += level
        nxt = []
        for n in level:
            for c in children[n]:
                parents[c] -= 1
                if parents[c] == 0:
                    nxt.append(c)
        ready = set(nxt)
        level = [n for n in children if n in ready]
    if len(order) < len(children):
        left = set(children) - set(order)            # every one of them is on a cycle or below one
        path, n = [], next(n for n in children if n in left)
        while n not in path:
            path.append(n)
            n = next(c for c in children[n] if c in left)
        cycle = path[path.index(n):] + [n]
        raise ConnectionError_(f"cycle in the {what}: " + " -> ".join(cycle) + (f" ({hint})" if hint else ""))
    return order
