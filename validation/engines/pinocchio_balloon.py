"""Independent multibody reference of the balloon system, built with Pinocchio.

This module shares no equation with ``titop_fmu`` (only the scenario data,
``titop_fmu.scenarios.balloon.DEFAULTS``); it rebuilds the 9-d.o.f. balloon
system of the validation scenario (docs/balloon-scenario.md, paper
Section 4 / Table 1) as a Pinocchio kinematic tree and integrates it with
SciPy, so that the block-diagram model can be cross-checked against it.

Conventions
-----------
* Inertial frame ``R_i``, y up, ``g = [0, -9.81, 0]``.
* ``P_bi`` is the DCM whose columns are the body axes expressed in ``R_i``:
  ``[v]_Ri = P_bi @ [v]_Rb``.  Euler angles 3-2-1:
  ``P_bi = Rz(psi) @ Ry(theta) @ Rx(phi)``; ``theta`` in [-pi/2, pi/2],
  ``phi`` and ``psi`` from ``atan2``.
* Base (balloon) state: ``r = [IB]_Ri`` (B = balloon centre of mass), ``P_bi``,
  twist at B in the body frame ``v_b = [v_B]_Rb``, ``w_b = [omega]_Rb``.
  Base accelerations are the body-frame time derivatives
  ``d[v_B]_Rb/dt`` and ``d[omega]_Rb/dt`` (Pinocchio's free-flyer ``ddq``
  with the default LOCAL convention).  Note that ``d[v_B]_Rb/dt`` is *not*
  the acceleration of B projected in ``R_b``; that one is
  ``d[v_B]_Rb/dt + w_b x v_b``.
* Joints ``q = [p, theta1, theta2]`` (slider, pendulum 1, pendulum 2 relative
  to pendulum 1) and rates ``qd``.
* Pinocchio tree: free-flyer at B (body frame = balloon frame), prismatic
  joint at C = B - CB along the unit vector ``t`` (slider frame = balloon
  frame, S = C + p t), revolute about ``r1`` at S (frame R_p1), revolute about
  ``r2`` at P1 (frame R_p2, ``SP1`` given in R_p1, ``P1P2`` in R_p2).  All
  bodies but the balloon are point masses.
* Buoyancy ``F = -(m_B + m_S + m_P1 + m_P2) g`` is constant in ``R_i`` and
  applied at B without torque; it enters ABA as an external force on the
  free-flyer joint, hence expressed in the *local* (balloon) frame.
"""

import functools
import json

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp

from titop_fmu.scenarios import balloon

# The scenario's numbers (docs/balloon-scenario.md). Only the data is shared with
# the TITOP code, none of its equations.
DEFAULTS = balloon.DEFAULTS

OUTPUTS = balloon.COLUMNS


def _params(params):
    """Defaults overridden by ``params`` (unknown keys are an error)."""
    out = dict(DEFAULTS)
    for key, value in (params or {}).items():
        if key not in DEFAULTS:
            raise KeyError(f"unknown parameter {key!r}")
        out[key] = value
    return out


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _point_mass(m, c):
    return pin.Inertia(float(m), np.asarray(c, dtype=float), np.zeros((3, 3)))


def build_model(params=None):
    """Pinocchio model: free-flyer balloon + prismatic + two revolutes.

    Joint order (Pinocchio ids): 1 balloon free-flyer at B, 2 slider
    (prismatic-unaligned at C), 3 pendulum 1 (revolute at S), 4 pendulum 2
    (revolute at P1).  ``model.gravity`` is set from ``params['g']``.
    """
    p = _params(params)
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(p["g"], dtype=float), np.zeros(3))
    eye = np.eye(3)

    jb = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "balloon")
    model.appendBodyToJoint(
        jb, pin.Inertia(float(p["m_B"]), np.zeros(3), np.asarray(p["I_B"], dtype=float)),
        pin.SE3.Identity())

    BC = -np.asarray(p["CB"], dtype=float)
    js = model.addJoint(jb, pin.JointModelPrismaticUnaligned(_unit(p["t"])),
                        pin.SE3(eye, BC), "slider")
    model.appendBodyToJoint(js, _point_mass(p["m_S"], np.zeros(3)), pin.SE3.Identity())

    j1 = model.addJoint(js, pin.JointModelRevoluteUnaligned(_unit(p["r1"])),
                        pin.SE3.Identity(), "pendulum1")
    model.appendBodyToJoint(j1, _point_mass(p["m_P1"], p["SP1"]), pin.SE3.Identity())

    j2 = model.addJoint(j1, pin.JointModelRevoluteUnaligned(_unit(p["r2"])),
                        pin.SE3(eye, np.asarray(p["SP1"], dtype=float)), "pendulum2")
    model.appendBodyToJoint(j2, _point_mass(p["m_P2"], p["P1P2"]), pin.SE3.Identity())
    # the point masses as frames: P1 on pendulum 1, the tip P2 on pendulum 2 (axes of their bodies)
    for name, joint, point in (("P1", j1, p["SP1"]), ("tip", j2, p["P1P2"])):
        model.addFrame(pin.Frame(name, joint, pin.SE3(eye, np.asarray(point, dtype=float)), pin.FrameType.OP_FRAME))
    return model


class _Context:
    """Model, data and derived constants for one parameter set."""

    def __init__(self, params):
        self.p = _params(params)
        self.model = build_model(self.p)
        self.data = self.model.createData()
        m_tot = sum(self.p[k] for k in ("m_B", "m_S", "m_P1", "m_P2"))
        self.F_buoy = -m_tot * np.asarray(self.p["g"], dtype=float)

    def joint_torques(self, q, qd):
        p = self.p
        return np.array([-p["k"] * q[0] - p["d_s"] * qd[0],
                         -p["d_p1"] * qd[1],
                         -p["d_p2"] * qd[2]])

    def fext(self, P_bi):
        """Buoyancy as Pinocchio external forces (local joint frames)."""
        f = [pin.Force.Zero() for _ in range(self.model.njoints)]
        f[1] = pin.Force(P_bi.T @ self.F_buoy, np.zeros(3))
        return f


@functools.lru_cache(maxsize=8)
def _cached_context(key):
    return _Context(json.loads(key))


def _context(params):
    return _cached_context(json.dumps(_params(params), sort_keys=True,
                                      default=lambda o: np.asarray(o).tolist()))


def _pin_q(r, quat_wxyz, q):
    w, x, y, z = quat_wxyz / np.linalg.norm(quat_wxyz)
    return np.concatenate([r, [x, y, z, w], q])


def _dcm_to_quat(P_bi):
    c = pin.Quaternion(np.asarray(P_bi, dtype=float)).coeffs()  # x, y, z, w
    return np.array([c[3], c[0], c[1], c[2]])


def _quat_to_dcm(quat_wxyz):
    w, x, y, z = quat_wxyz / np.linalg.norm(quat_wxyz)
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


def _aba(ctx, r, quat_wxyz, v_b, w_b, q, qd):
    qpin = _pin_q(r, quat_wxyz, q)
    vpin = np.concatenate([v_b, w_b, qd])
    tau = np.concatenate([np.zeros(6), ctx.joint_torques(q, qd)])
    P_bi = _quat_to_dcm(quat_wxyz)
    return pin.aba(ctx.model, ctx.data, qpin, vpin, tau, ctx.fext(P_bi))


def accelerations(params, r, P_bi, v_b, w_b, q, qd):
    """Forward dynamics (Pinocchio ABA).

    Returns ``(vdot_b, wdot_b, qdd)`` with ``vdot_b = d[v_B]_Rb/dt``,
    ``wdot_b = d[omega]_Rb/dt`` and ``qdd = [pdd, thetadd1, thetadd2]``.
    """
    ctx = _context(params)
    a = _aba(ctx, np.asarray(r, float), _dcm_to_quat(P_bi), np.asarray(v_b, float),
             np.asarray(w_b, float), np.asarray(q, float), np.asarray(qd, float))
    return a[0:3].copy(), a[3:6].copy(), a[6:9].copy()


def linearization(params, r, P_bi, v_b, w_b, q, qd):
    """``A`` (18 x 18) of ``d/dt [dq; v]`` at a state of rest (``v = 0``), ``dq`` Pinocchio's
    tangent of the configuration (the balloon's translation and rotation in its LOCAL frame,
    then the joints): ``[[0, 1], [ddq/dq, ddq/dv]]`` from ``computeABADerivatives``, with
    what it holds constant added through ``M^-1``: the spring and dampers of the joints,
    and the buoyancy, fixed in ``R_i``, turning by ``-dphi`` in the balloon frame."""
    ctx = _context(params)
    quat = _dcm_to_quat(P_bi)
    qpin = _pin_q(np.asarray(r, float), quat, np.asarray(q, float))
    vpin = np.concatenate([v_b, w_b, qd])
    tau = np.concatenate([np.zeros(6), ctx.joint_torques(q, qd)])
    pin.computeABADerivatives(ctx.model, ctx.data, qpin, vpin, tau, ctx.fext(np.asarray(P_bi, float)))
    Minv = np.triu(ctx.data.Minv) + np.triu(ctx.data.Minv, 1).T
    p = ctx.p
    dtau_dq, dtau_dv = np.zeros((9, 9)), np.zeros((9, 9))
    dtau_dq[6, 6] = -p["k"]
    dtau_dv[6, 6], dtau_dv[7, 7], dtau_dv[8, 8] = -p["d_s"], -p["d_p1"], -p["d_p2"]
    F = np.asarray(P_bi, float).T @ ctx.F_buoy                        # buoyancy in the balloon frame
    dfext = np.zeros((9, 9))
    dfext[0:3, 3:6] = [[0.0, -F[2], F[1]], [F[2], 0.0, -F[0]], [-F[1], F[0], 0.0]]
    A = np.zeros((18, 18))
    A[:9, 9:] = np.eye(9)
    A[9:, :9] = ctx.data.ddq_dq + Minv @ (dtau_dq + dfext)
    A[9:, 9:] = ctx.data.ddq_dv + Minv @ dtau_dv
    return A


def energy(params, r, P_bi, v_b, w_b, q, qd):
    """Total mechanical energy: kinetic + gravity + buoyancy (-F.r_B) + spring."""
    ctx = _context(params)
    qpin = _pin_q(np.asarray(r, float), _dcm_to_quat(P_bi), np.asarray(q, float))
    vpin = np.concatenate([v_b, w_b, qd])
    kin = pin.computeKineticEnergy(ctx.model, ctx.data, qpin, vpin)
    grav = pin.computePotentialEnergy(ctx.model, ctx.data, qpin)  # = -sum m_i g.r_i
    buoy = -float(ctx.F_buoy @ np.asarray(r, float))
    spring = 0.5 * ctx.p["k"] * q[0] ** 2
    return kin + grav + buoy + spring


def center_of_mass(params, r, P_bi, q):
    """Centre of mass of the whole system, in R_i."""
    ctx = _context(params)
    qpin = _pin_q(np.asarray(r, float), _dcm_to_quat(P_bi), np.asarray(q, float))
    return pin.centerOfMass(ctx.model, ctx.data, qpin).copy()


def frame_motion(params, state, frame="tip"):
    """``(position, rotation, velocity)`` of a frame of :func:`build_model` (``"P1"``, ``"tip"``)
    at a state of :func:`simulate` (``full=True``), from Pinocchio's forward kinematics: its
    origin in the inertial frame, the rotation of its axes (columns: the body axes in R_i) and
    ``[v; omega]`` of its origin in the inertial frame's axes (``LOCAL_WORLD_ALIGNED``)."""
    ctx = _context(params)
    r, quat, v_b, w_b, q, qd = state[0:3], state[3:7], state[7:10], state[10:13], state[13:16], state[16:19]
    fid = ctx.model.getFrameId(frame)
    pin.forwardKinematics(ctx.model, ctx.data, _pin_q(r, quat, q), np.concatenate([v_b, w_b, qd]))
    placement = pin.updateFramePlacement(ctx.model, ctx.data, fid)
    v = pin.getFrameVelocity(ctx.model, ctx.data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    return placement.translation.copy(), placement.rotation.copy(), np.concatenate([v.linear, v.angular])


def euler_321(P_bi):
    """(phi, theta, psi) with P_bi = Rz(psi) Ry(theta) Rx(phi)."""
    P = np.asarray(P_bi)
    theta = np.arcsin(np.clip(-P[2, 0], -1.0, 1.0)) + 0.0  # no -0.0
    return np.arctan2(P[2, 1], P[2, 2]), theta, np.arctan2(P[1, 0], P[0, 0])


# --- state vector: [r(3), quat w,x,y,z (4), v_b(3), w_b(3), q(3), qd(3)] ----

def initial_state(params=None):
    """Scenario initial state: B at origin, P_bi = I, v = w = 0."""
    p = _params(params)
    return np.concatenate([np.zeros(3), [1.0, 0.0, 0.0, 0.0], np.zeros(6),
                           [p["p_0"], p["theta1_0"], p["theta2_0"]],
                           [p["pd_0"], p["thetad1_0"], p["thetad2_0"]]])


def unpack(y):
    """State vector -> (r, P_bi, v_b, w_b, q, qd)."""
    return y[0:3], _quat_to_dcm(y[3:7]), y[7:10], y[10:13], y[13:16], y[16:19]


def _quat_rate(quat_wxyz, w_b):
    """qdot = 0.5 q (x) [0, w_b] (Hamilton product, scalar first)."""
    w, x, y, z = quat_wxyz
    wx, wy, wz = w_b
    return 0.5 * np.array([-x * wx - y * wy - z * wz,
                           w * wx + y * wz - z * wy,
                           w * wy - x * wz + z * wx,
                           w * wz + x * wy - y * wx])


def rhs(params=None):
    """Right-hand side f(t, y) of the 19-state ODE."""
    ctx = _context(params)

    def f(_t, y):
        r, quat, v_b, w_b, q, qd = y[0:3], y[3:7], y[7:10], y[10:13], y[13:16], y[16:19]
        a = _aba(ctx, r, quat, v_b, w_b, q, qd)
        quat_n = quat / np.linalg.norm(quat)
        return np.concatenate([_quat_to_dcm(quat_n) @ v_b, _quat_rate(quat_n, w_b),
                               a[0:6], qd, a[6:9]])

    return f


def simulate(params=None, t_stop=20.0, dt=0.01, rtol=1e-12, atol=1e-12, full=False):
    """Integrate the scenario with solve_ivp (DOP853) from the initial state.

    Returns a dict of arrays sampled on t = 0, dt, ..., t_stop with keys
    t, x, y, z (= [IB]_Ri), phi, theta, psi (3-2-1 Euler angles of P_bi),
    p, theta1, theta2.  With ``full=True`` the raw state samples are added
    under key ``"state"`` (shape (N, 19), layout of :func:`initial_state`).
    """
    n = int(round(t_stop / dt))
    t_eval = np.arange(n + 1) * dt
    t_eval[-1] = min(t_eval[-1], t_stop)
    sol = solve_ivp(rhs(params), (0.0, t_stop), initial_state(params), method="DOP853",
                    t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(sol.message)
    Y = sol.y.T
    euler = np.array([euler_321(_quat_to_dcm(y[3:7])) for y in Y])
    out = {"t": sol.t, "x": Y[:, 0], "y": Y[:, 1], "z": Y[:, 2],
           "phi": euler[:, 0], "theta": euler[:, 1], "psi": euler[:, 2],
           "p": Y[:, 13], "theta1": Y[:, 14], "theta2": Y[:, 15]}
    if full:
        out["state"] = Y
    return out
