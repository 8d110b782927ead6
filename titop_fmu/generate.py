"""Generated test systems: chains and trees of jointed bodies on a floating base.

>>> from titop_fmu import generate
>>> s = generate.chain(16)                  # floating base + 16 revolute links
>>> t = generate.tree(31, branching=2)      # a complete binary tree of 31 bodies
>>> s.simulate(1.0)

Every body is a 1 kg slender link 1 m long along its ``-y`` axis (centre of
mass at mid-length, the children at its tip), with a joint of alternating
axis (``z``, ``x``, ``z``, ...) and a small damping; the joints start away
from zero so that the first right-hand side is not a special case. The base
is a free body floating in gravity under its own weight's opposite (no net
external force on the system at rest), named ``"base"``; bodies are ``b1``,
``b2``, ... in breadth-first order.
"""

from __future__ import annotations

import numpy as np

from .blocks import FloatingBase, PrismaticBody, RevoluteBody, RigidBody
from .errors import ParameterError
from .system import System

LINK = 1.0           # [m] length of a body, port point to child port points
MASS = 1.0           # [kg] of a body
BASE_MASS = 10.0     # [kg]


def _body(n_children, mass=MASS):
    """A slender link along ``-y``: children at its tip, spread in ``x`` when several."""
    spread = np.linspace(-0.1, 0.1, n_children) if n_children > 1 else [0.0]
    tips = [[dx, -LINK, 0.0] for dx in spread][:n_children]             # none on a leaf
    inertia = mass * LINK ** 2 / 12.0 * np.diag([1.0, 0.01, 1.0])
    return RigidBody(mass, inertia, com=[0.0, -LINK / 2, 0.0], children=tips)


def _joint_body(i, n_children, joint):
    axis = (0.0, 0.0, 1.0) if i % 2 else (1.0, 0.0, 0.0)
    body = _body(n_children)
    if joint == "revolute":
        return RevoluteBody(body, axis=axis, q0=0.3 * (-1) ** i, d=0.01)
    if joint == "prismatic":
        return PrismaticBody(body, axis=axis, q0=0.05 * (-1) ** i, k=100.0, d=0.01)
    raise ParameterError("joint", f"must be 'revolute' or 'prismatic', got {joint!r}")


def tree(n: int, branching: int = 2, joint: str = "revolute", solver: str = "recursive") -> System:
    """A floating base carrying ``n`` bodies, body ``i`` (1-based, breadth first) being
    the child of body ``(i - 1) // branching`` (0: the base); ``branching=1`` is a chain."""
    if int(n) != n or n < 1:
        raise ParameterError("n", f"must be a positive integer, got {n!r}")
    if int(branching) != branching or branching < 1:
        raise ParameterError("branching", f"must be a positive integer, got {branching!r}")
    n, branching = int(n), int(branching)
    children = {i: [c for c in range(branching * i + 1, branching * i + branching + 1) if c <= n]
                for i in range(n + 1)}
    name = {0: "base", **{i: f"b{i}" for i in range(1, n + 1)}}
    s = System(solver=solver)
    s.add("base", FloatingBase(_body(len(children[0]), BASE_MASS)))
    for i in range(1, n + 1):
        s.add(name[i], _joint_body(i, len(children[i]), joint))
    for i in range(n + 1):
        for k, c in enumerate(children[i]):
            s.connect(f"{name[i]}.c{k + 1}", name[c])
    m_total = BASE_MASS + n * MASS
    s.set_input("base.ext.w", [0.0, 9.81 * m_total, 0.0, 0.0, 0.0, 0.0])
    return s


def chain(n: int, joint: str = "revolute", solver: str = "recursive") -> System:
    """A floating base carrying a chain of ``n`` bodies (:func:`tree` with ``branching=1``)."""
    return tree(n, 1, joint, solver)
