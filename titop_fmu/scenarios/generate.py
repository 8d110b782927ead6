"""Generated test systems: chains and trees of jointed bodies on a floating base.

>>> from titop_fmu.scenarios import generate
>>> s = generate.chain(16)                  # floating base + 16 revolute links: a System
>>> t = generate.tree(31, branching=2)      # a complete binary tree of 31 bodies
>>> s.simulate(1.0)
>>> cs = generate.cosystem(16)              # the same chain for the co-simulation master

Every body is a 1 kg slender link 1 m long along its ``-y`` axis (centre of
mass at mid-length, its children at its tip), with a joint of alternating
axis (``z``, ``x``, ``z``, ...) and a small damping; the joints start away
from zero so that the first right-hand side is not a special case. The base
(``"base"``) is a 10 kg free body whose external force cancels the weight of
the whole system; bodies are ``b1``, ``b2``, ... in breadth-first order.
"""

from __future__ import annotations

import numpy as np

from ..cosim import CoSystem
from ..errors import ParameterError
from ..system import System
from ..titop.monolithic import twin

LINK = 1.0           # [m] length of a body, port point to child port points
MASS = 1.0           # [kg] of a body
BASE_MASS = 10.0     # [kg]
GRAVITY = (0.0, -9.81, 0.0)
JOINTS = {"revolute": (0.3, 0.0), "prismatic": (0.05, 100.0)}   # q0 [rad or m], k


def _bodies(n, branching, joint):
    """``[(name, parent name or None, parameters)]`` of the base and the ``n`` bodies
    (parameter names of the TITOP FMUs: ``mass``, ``inertia``, ``com``, ``ci.r``,
    ``axis``, ``q0``, ``k``, ``d``)."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ParameterError("n", f"must be a positive integer, got {n!r}")
    if isinstance(branching, bool) or int(branching) != branching or branching < 1:
        raise ParameterError("branching", f"must be a positive integer, got {branching!r}")
    if joint not in JOINTS:
        raise ParameterError("joint", f"must be one of {sorted(JOINTS)}, got {joint!r}")
    n, branching = int(n), int(branching)
    q0, k = JOINTS[joint]

    def name(i):
        return "base" if i == 0 else f"b{i}"

    out = []
    for i in range(n + 1):
        kids = [c for c in range(branching * i + 1, branching * i + branching + 1) if c <= n]
        mass = BASE_MASS if i == 0 else MASS
        p = {"mass": mass, "inertia": mass * LINK ** 2 / 12.0 * np.diag([1.0, 0.01, 1.0]),
             "com": [0.0, -LINK / 2, 0.0]}
        spread = np.linspace(-0.1, 0.1, len(kids)) if len(kids) > 1 else [0.0]
        p.update({f"c{c + 1}.r": [dx, -LINK, 0.0] for c, dx in zip(range(len(kids)), spread)})
        if i:
            p.update(axis=[0.0, 0.0, 1.0] if i % 2 else [1.0, 0.0, 0.0], q0=q0 * (-1) ** i, k=k, d=0.01)
        out.append((name(i), None if i == 0 else name((i - 1) // branching), p))
    return out


def _child_points(p):
    """The ``ci.r`` parameters of a body, in port order."""
    return [p[f"c{i}.r"] for i in range(1, 1 + sum(key.endswith(".r") for key in p))]


def _lift(n):
    """The base's external wrench: the opposite of the whole system's weight, in ``R_i``."""
    return np.concatenate([-(BASE_MASS + n * MASS) * np.asarray(GRAVITY), np.zeros(3)])


def tree(n: int, branching: int = 2, joint: str = "revolute", solver: str = "recursive") -> System:
    """A floating base carrying ``n`` bodies, body ``i`` (1-based, breadth first) being
    the child of body ``(i - 1) // branching`` (0: the base); ``branching=1`` is a chain.
    ``joint``: ``"revolute"`` or ``"prismatic"``; ``solver``: see :class:`System`. The
    monolithic twin of :func:`cosystem`."""
    return twin(cosystem(n, branching, joint), solver)


def chain(n: int, joint: str = "revolute", solver: str = "recursive") -> System:
    """A floating base carrying a chain of ``n`` bodies (:func:`tree` with ``branching=1``)."""
    return tree(n, 1, joint, solver)


def cosystem(n: int, branching: int = 2, joint: str = "revolute"):
    """The system of :func:`tree` for the co-simulation master: a
    :class:`titop_fmu.cosim.CoSystem` of TITOP units, recording the base's motion
    vector and every joint's ``joint.q``."""

    cs = CoSystem()
    ports = {}
    for name, parent, p in _bodies(n, branching, joint):
        kind = "floating_base" if parent is None else joint
        cs.add(name, f"{kind}_c{len(_child_points(p))}", gravity=GRAVITY, **p)
        if parent is not None:
            ports[parent] = ports.get(parent, 0) + 1
            cs.link(f"{parent}.c{ports[parent]}", f"{name}.p")
            cs.record(f"{name}.joint.q")
    cs.set_input("base.ext.w", _lift(n))
    cs.record("base.p.m")
    return cs
