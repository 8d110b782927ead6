"""Spatial algebra of the non-linear TITOP paper.

Every function here is a symbol of the paper's nomenclature or a numbered
equation, written on plain numpy arrays.

Conventions (the paper's nomenclature; docs/balloon-scenario.md):

* 6-vectors put translation first: twist ``x' = [v_P; omega]``, spatial
  acceleration ``x'dot = [vdot_P; omegadot]`` (time derivatives in the body
  frame), wrench ``W = [F; T_P]``.
* Motion vector (18 components): ``m = [x'dot (6); x' (6); x (6)]`` with the pose
  ``x = [IP; Theta]``; the first 15 components are projected in the body frame,
  the last 3 are the Euler angles of the body frame w.r.t. ``R_i``.
* ``P_a/b`` is the DCM whose columns are the axes of ``R_a`` in ``R_b``:
  ``[v]_Rb = P_a/b [v]_Ra``.
* Euler angles ``Theta = [phi, theta, psi]``, sequence 3-2-1 (intrinsic
  z-y-x): ``P_b/i = Rz(psi) Ry(theta) Rx(phi)``.
* Quaternions are scalar first, ``q = [w, x, y, z]``, with ``P_b/i = R(q)``.

Products in the functions that run at every derivative evaluation are written
``A.dot(x)``: on 6x6 and 3x3 arrays numpy's ``A @ x`` costs twice as much
(about 1.1 against 0.5 microseconds), for the same product.
"""

from __future__ import annotations

import math

import numpy as np

I3 = np.eye(3)
Z3 = np.zeros((3, 3))


def _scalars(v):
    """The components of a small vector as Python floats (scalar arithmetic on them is
    ten times cheaper than on numpy scalars; these functions run in every derivative)."""
    if type(v) is np.ndarray and v.dtype == np.float64:                  # the usual case, no copy
        return v.tolist()
    if type(v) is tuple and all(type(x) is float for x in v):          # already floats (a cache key)
        return v
    return np.asarray(v, dtype=float).tolist()


def skew(v):
    """``(*v)``: the skew-symmetric matrix with ``(*v) u = v x u`` (nomenclature)."""
    x, y, z = _scalars(v)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def cross(a, b):
    """``a x b`` for 3-vectors: ``np.cross``'s products and differences, on floats (a tenth
    of its cost on small vectors, the same bits)."""
    a0, a1, a2 = _scalars(a)
    b0, b1, b2 = _scalars(b)
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def tau(r):
    """Kinematic model ``tau_CP = [[1, (*CP)], [0, 1]]`` for ``r = CP`` (nomenclature).

    Transports a twist (or a spatial acceleration of a rigid body) from ``P`` to
    ``C``: ``x'_C = tau_CP x'_P``; its transpose transports a wrench from ``C``
    to ``P``: ``W_P = tau_CP^T W_C`` (eq. (13)).
    """
    x, y, z = _scalars(r)
    return np.array([
        [1.0, 0.0, 0.0, 0.0, -z, y],
        [0.0, 1.0, 0.0, z, 0.0, -x],
        [0.0, 0.0, 1.0, -y, x, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    ])


def dynamic_model(mass, inertia_B, BP):
    """``D_P = tau_BP^T diag(m 1_3, I_B) tau_BP``: dynamic model at ``P`` (eq. (4)).

    ``inertia_B`` is the inertia tensor at the centre of mass ``B``; ``BP`` the
    vector from ``B`` to ``P``, both in the body frame.
    """
    D_B = np.zeros((6, 6))
    D_B[0:3, 0:3] = mass * I3
    D_B[3:6, 3:6] = inertia_B
    t = tau(BP)
    return t.T @ D_B @ t


def C(twist):
    """``C(x') = [[(*omega), 0], [(*v), (*omega)]]``: non-linear operator of eq. (7)."""
    a, b, c, p, q, r = _scalars(twist)
    return np.array([
        [0.0, -r, q, 0.0, 0.0, 0.0],
        [r, 0.0, -p, 0.0, 0.0, 0.0],
        [-q, p, 0.0, 0.0, 0.0, 0.0],
        [0.0, -c, b, 0.0, -r, q],
        [c, 0.0, -a, r, 0.0, -p],
        [-b, a, 0.0, -q, p, 0.0],
    ])


def C_times(twist, y):
    """``C(x') y = [omega x y_1; v x y_1 + omega x y_2]`` without forming ``C(x')`` (eq. (7)):
    the non-linear wrench ``C(x') D x'`` of every derivative evaluation."""
    vx, vy, vz, wx, wy, wz = _scalars(twist)
    a, b, c, d, e, f = _scalars(y)
    return np.array([
        wy * c - wz * b,
        wz * a - wx * c,
        wx * b - wy * a,
        vy * c - vz * b + wy * f - wz * e,
        vz * a - vx * c + wz * d - wx * f,
        vx * b - vy * a + wx * e - wy * d,
    ])


def newton_euler(D_P, acc, g6, bias):
    """Right-hand side of the Newton-Euler equation with gravity (eq. (11)).

    ``W_ext,P = D_P (x'dot_P - [g; 0]) + C(x'_P) D_P x'_P`` where
    ``bias = C(x'_P) D_P x'_P`` and ``g6 = [g; 0]`` in the body frame. ``acc`` may
    be a 6-vector or a ``(6, k)`` batch of spatial accelerations (``g6`` and
    ``bias`` then are ``(6, 1)`` columns).
    """
    return D_P.dot(acc - g6) + bias


# --- attitude ---------------------------------------------------------------

def Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def Ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def dcm_from_euler(Theta):
    """``P_./i(Theta)``: Euler angles (3-2-1) to DCM, ``Rz(psi) Ry(theta) Rx(phi)`` (expanded)."""
    return np.array(_dcm_from_euler(*_scalars(Theta))).reshape(3, 3)


def _dcm_from_euler(phi, theta, psi):
    """:func:`dcm_from_euler`'s nine entries, row by row, as floats."""
    cf, sf = math.cos(phi), math.sin(phi)
    ct, st = math.cos(theta), math.sin(theta)
    cp, sp = math.cos(psi), math.sin(psi)
    return (cp * ct, cp * st * sf - sp * cf, cp * st * cf + sp * sf,
            sp * ct, sp * st * sf + cp * cf, sp * st * cf - cp * sf,
            -st, ct * sf, ct * cf)


def dcm_euler_partials(Theta):
    """``d P_./i / d Theta``: the derivatives of :func:`dcm_from_euler` w.r.t. ``phi, theta,
    psi``, ``(3, 3, 3)`` (first index: the angle). With ``P = Rz(psi) Ry(theta) Rx(phi)``:
    ``dP/dphi = P (*x)``, ``dP/dtheta = (*Rz(psi) y) P``, ``dP/dpsi = (*z) P``."""
    P = dcm_from_euler(Theta)
    psi = _scalars(Theta)[2]
    return np.array([P @ skew((1.0, 0.0, 0.0)), skew((-math.sin(psi), math.cos(psi), 0.0)) @ P,
                     skew((0.0, 0.0, 1.0)) @ P])


def euler_from_dcm(P):
    """``Theta(P)``: DCM to Euler angles (3-2-1), ``theta`` in ``[-pi/2, pi/2]``.

    At gimbal lock (``cos(theta) = 0``) only ``psi -/+ phi`` is defined; ``phi``
    is then set to 0 so that ``dcm_from_euler(euler_from_dcm(P)) == P`` holds
    everywhere.
    """
    return np.array(euler_angles(P))


def euler_angles(P):
    """:func:`euler_from_dcm` as a list of three floats ``[phi, theta, psi]``."""
    (p00, p01, _), (p10, p11, _), (p20, p21, p22) = np.asarray(P, dtype=float).tolist()
    return _euler(p00, p01, p10, p11, p20, p21, p22)


def _euler(p00, p01, p10, p11, p20, p21, p22, c_theta=None):
    """``[phi, theta, psi]`` from the DCM entries they need (:func:`euler_from_dcm`);
    ``c_theta``, ``cos(theta)``, is ``hypot(p00, p10)`` unless given (:func:`rotated_eulers`
    gives it by ``sqrt``, as the C kernel's twin of it does: ``math.hypot`` and libm's
    ``hypot`` round differently)."""
    if c_theta is None:
        c_theta = math.hypot(p00, p10)
    theta = math.atan2(-p20, c_theta)
    if c_theta > 1e-12:
        phi = math.atan2(p21, p22)
        psi = math.atan2(p10, p00)
    else:
        phi = 0.0
        psi = math.atan2(-p01, p11)
    return [phi, theta, psi]


def Gamma(Theta):
    """``Gamma(Theta)`` with ``Thetadot = Gamma(Theta) [omega]_Rb`` (3-2-1 sequence;
    nomenclature, used in eq. (12)).

    Singular at ``theta = +-pi/2``; the floating bases therefore integrate a
    quaternion and use Euler angles only as outputs.
    """
    phi, theta, _ = _scalars(Theta)
    sp, cp = math.sin(phi), math.cos(phi)
    ct, tt = math.cos(theta), math.tan(theta)
    if abs(ct) < 1e-12:
        raise ValueError("Gamma(Theta) is singular at theta = +-90 deg (gimbal lock)")
    return np.array([[1.0, sp * tt, cp * tt], [0.0, cp, -sp], [0.0, sp / ct, cp / ct]])


def Gamma_dot(Theta, Thetadot):
    """``d Gamma(Theta) / dt`` along ``Thetadot`` (3-2-1 sequence): with it, ``Thetaddot =
    Gamma(Theta) [omegadot]_Rb + Gamma_dot(Theta, Thetadot) [omega]_Rb``. Singular where
    :func:`Gamma` is."""
    phi, theta, _ = _scalars(Theta)
    dphi, dtheta, _ = _scalars(Thetadot)
    sp, cp = math.sin(phi), math.cos(phi)
    st, ct = math.sin(theta), math.cos(theta)
    if abs(ct) < 1e-12:
        raise ValueError("Gamma(Theta) is singular at theta = +-90 deg (gimbal lock)")
    tt, c2 = st / ct, ct * ct
    return np.array([[0.0, cp * dphi * tt + sp * dtheta / c2, -sp * dphi * tt + cp * dtheta / c2],
                     [0.0, -sp * dphi, -cp * dphi],
                     [0.0, (cp * dphi + sp * st * dtheta / ct) / ct, (-sp * dphi + cp * st * dtheta / ct) / ct]])


def axis_rotation(r_unit, theta):
    """``e^{theta (*r~)} = cos(theta) 1 + sin(theta) (*r~) + (1 - cos(theta)) r~ r~^T``:
    rotation by ``theta`` about the unit vector ``r~`` (eq. (16), Rodrigues' formula)."""
    return np.array(_axis_rotation(*_scalars(r_unit), theta)).reshape(3, 3)


def _axis_rotation(x, y, z, theta):
    """:func:`axis_rotation`'s nine entries, row by row, as floats."""
    c, s = math.cos(theta), math.sin(theta)
    v = 1.0 - c
    return (c + v * x * x, v * x * y - s * z, v * x * z + s * y,
            v * x * y + s * z, c + v * y * y, v * y * z - s * x,
            v * x * z - s * y, v * y * z + s * x, c + v * z * z)


def dcm_from_quat(q):
    """``P_b/i`` from a (not necessarily unit) quaternion ``[w, x, y, z]``."""
    w, x, y, z = _scalars(q)
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return np.array([
        [1.0 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
        [s * (x * y + w * z), 1.0 - s * (x * x + z * z), s * (y * z - w * x)],
        [s * (x * z - w * y), s * (y * z + w * x), 1.0 - s * (x * x + y * y)],
    ])


def quat_from_dcm(P):
    """Unit quaternion ``[w, x, y, z]`` (``w >= 0``) of the DCM ``P`` (Shepperd's method)."""
    tr = np.trace(P)
    cands = np.array([tr, P[0, 0], P[1, 1], P[2, 2]])
    i = int(np.argmax(cands))
    if i == 0:
        w = 0.5 * np.sqrt(1.0 + tr)
        q = [w, (P[2, 1] - P[1, 2]) / (4 * w), (P[0, 2] - P[2, 0]) / (4 * w), (P[1, 0] - P[0, 1]) / (4 * w)]
    elif i == 1:
        x = 0.5 * np.sqrt(1.0 + 2 * P[0, 0] - tr)
        q = [(P[2, 1] - P[1, 2]) / (4 * x), x, (P[0, 1] + P[1, 0]) / (4 * x), (P[0, 2] + P[2, 0]) / (4 * x)]
    elif i == 2:
        y = 0.5 * np.sqrt(1.0 + 2 * P[1, 1] - tr)
        q = [(P[0, 2] - P[2, 0]) / (4 * y), (P[0, 1] + P[1, 0]) / (4 * y), y, (P[1, 2] + P[2, 1]) / (4 * y)]
    else:
        z = 0.5 * np.sqrt(1.0 + 2 * P[2, 2] - tr)
        q = [(P[1, 0] - P[0, 1]) / (4 * z), (P[0, 2] + P[2, 0]) / (4 * z), (P[1, 2] + P[2, 1]) / (4 * z), z]
    q = np.array(q)
    return q if q[0] >= 0 else -q


def quat_derivative(q, omega_b):
    """``qdot = 1/2 q (x) [0, omega]`` for the body-frame angular velocity ``omega``."""
    w, x, y, z = _scalars(q)
    p, r_, s = _scalars(omega_b)
    return 0.5 * np.array([
        -x * p - y * r_ - z * s,
        w * p + y * s - z * r_,
        w * r_ + z * p - x * s,
        w * s + x * r_ - y * p,
    ])


def rotation_vector(P):
    """Rotation vector ``phi`` with ``P = e^{(*phi)}`` (the log map of SO(3)), accurate at
    every angle: ``|phi| = atan2(sin, cos)`` from the skew and trace parts of ``P``."""
    a = np.array([P[2, 1] - P[1, 2], P[0, 2] - P[2, 0], P[1, 0] - P[0, 1]])
    s = 0.5 * math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])      # sin(angle)
    c = 0.5 * (P[0, 0] + P[1, 1] + P[2, 2] - 1.0)                      # cos(angle)
    angle = math.atan2(s, c)
    if angle < 1e-4:
        return 0.5 * a * (1.0 + angle * angle / 6.0)                   # angle / sin(angle), to O(angle^4)
    if angle < math.pi - 1e-4:
        return angle / (2.0 * s) * a
    # angle close to pi: axis from the symmetric part
    B = 0.5 * (P + P.T) - c * I3
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / math.sqrt(B[k, k] * (1.0 - c))
    if axis @ a < 0:
        axis = -axis
    return angle * axis / np.linalg.norm(axis)


def quat_from_euler(Theta):
    """Unit quaternion ``(w, x, y, z)`` of ``P_./i(Theta)`` (3-2-1: ``q_z(psi) q_y(theta)
    q_x(phi)``), as a tuple of floats."""
    return quats_from_euler(_scalars(Theta))[0]


def quats_from_euler(angles):
    """:func:`quat_from_euler` of each triple ``phi, theta, psi`` of the flat sequence of floats
    ``angles``: a list of tuples (one call for the attitudes of a vector)."""
    out = []
    for i in range(0, len(angles), 3):
        cf, sf = math.cos(0.5 * angles[i]), math.sin(0.5 * angles[i])
        ct, st = math.cos(0.5 * angles[i + 1]), math.sin(0.5 * angles[i + 1])
        cp, sp = math.cos(0.5 * angles[i + 2]), math.sin(0.5 * angles[i + 2])
        out.append((cp * ct * cf + sp * st * sf, cp * ct * sf - sp * st * cf,
                    cp * st * cf + sp * ct * sf, sp * ct * cf - cp * st * sf))
    return out


def relative_rotation_vector(Theta_a, Theta_b):
    """``rotation_vector(P(Theta_b)^T P(Theta_a))``: the rotation from attitude ``b`` to
    attitude ``a`` in ``b``'s frame, through quaternions (:func:`quat_rotation_vectors`:
    accurate at every angle, a third of the matrix route's cost)."""
    return np.array(quat_rotation_vectors([quat_from_euler(Theta_a)], [quat_from_euler(Theta_b)]))


def quat_rotation_vectors(qs_a, qs_b):
    """The rotation vector of ``q_b^* q_a`` for each pair of unit quaternions ``(w, x, y, z)``
    of ``qs_a`` and ``qs_b``, the shorter way round (``|phi| = 2 atan2(|v|, w)``), one after
    the other in a flat list of floats."""
    out = []
    for (w2, x2, y2, z2), (w1, x1, y1, z1) in zip(qs_a, qs_b):
        w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2
        x = w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2
        y = w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2
        z = w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2
        if w < 0.0:                                     # the shorter way round: angle <= pi
            w, x, y, z = -w, -x, -y, -z
        s = math.sqrt(x * x + y * y + z * z)           # sin(angle / 2)
        k = 2.0 * math.atan2(s, w) / s if s > 1e-300 else 2.0
        out += (k * x, k * y, k * z)
    return out


def rotated_euler(Theta, phi):
    """``Theta(P(Theta) e^{(*phi)})``: the attitude ``Theta`` turned by the rotation vector
    ``phi`` in its own frame, as Euler angles (a list of three floats; the inverse of
    :func:`relative_rotation_vector`). Through the DCMs, on floats: a quaternion route
    loses the small ``cos(theta)`` near gimbal lock to cancellation (3e-8 rad at 1e-9 rad
    from it)."""
    return rotated_eulers(_scalars(Theta), _scalars(phi))


def rotated_eulers(angles, phis):
    """:func:`rotated_euler` of each triple of the flat sequences of floats ``angles`` and
    ``phis``, one after the other in a flat list."""
    out = []
    for i in range(0, len(angles), 3):
        a, b, c = phis[i], phis[i + 1], phis[i + 2]
        angle = math.sqrt(a * a + b * b + c * c)
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (1.0, -c, b, c, 1.0, -a, -b, a, 1.0) if angle < 1e-12 else \
            _axis_rotation(a / angle, b / angle, c / angle, angle)          # 1 + (*phi) when tiny
        p00, p01, p02, p10, p11, p12, p20, p21, p22 = _dcm_from_euler(angles[i], angles[i + 1], angles[i + 2])
        q00, q10 = p00 * r00 + p01 * r10 + p02 * r20, p10 * r00 + p11 * r10 + p12 * r20       # (P R)_ij
        out += _euler(q00, p00 * r01 + p01 * r11 + p02 * r21, q10, p10 * r01 + p11 * r11 + p12 * r21,
                      p20 * r00 + p21 * r10 + p22 * r20, p20 * r01 + p21 * r11 + p22 * r21,
                      p20 * r02 + p21 * r12 + p22 * r22, math.sqrt(q00 * q00 + q10 * q10))
    return out


# --- augmented DCMs and the motion vector -------------------------------------

def P_x2(P_ab):
    """``P_a/b^x2 = diag(P_a/b, P_a/b)``: changes the frame of a 6-vector (nomenclature)."""
    out = np.zeros((6, 6))
    out[0:3, 0:3] = P_ab
    out[3:6, 3:6] = P_ab
    return out


def P_18(P_ab):
    """``P_a/b^18 = diag(P_a/b^x2, P_a/b^x2, P_a/b, 1_3)`` for motion vectors (nomenclature).

    It rotates the first 15 components only; the Euler angles of the new frame
    are given by :func:`motion_in_frame`.
    """
    out = np.eye(18)
    for k in range(5):
        out[3 * k:3 * k + 3, 3 * k:3 * k + 3] = P_ab
    return out


def motion_in_frame(m_b, P_ab, angles=True):
    """``([m_P]_Ra, P_a/i)`` from ``[m_P]_Rb`` for a frame ``R_a`` with ``[v]_Rb = P_a/b [v]_Ra``.

    Components 1-15 are ``(P_a/b^18)^T m``; the attitude becomes
    ``Theta^A = Theta(P_./i(Theta^B) P_a/b)`` (section 3.1). The DCM
    ``P_a/i = P_b/i P_a/b`` is returned as well (gravity needs it).
    ``angles=False`` skips ``Theta^A`` (left NaN) when only the dynamics is needed.
    """
    m_a = np.empty(18)
    m_a[0:15] = m_b[0:15].reshape(5, 3).dot(P_ab).ravel()           # (P_a/b^18)^T m, rows 1-15
    P_ai = dcm_from_euler(m_b[15:18]).dot(P_ab)
    m_a[15:18] = euler_angles(P_ai) if angles else np.nan
    return m_a, P_ai


def upsilon(CP, m_P, t=None):
    """Motion-vector transport ``m_C = upsilon_CP(m_P)`` on a rigid body (Definition 1,
    eq. (14), eq. (23)).

    ``x'dot_C = tau_CP x'dot_P``, ``x'_C = tau_CP x'_P``, ``IC = IP + PC``, same
    attitude; everything projected in the body frame. ``t`` is ``tau_CP`` when the
    caller already has it.
    """
    t = tau(CP) if t is None else t
    m_C = np.empty(18)
    m_C[0:6] = t.dot(m_P[0:6])
    m_C[6:12] = t.dot(m_P[6:12])
    m_C[12:15] = m_P[12:15] - CP
    m_C[15:18] = m_P[15:18]
    return m_C


def gravity6(P_ai, g_i):
    """``[g; 0]`` of eq. (11) projected in the body frame ``R_a`` from ``[g]_Ri`` (Fig. 2)."""
    g6 = np.zeros(6)
    g6[0:3] = g_i.dot(P_ai)                                         # P_a/i^T g
    return g6


# --- a body's motion in the inertial frame ---------------------------------------

def inertial_position(m_P, PX=None):
    """``[IX]_Ri = P_b/i ([IP]_Rb + [PX]_Rb)``: the position in ``R_i`` of the point ``X``
    of a body from its motion vector ``m_P`` (18) at ``P`` (pose ``[IP]_Rb`` and the Euler
    angles ``Theta`` of ``R_b``, components 13-18: the paper's ``x = [IP; Theta]``) and
    ``[PX]_Rb`` (``None``: ``X = P``, ``[IP]_Ri = P_b/i(Theta) [IP]_Rb``)."""
    IX = np.asarray(m_P[12:15], dtype=float)
    return dcm_from_euler(m_P[15:18]).dot(IX if PX is None else IX + PX)


def inertial_twist(m_P, PX=None):
    """``[v_X; omega]_Ri``: the velocity of the point ``X`` of a body and its angular
    velocity, projected in ``R_i``, from its motion vector ``m_P`` at ``P`` (twist
    ``[v_P; omega]_Rb``, components 7-12) and ``[PX]_Rb``: ``v_X = v_P + omega x PX``
    (``tau_XP`` of the nomenclature), both turned by ``P_b/i``."""
    v, w = m_P[6:9], m_P[9:12]
    if PX is not None:
        v = v + np.cross(w, PX)
    P = dcm_from_euler(m_P[15:18])
    return np.concatenate([P.dot(v), P.dot(w)])


def inertial_acceleration(m_P, PX=None):
    """``[a_X; omega_dot]_Ri``: the acceleration of the point ``X`` of a body and its angular
    acceleration, projected in ``R_i``, from its motion vector ``m_P`` at ``P`` (its spatial
    acceleration ``[v'_P; omega']_Rb``, components 1-6, derivatives in the body frame, and its
    twist, components 7-12): ``a_P = v'_P + omega x v_P`` (the derivative in ``R_i`` of a
    vector given in ``R_b``), ``a_X = a_P + omega' x PX + omega x (omega x PX)``, both turned
    by ``P_b/i``."""
    dv, dw, v, w = m_P[0:3], m_P[3:6], m_P[6:9], m_P[9:12]
    a = dv + np.cross(w, v)
    if PX is not None:
        a = a + np.cross(dw, PX) + np.cross(w, np.cross(w, PX))
    P = dcm_from_euler(m_P[15:18])
    return np.concatenate([P.dot(a), P.dot(dw)])


# --- local attitude charts (linear models) -------------------------------------

def quat_multiply(a, b):
    """The Hamilton product ``a (x) b`` of quaternions ``[w, x, y, z]`` (``R(a (x) b) = R(a) R(b)``)."""
    w1, x1, y1, z1 = _scalars(a)
    w2, x2, y2, z2 = _scalars(b)
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_exp(phi):
    """The unit quaternion of the rotation vector ``phi``: ``R(quat_exp(phi)) = e^{(*phi)}``."""
    a, b, c = _scalars(phi)
    angle = math.sqrt(a * a + b * b + c * c)
    k = 0.5 - angle * angle / 48.0 if angle < 1e-4 else math.sin(0.5 * angle) / angle   # sin(angle/2)/angle
    return np.array([math.cos(0.5 * angle), k * a, k * b, k * c])


def quat_chart(q):
    """``dq/dphi``: the 4x3 tangent at ``phi = 0`` of the attitude chart ``q (x) quat_exp(phi)``,
    ``P_b/i = P_b/i,0 e^{(*phi)}`` with ``phi`` the rotation vector of the deviation in the
    body frame: ``1/2 q (x) [0; e_i]`` (as ``qdot = 1/2 q (x) [0; omega]``)."""
    w, x, y, z = _scalars(q)
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def chart_rate_jacobian(omega0):
    """``d phidot / d phi`` at ``phi = 0`` for the chart of :func:`quat_chart` centred on a
    reference attitude turning at the constant body rate ``omega0``, ``P_b/i = P_ref(t)
    e^{(*phi)}`` with ``P_ref = P_b/i,0 e^{t (*omega0)}``: ``phidot = J_r(phi)^-1 (omega -
    e^{-(*phi)} omega0) = (omega - omega0) + phi x omega0 + O(2)`` (``J_r`` the right Jacobian
    of SO(3)), so ``-(*omega0)``, and ``d phidot / d omega = 1``. At rest (``omega0 = 0``) the
    chart is fixed; turning, a relative equilibrium (a steady spin) is a fixed point of it.
    The same for a vector ``rho`` seen from a frame turning at ``omega0``: ``-(*omega0) rho``."""
    return -skew(omega0)


def left_jacobian(rho):
    """``J_l(rho)`` of SO(3): ``d e^{(*rho)} = (*(J_l(rho) d rho)) e^{(*rho)}``,
    ``J_l = 1 + (1 - cos a)/a^2 (*rho) + (a - sin a)/a^3 (*rho)^2`` with ``a = |rho|``."""
    a = float(np.linalg.norm(rho))
    S = skew(rho)
    if a < 1e-4:
        return I3 + (0.5 - a * a / 24.0) * S + (1.0 / 6.0 - a * a / 120.0) * S.dot(S)
    return I3 + (1.0 - math.cos(a)) / (a * a) * S + (a - math.sin(a)) / (a ** 3) * S.dot(S)
