"""Rigid-body data shared by every TITOP block, with its parameter checks."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..errors import ParameterError, ParameterWarning
from ..spatial import C_times, dynamic_model, gravity6, skew, tau, upsilon


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


class BodyPorts:
    """The child ports ``c1, c2, ...`` of a body, one per point of ``children``."""

    @property
    def n_children(self):
        return len(self.children)

    def child_ports(self):
        return tuple(f"c{i + 1}" for i in range(self.n_children))


@dataclass(frozen=True, eq=False)
class RigidBody(BodyPorts):
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
        object.__setattr__(self, "_D_inv", None)

    #: the blocks read its children's wrenches only as their sum at ``P`` (eq. (13))
    children_through_sum = True
    n_modes = 0
    state_names = ()
    extra_outputs = {}

    def initial_state(self):
        return np.zeros(0)

    def kinematics(self, g_i, child_ports, m_P, P_ai, outputs=True, x=None, **extra):
        """State-level quantities of the body from its motion vector ``m^A_P`` at its port
        point ``P`` (projected in ``R_a``) and its DCM ``P_a/i``:

        * ``[g; 0]`` projected in ``R_a``, ``P_a/i^T [g]_Ri`` (eq. (11), Fig. 2);
        * the non-linear wrench ``C(x'^A_P) D^A_P x'^A_P`` (eq. (7), eq. (11));
        * with ``outputs``, the child motion vectors ``m^A_Ci = upsilon_CiP(m^A_P)``
          (eq. (14), eq. (23)), with accelerations to be filled by the acceleration stage.

        ``g6`` and ``bias`` are ``(6, 1)`` columns; ``extra`` is block-specific.
        """
        twist = m_P[6:12]
        m_out = {f"{c}.m": upsilon(-PC, m_P, t)
                 for c, PC, t in zip(child_ports, self.children, self.tau_c)} if outputs else {}
        return SimpleNamespace(
            m_A=m_P, P_ai=P_ai, m_out=m_out, outputs=outputs,
            g6=gravity6(P_ai, g_i).reshape(6, 1),
            bias=C_times(twist, self.D_P.dot(twist)).reshape(6, 1),
            **extra)

    def sum_child_wrenches(self, u, child_ports):
        """``sum_i tau_CiP^T W_./A,Ci``: child wrenches transported to ``P`` (eq. (13))."""
        total = None
        for tT, c in zip(self.tau_cT, child_ports):
            W_P = tT.dot(u[f"{c}.w"])
            total = W_P if total is None else total + W_P
        return 0.0 if total is None else total

    def needed_wrench(self, kin, a_hat, u, child_ports):
        """``(W, None)``: the wrench the body needs at ``P`` (applied by its parent) for the
        acceleration ``a_hat = x'dot_P - [g; 0]`` (6 x k), ``W = D_P a_hat + C(x') D_P x' -
        sum_i tau_CiP^T W_./A,Ci`` (eq. (11), eq. (13))."""
        return self.D_P.dot(a_hat) + kin.bias - self.sum_child_wrenches(u, child_ports), None

    def forward(self, kin, w_ext, u, child_ports):
        """``(x'dot_P, None)`` of a free body under the wrench ``w_ext`` at ``P``:
        ``x'dot_P = D_P^-1 (W_ext,P + sum_i tau_CiP^T W_./B,Ci - C(x'_P) D_P x'_P) + [g; 0]``
        (eq. (11), eq. (13), Fig. 2)."""
        total = w_ext + self.sum_child_wrenches(u, child_ports)
        return self.D_inv.dot(total - kin.bias) + kin.g6, None

    def child_accelerations(self, kin, a_P, modal, child_ports):
        """``x'dot_Ci = tau_CiP x'dot_P`` for every child port (Definition 1, eq. (14), eq. (23))."""
        return {f"{c}.a": t.dot(a_P) for t, c in zip(self.tau_c, child_ports)}

    @property
    def D_inv(self):
        """``[D_P]^-1`` (Fig. 2), for a floating base (which checks that it exists)."""
        if self._D_inv is None:
            object.__setattr__(self, "_D_inv", np.linalg.inv(self.D_P))
        return self._D_inv

    def derivatives(self, x, kin, acc):
        return np.zeros(0)

    def output_values(self, kin) -> dict:
        return {}


def rigid_properties(D_P) -> tuple:
    """``(m, [PB], I_B)``: mass, centre of mass and inertia at it of the rigid mass ``D_P`` at
    ``P`` (eq. (4) read backwards)."""
    m = float(D_P[0, 0])
    S = 0.5 * (D_P[3:6, 0:3] - D_P[0:3, 3:6])                              # m (*PB)
    com = np.array([S[2, 1], S[0, 2], S[1, 0]]) / m
    I_B = D_P[3:6, 3:6] + m * skew(com) @ skew(com)
    return m, com, 0.5 * (I_B + I_B.T)
