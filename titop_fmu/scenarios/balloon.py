"""The paper's balloon system (section 4, Table 1; docs/balloon-scenario.md), defined
once (:func:`system`) and run by every engine: the monolithic twin (:func:`build`), the
co-simulation master on FMUs or in-process units, and ``examples/balloon.toml`` (a test
checks it is the same system).

Block diagram (Fig. 16)::

    balloon (floating_base_c1 at B) --c1 at C--> slider (prismatic_c1 along t)
      --c1 at S--> pendulum1 (revolute_c1 about r1) --c1 at P1--> pendulum2 (revolute_c0 about r2)

    buoyancy: the constant input balloon.ext.w

Parameter names are those of the scenario file, in SI units (angles in rad). The CSV
columns (:data:`COLUMNS`) come from the states of the monolithic run (:func:`columns`) or
from the units' outputs (:func:`observer`): the balloon's motion vector at the chain tip
C, ``c1.m``, gives the Euler angles and ``[IB]_Ri = P_b/i ([IC]_Rb - [BC]_Rb)``; ``p``,
``theta1``, ``theta2`` are ``joint.q[3]`` of the joints.
"""

from __future__ import annotations

import numpy as np

from ..cosim import CoSystem, Options
from ..errors import ParameterError
from ..fmu import catalog
from ..spatial import Gamma, Gamma_dot, cross, dcm_from_euler, dcm_from_quat, euler_from_dcm
from ..system import System
from ..titop.monolithic import twin

#: Scenario values (docs/balloon-scenario.md); angles in rad.
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

#: the SI unit of each scenario value (None: a direction, no unit)
PARAMETER_UNITS = {"m_B": "kg", "I_B": "kg.m2", "CB": "m", "m_S": "kg", "t": None, "m_P1": "kg", "SP1": "m",
                   "r1": None, "m_P2": "kg", "P1P2": "m", "r2": None, "g": "m/s2", "k": "N/m", "d_s": "N.s/m",
                   "d_p1": "N.m.s/rad", "d_p2": "N.m.s/rad", "p_0": "m", "pd_0": "m/s", "theta1_0": "rad",
                   "thetad1_0": "rad/s", "theta2_0": "rad", "thetad2_0": "rad/s"}

COLUMNS = ("t", "x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2")
#: the SI unit of each column
UNITS = {"t": "s", "x": "m", "y": "m", "z": "m", "phi": "rad", "theta": "rad", "psi": "rad", "p": "m",
         "theta1": "rad", "theta2": "rad"}
#: the columns (without ``t``) that are attitude angles (phi, theta, psi)
ANGLES = np.array([False, False, False, True, True, True, False, False, False])


def parameters(overrides=None) -> dict:
    """The scenario values with ``overrides`` applied; an unknown name is a ParameterError."""
    p = dict(DEFAULTS)
    for name, value in (overrides or {}).items():
        if name not in DEFAULTS:
            raise ParameterError(name, f"unknown balloon parameter; known: {', '.join(DEFAULTS)}")
        p[name] = value
    return p


#: the scenario value each unit parameter is made from (errors name what the user typed)
SOURCES = {
    "balloon": {"mass": "m_B", "inertia": "I_B", "c1.r": "CB", "gravity": "g"},
    "slider": {"mass": "m_S", "axis": "t", "k": "k", "d": "d_s", "q0": "p_0", "qd0": "pd_0", "gravity": "g"},
    "pendulum1": {"mass": "m_P1", "com": "SP1", "c1.r": "SP1", "axis": "r1", "d": "d_p1", "q0": "theta1_0",
                  "qd0": "thetad1_0", "gravity": "g"},
    "pendulum2": {"mass": "m_P2", "com": "P1P2", "axis": "r2", "d": "d_p2", "q0": "theta2_0",
                  "qd0": "thetad2_0", "gravity": "g"},
}


def checked(overrides=None) -> dict:
    """``overrides`` once the scenario they make is valid: every unit builds, the buoyancy is
    finite; a :class:`ParameterError` names the scenario value (``m_P2``, not ``mass``)."""
    overrides = dict(overrides or {})
    p = parameters(overrides)
    for name, value in overrides.items():
        if not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise ParameterError(name, f"must be finite, got {value}")
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.all(np.isfinite(buoyancy(p)))
    if not finite:
        masses = [m for m in ("m_B", "m_S", "m_P1", "m_P2") if m in overrides] or ["g"]
        raise ParameterError(max(masses, key=lambda m: abs(np.max(p[m]))),
                             "too large: the buoyancy -m_G g is not a finite number")
    for unit, spec in system(overrides).units.items():
        try:
            catalog.build_unit(spec.model, spec.parameters)
        except ParameterError as e:
            source = SOURCES[unit].get(e.parameter.split("[")[0])
            raise e.renamed(source or f"{unit}.{e.parameter}") from None
    return overrides


def buoyancy(p) -> np.ndarray:
    """``[F; T]`` at B in ``R_i``: ``F = -m_G g`` with ``m_G`` the total mass."""
    m_G = p["m_B"] + p["m_S"] + p["m_P1"] + p["m_P2"]
    return np.concatenate([-m_G * np.asarray(p["g"], dtype=float), np.zeros(3)])


def system(overrides=None) -> CoSystem:
    p = parameters(overrides)
    g = np.asarray(p["g"], dtype=float)
    zero = np.zeros((3, 3))
    s = CoSystem()
    s.add("balloon", "floating_base_c1", mass=p["m_B"], inertia=p["I_B"], com=[0.0, 0.0, 0.0],
          gravity=g, **{"c1.r": -np.asarray(p["CB"], dtype=float)})
    s.add("slider", "prismatic_c1", mass=p["m_S"], inertia=zero, com=[0.0, 0.0, 0.0], axis=p["t"],
          gravity=g, q0=p["p_0"], qd0=p["pd_0"], k=p["k"], d=p["d_s"], **{"c1.r": [0.0, 0.0, 0.0]})
    s.add("pendulum1", "revolute_c1", mass=p["m_P1"], inertia=zero, com=p["SP1"], axis=p["r1"],
          gravity=g, q0=p["theta1_0"], qd0=p["thetad1_0"], d=p["d_p1"], **{"c1.r": p["SP1"]})
    s.add("pendulum2", "revolute_c0", mass=p["m_P2"], inertia=zero, com=p["P1P2"], axis=p["r2"],
          gravity=g, q0=p["theta2_0"], qd0=p["thetad2_0"], d=p["d_p2"])
    s.link("balloon.c1", "slider.p")
    s.link("slider.c1", "pendulum1.p")
    s.link("pendulum1.c1", "pendulum2.p")
    s.set_input("balloon.ext.w", buoyancy(p))
    s.record("balloon.c1.m", "slider.joint.q", "pendulum1.joint.q", "pendulum2.joint.q")
    return s


def build(overrides=None) -> System:
    """The monolithic twin of :func:`system`: a :class:`System` with the same blocks, the loop
    solved exactly (the ground truth of the co-simulation)."""
    return twin(system(overrides))


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


def motion_outputs(cols) -> dict:
    """The CSV columns ``x..theta2`` (``(n, 9)``, without ``t``) as the outputs of :func:`system`
    that place every body: the balloon's pose at its point ``P = B``, ``balloon.p.m[13..18]``
    (``[IB]_Rb = P_b/i^T [IB]_Ri`` and ``Theta``), and ``joint.q[3]`` of the three joints."""
    cols = np.atleast_2d(np.asarray(cols, dtype=float))
    IB = np.array([dcm_from_euler(Theta).T.dot(r) for r, Theta in zip(cols[:, 0:3], cols[:, 3:6])])
    out = {f"balloon.p.m[{13 + k}]": IB[:, k] for k in range(3)}
    out.update({f"balloon.p.m[{16 + k}]": cols[:, 3 + k] for k in range(3)})
    out.update({f"{unit}.joint.q[3]": cols[:, 6 + k] for k, unit in enumerate(("slider", "pendulum1", "pendulum2"))})
    return out


def observer(overrides=None):
    """``f(recorded outputs) -> (3, 9)``: the CSV columns and their first and second time
    derivatives (for the dense output), from ``balloon.c1.m`` and the joints' ``joint.q``."""
    BC = -np.asarray(parameters(overrides)["CB"], dtype=float)    # [BC]_Rb: B to the tip C

    def observe(rec):
        m = rec[0:18]
        acc, twist, pose = m[0:6], m[6:12], m[12:18]
        Theta = pose[3:6]
        w, dw = twist[3:6], acc[3:6]
        v_B = twist[0:3] - cross(w, BC)                     # v_C + w x CB
        a_B = acc[0:3] - cross(dw, BC)                      # body-frame derivative of v_B
        out = np.empty((3, 9))
        # the position, velocity and acceleration of B, from Rb to the inertial frame
        out[:, 0:3] = np.array([pose[0:3] - BC, v_B, a_B + cross(w, v_B)]) @ dcm_from_euler(Theta).T
        out[0, 3:6] = Theta
        if abs(np.cos(Theta[1])) > 1e-6:
            G = Gamma(Theta)
            dTheta = G @ w
            out[1, 3:6] = dTheta
            out[2, 3:6] = G @ dw + Gamma_dot(Theta, dTheta) @ w
        else:                                                   # gimbal lock: no derivatives
            out[1:, 3:6] = np.nan
        q = rec[18:27].reshape(3, 3)                            # per joint [qdd, qd, q]
        out[:, 6:9] = q[:, ::-1].T
        return out

    return observe


def observed(overrides=None) -> dict:
    """The :class:`Options` that make the master record the balloon's CSV columns: the
    observer, the labels, the angles and the attitude ``(phi, theta, psi)``."""
    return dict(observe=observer(overrides), labels=list(COLUMNS[1:]), angles=ANGLES, attitudes=[(3, 4, 5)])


def options(overrides=None, **kw) -> Options:
    """Master options with the balloon's CSV columns as observed values."""
    return Options(**observed(overrides), **kw)
