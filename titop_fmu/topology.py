"""Trees of bodies: the one check that links form a forest, and its parents-first order."""

from __future__ import annotations

from .errors import ConnectionError_


def tree_order(children: dict, what: str = "tree topology", hint: str = "") -> list:
    """The nodes of ``{node: [its children]}`` parents first (reverse post-order of a depth-first
    search, iterative: any depth); a directed cycle is a :class:`ConnectionError_` naming it,
    e.g. ``cycle in the tree topology: x -> y -> z -> x (hint)``."""
    state = {n: 0 for n in children}            # 0 new, 1 on the path, 2 done
    post = []
    for root in children:
        if state[root]:
            continue
        state[root] = 1
        path, todo = [root], [iter(children[root])]
        while todo:
            c = next(todo[-1], None)
            if c is None:
                n = path.pop()
                todo.pop()
                state[n] = 2
                post.append(n)
            elif state[c] == 1:
                cycle = path[path.index(c):] + [c]
                raise ConnectionError_(f"cycle in the {what}: " + " -> ".join(cycle) + (f" ({hint})" if hint else ""))
            elif state[c] == 0:
                state[c] = 1
                path.append(c)
                todo.append(iter(children[c]))
    return post[::-1]
