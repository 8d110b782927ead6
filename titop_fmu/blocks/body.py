"""Rigid-body data shared by every TITOP block, with its parameter checks."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError, ParameterWarning
from ..spatial import dynamic_model, tau


def as_vector(name, value, size=3):
    """``value`` as a finite float vector of ``size`` components, else ParameterError."""
    v = np.asarray(value, dtype=float)
    if v.shape != (size,):
        raise ParameterError(name, f"expected {size} components, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ParameterError(name, f"must be finite, got {v.tolist()}")
    return v


def as_scalar(name, value, minimum=None):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, f"expected a number, got {value!r}") from None
    if not np.isfinite(v):
        raise ParameterError(name, f"must be finite, got {v}")
    if minimum is not None and v < minimum:
        raise ParameterError(name, f"must be >= {minimum}, got {v}")
    return v


def unit_axis(name, value):
    """The unit vector along a joint axis; a zero axis is a ParameterError."""
    v = as_vector(name, value)
    n = np.linalg.norm(v)
    if n < 1e-12:
        raise ParameterError(name, "joint axis must be a non-zero vector")
    return v / n


def check_inertia(name, value):
    """A 3x3 inertia tensor: finite, symmetric, positive semi-definite.

    Principal moments that violate the triangle inequality (``I1 <= I2 + I3``
    ...) cannot come from a real mass distribution; they are accepted with a
    :class:`ParameterWarning` because published data (the paper's balloon,
    principal moments 3, 5, 17 kg m^2) use them.
    """
    J = np.asarray(value, dtype=float)
    if J.shape != (3, 3):
        raise ParameterError(name, f"expected a 3x3 matrix, got shape {J.shape}")
    if not np.all(np.isfinite(J)):
        raise ParameterError(name, "must be finite")
    scale = max(1.0, float(np.max(np.abs(J))))
    if np.max(np.abs(J - J.T)) > 1e-9 * scale:
        raise ParameterError(name, f"inertia must be symmetric, got {J.tolist()}")
    J = 0.5 * (J + J.T)
    eig = np.linalg.eigvalsh(J)
    if eig[0] < -1e-9 * scale:
        raise ParameterError(name, f"inertia must be positive semi-definite, eigenvalues {eig.tolist()}")
    if eig[2] > eig[0] + eig[1] + 1e-9 * scale:
        warnings.warn(
            f"{name}: principal moments {np.round(eig, 6).tolist()} violate the triangle "
            "inequality (no real mass distribution has them); accepted as given",
            ParameterWarning, stacklevel=3)
    return J


@dataclass(frozen=True, eq=False)
class RigidBody:
    """Mass properties and port geometry of a rigid body, projected in its frame ``R_a``.

    mass:      ``m`` [kg], >= 0
    inertia:   ``I_B`` [kg m^2] at the centre of mass ``B``
    com:       ``[PB]`` [m], from the parent (or reference) port point ``P`` to ``B``
    children:  ``[PC_i]`` [m], from ``P`` to each child port point ``C_i``
    """

    mass: float
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    children: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "mass", as_scalar("mass", self.mass, minimum=0.0))
        object.__setattr__(self, "inertia", check_inertia("inertia", self.inertia))
        object.__setattr__(self, "com", as_vector("com", self.com))
        object.__setattr__(self, "children", tuple(
            as_vector(f"children[{i}]", c) for i, c in enumerate(self.children)))
        D = dynamic_model(self.mass, self.inertia, -self.com)               # eq. (4)
        taus = [tau(-PC) for PC in self.children]                          # tau_CiP
        object.__setattr__(self, "D_P", D)
        object.__setattr__(self, "tau_c", taus)
        object.__setattr__(self, "tau_cT", [t.T.copy() for t in taus])

    @property
    def n_children(self):
        return len(self.children)

    def child_ports(self):
        return tuple(f"c{i + 1}" for i in range(self.n_children))
