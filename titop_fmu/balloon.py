"""The paper's balloon system (section 4, Table 1; shared/balloon-scenario.md)
built from TITOP blocks with the in-process :class:`~titop_fmu.system.System`.

Block diagram (Fig. 16)::

    balloon (FloatingBase at B) --c1 at C--> slider (PrismaticBody along t)
      --c1 at S--> pendulum1 (RevoluteBody about r1) --c1 at P1--> pendulum2 (RevoluteBody about r2)

Parameter names are those of the scenario file, in SI units (angles in rad).
"""

from __future__ import annotations

import numpy as np

from .blocks import FloatingBase, PrismaticBody, RevoluteBody, RigidBody
from .errors import ParameterError
from .spatial import dcm_from_quat, euler_from_dcm
from .system import System

#: Scenario values (shared/balloon-scenario.md); angles in rad.
DEFAULTS = {
    "m_B": 10.0,
    "I_B": [[5.0, 0.0, 0.0], [0.0, 10.0, -7.0], [0.0, -7.0, 10.0]],
    "CB": [0.0, 2.0, 0.0],
    "m_S": 1.0,
    "t": [1.0, 0.0, -1.0],
    "m_P1": 2.0,
    "SP1": [0.0, -1.2, 0.0],
    "r1": [0.0, 0.0, 1.0],
    "m_P2": 3.0,
    "P1P2": [0.0, -1.6, 0.0],
    "r2": [0.0, 0.0, 1.0],
    "g": [0.0, -9.81, 0.0],
    "k": 50.0,
    "d_s": 5.0,
    "d_p1": 0.5,
    "d_p2": 0.5,
    "p_0": 0.0,
    "pd_0": 0.0,
    "theta1_0": float(np.radians(170.0)),
    "thetad1_0": 0.0,
    "theta2_0": float(np.radians(-170.0)),
    "thetad2_0": 0.0,
}

#: Units of the scalar parameters, for ``--set`` and documentation.
UNITS = {"m_B": "kg", "m_S": "kg", "m_P1": "kg", "m_P2": "kg", "k": "N/m", "d_s": "N s/m",
         "d_p1": "N m s/rad", "d_p2": "N m s/rad", "p_0": "m", "pd_0": "m/s",
         "theta1_0": "rad", "thetad1_0": "rad/s", "theta2_0": "rad", "thetad2_0": "rad/s",
         "I_B": "kg m^2", "CB": "m", "t": "m", "SP1": "m", "r1": "-", "P1P2": "m", "r2": "-",
         "g": "m/s^2"}

COLUMNS = ("t", "x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2")


def parameters(overrides=None) -> dict:
    """The scenario values with ``overrides`` applied; an unknown name is a ParameterError."""
    p = dict(DEFAULTS)
    for name, value in (overrides or {}).items():
        if name not in DEFAULTS:
            raise ParameterError(name, f"unknown balloon parameter; known: {', '.join(DEFAULTS)}")
        p[name] = value
    return p


def buoyancy(p) -> np.ndarray:
    """``[F; T]`` at B in ``R_i``: ``F = -m_G g`` with ``m_G`` the total mass."""
    m_G = p["m_B"] + p["m_S"] + p["m_P1"] + p["m_P2"]
    return np.concatenate([-m_G * np.asarray(p["g"], dtype=float), np.zeros(3)])


def build(overrides=None) -> System:
    """The balloon system as a :class:`System` (blocks ``balloon``, ``slider``,
    ``pendulum1``, ``pendulum2``)."""
    p = parameters(overrides)
    g = p["g"]
    s = System()
    s.add("balloon", FloatingBase(
        RigidBody(p["m_B"], p["I_B"], com=[0, 0, 0], children=[-np.asarray(p["CB"], dtype=float)]),
        gravity=g))
    s.add("slider", PrismaticBody(
        RigidBody(p["m_S"], children=[[0, 0, 0]]), axis=p["t"], gravity=g,
        q0=p["p_0"], qd0=p["pd_0"], k=p["k"], d=p["d_s"]))
    s.add("pendulum1", RevoluteBody(
        RigidBody(p["m_P1"], com=p["SP1"], children=[p["SP1"]]), axis=p["r1"], gravity=g,
        q0=p["theta1_0"], qd0=p["thetad1_0"], d=p["d_p1"]))
    s.add("pendulum2", RevoluteBody(
        RigidBody(p["m_P2"], com=p["P1P2"]), axis=p["r2"], gravity=g,
        q0=p["theta2_0"], qd0=p["thetad2_0"], d=p["d_p2"]))
    s.connect("balloon.c1", "slider.p")
    s.connect("slider.c1", "pendulum1.p")
    s.connect("pendulum1.c1", "pendulum2.p")
    s.set_input("balloon.ext.w", buoyancy(p))
    return s


def columns(system: System, y: np.ndarray) -> np.ndarray:
    """The CSV columns ``x..theta2`` (without ``t``) for a state or a ``(n, n_states)`` array."""
    y = np.atleast_2d(y)
    b = y[:, system.state_slice("balloon")]
    out = np.empty((y.shape[0], 9))
    out[:, 0:3] = b[:, 6:9]
    out[:, 3:6] = [euler_from_dcm(dcm_from_quat(q)) for q in b[:, 9:13]]
    out[:, 6] = y[:, system.state_slice("slider")][:, 0]
    out[:, 7] = y[:, system.state_slice("pendulum1")][:, 0]
    out[:, 8] = y[:, system.state_slice("pendulum2")][:, 0]
    return out
