"""Spatial algebra against its definitions and independent identities."""

import numpy as np
import pytest

from titop_fmu import spatial as sp

rng = np.random.default_rng(1)


def rand_dcm():
    return sp.dcm_from_quat(rng.standard_normal(4))


def test_skew_is_cross_product():
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    assert np.allclose(sp.skew(a) @ b, np.cross(a, b), atol=1e-15)


def test_tau_transports_twists_and_wrenches_consistently():
    """``tau_CP`` against the cross products of rigid-body kinematics and statics
    (``v_C = v_P + omega x PC``, ``T_P = T_C + PC x F``; eq. (13), Definition 1);
    the power of a wrench, computed without ``tau``, is the same at both points, and
    transports compose: ``tau_QC tau_CP = tau_QP``, ``tau_CP^-1 = tau_PC``."""
    CP, xp, W_C = rng.standard_normal(3), rng.standard_normal(6), rng.standard_normal(6)
    PC, (v_P, w), (F, T_C) = -CP, (xp[0:3], xp[3:6]), (W_C[0:3], W_C[3:6])
    v_C = v_P + np.cross(w, PC)
    T_P = T_C + np.cross(PC, F)
    t = sp.tau(CP)
    assert np.allclose(t @ xp, np.concatenate([v_C, w]), atol=1e-14)
    assert np.allclose(t.T @ W_C, np.concatenate([F, T_P]), atol=1e-14)
    # power: at C with the independent twist == at P with the transported wrench, and back
    assert np.isclose(F @ v_C + T_C @ w, (t.T @ W_C) @ xp, atol=1e-13)
    assert np.isclose(W_C @ (t @ xp), F @ v_P + T_P @ w, atol=1e-13)
    QC = rng.standard_normal(3)
    assert np.allclose(sp.tau(QC) @ t, sp.tau(QC + CP), atol=1e-15)
    assert np.allclose(sp.tau(-CP) @ t, np.eye(6), atol=1e-15)


def test_dynamic_model_eq4_equals_eq2():
    """``D_P`` of eq. (4) is the matrix written out in eq. (2), symmetric positive
    definite, and its kinetic energy (eq. (10)) is ``m |v_B|^2 / 2 + omega I_B omega / 2``
    with ``v_B = v_P + omega x PB`` (König)."""
    m, BP = 2.5, rng.standard_normal(3)
    A = rng.standard_normal((3, 3))
    I_B = A @ A.T
    D = sp.dynamic_model(m, I_B, BP)
    S = sp.skew(BP)
    expected = np.block([[m * np.eye(3), m * S], [-m * S, I_B - m * S @ S]])
    assert np.allclose(D, expected, atol=1e-13)
    assert np.allclose(D, D.T) and np.all(np.linalg.eigvalsh(D) > 0)
    v_P, w = rng.standard_normal(3), rng.standard_normal(3)
    v_B = v_P + np.cross(w, -BP)
    xp = np.concatenate([v_P, w])
    assert np.isclose(0.5 * xp @ D @ xp, 0.5 * m * v_B @ v_B + 0.5 * w @ I_B @ w, rtol=1e-13)


def test_C_operator_eq7_equals_eq5():
    """C(x') D x' (eq. (7)) equals the non-linear terms of eq. (5) written out."""
    m, BP = 1.7, rng.standard_normal(3)
    A = rng.standard_normal((3, 3))
    I_B = A @ A.T
    v, w = rng.standard_normal(3), rng.standard_normal(3)
    D = sp.dynamic_model(m, I_B, BP)
    S, W = sp.skew(BP), sp.skew(w)
    eq5 = np.concatenate([m * W @ v + m * W @ S @ w,
                          -m * S @ W @ v + W @ (I_B - m * S @ S) @ w])
    xp = np.concatenate([v, w])
    assert np.allclose(sp.C(xp) @ D @ xp, eq5, atol=1e-12)
    y = rng.standard_normal(6)
    assert np.allclose(sp.C_times(xp, y), sp.C(xp) @ y, rtol=0, atol=1e-14)
    assert np.allclose(sp.C_times(xp, D @ xp), eq5, atol=1e-12)
    # the non-linear wrench does no work: x'^T C(x') D x' = 0 (kinetic energy balance)
    assert abs(xp @ sp.C_times(xp, y)) <= 1e-13 * np.linalg.norm(xp) ** 2 * np.linalg.norm(y)


def test_newton_euler_eq11_is_newton_and_euler_at_the_centre_of_mass():
    """eq. (11) at ``P`` (with eq. (4), eq. (7)) against the textbook form at ``B``:
    ``F = m (a_B - g)``, ``T_B = I_B omegadot + omega x I_B omega``, ``T_P = T_B + PB x F``,
    with ``a_B = vdot_P + omega x v_P + omegadot x PB + omega x (omega x PB)`` (the
    inertial acceleration from body-frame derivatives)."""
    m, PB = 1.3, rng.standard_normal(3)
    A = rng.standard_normal((3, 3))
    I_B = A @ A.T
    xp, acc, g = rng.standard_normal(6), rng.standard_normal(6), rng.standard_normal(3)
    (v, w), (vdot, wdot) = (xp[0:3], xp[3:6]), (acc[0:3], acc[3:6])
    D = sp.dynamic_model(m, I_B, -PB)
    W = sp.newton_euler(D, acc, np.concatenate([g, np.zeros(3)]), sp.C_times(xp, D @ xp))
    a_B = vdot + np.cross(w, v) + np.cross(wdot, PB) + np.cross(w, np.cross(w, PB))
    F = m * (a_B - g)
    T_P = I_B @ wdot + np.cross(w, I_B @ w) + np.cross(PB, F)
    assert np.allclose(W, np.concatenate([F, T_P]), atol=1e-12)


@pytest.mark.parametrize("Theta", [[0.3, -0.4, 2.9], [-3.0, 1.2, -0.1], [0.0, 0.0, 0.0]])
def test_euler_round_trip_and_sequence(Theta):
    P = sp.dcm_from_euler(Theta)
    assert np.allclose(P, sp.Rz(Theta[2]) @ sp.Ry(Theta[1]) @ sp.Rx(Theta[0]))
    assert np.allclose(sp.euler_from_dcm(P), Theta, atol=1e-14)
    assert np.allclose(P.T @ P, np.eye(3), atol=1e-15) and np.isclose(np.linalg.det(P), 1.0)


def test_euler_at_gimbal_lock_reconstructs_the_dcm():
    for theta in (np.pi / 2, -np.pi / 2):
        P = sp.dcm_from_euler([0.7, theta, -0.4])
        assert np.allclose(sp.dcm_from_euler(sp.euler_from_dcm(P)), P, atol=1e-12)


def test_gamma_maps_body_rates_to_euler_rates():
    """Thetadot = Gamma(Theta) omega_b, checked with dP/dt = P (*omega) by finite differences."""
    Theta, w = np.array([0.3, 0.5, -1.1]), rng.standard_normal(3)
    P = sp.dcm_from_euler(Theta)
    h = 1e-6
    Pp = P @ sp.axis_rotation(w / np.linalg.norm(w), h * np.linalg.norm(w))
    Pm = P @ sp.axis_rotation(w / np.linalg.norm(w), -h * np.linalg.norm(w))
    fd = (sp.euler_from_dcm(Pp) - sp.euler_from_dcm(Pm)) / (2 * h)
    assert np.allclose(sp.Gamma(Theta) @ w, fd, atol=1e-8)
    with pytest.raises(ValueError, match="gimbal"):
        sp.Gamma([0.0, np.pi / 2, 0.0])


def test_gamma_dot_is_the_time_derivative_of_gamma():
    """Gamma_dot(Theta, Thetadot) against central differences of Gamma along Thetadot, also
    close to gimbal lock (theta 89.9 deg) and past it (theta -120 deg); singular where Gamma is."""
    for Theta in ([0.3, 0.5, -1.1], [-2.0, np.radians(89.9), 0.4], [1.0, np.radians(-120.0), 3.0]):
        Theta, dTheta = np.array(Theta), rng.standard_normal(3)
        h = 1e-7 * abs(np.cos(Theta[1]))
        fd = (sp.Gamma(Theta + h * dTheta) - sp.Gamma(Theta - h * dTheta)) / (2 * h)
        got = sp.Gamma_dot(Theta, dTheta)
        assert np.allclose(got, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max()), (got, fd)
    with pytest.raises(ValueError, match="gimbal"):
        sp.Gamma_dot([0.0, -np.pi / 2, 0.0], [1.0, 1.0, 1.0])


def test_axis_rotation_eq16():
    r = rng.standard_normal(3)
    r /= np.linalg.norm(r)
    R = sp.axis_rotation(r, 0.8)
    assert np.allclose(R @ r, r) and np.allclose(R.T @ R, np.eye(3), atol=1e-15)
    assert np.allclose(sp.axis_rotation([0, 0, 1], 0.8), sp.Rz(0.8))
    assert np.allclose(sp.rotation_vector(R), 0.8 * r, atol=1e-14)


def test_quaternions():
    for _ in range(20):
        P = rand_dcm()
        q = sp.quat_from_dcm(P)
        assert np.isclose(np.linalg.norm(q), 1.0) and np.allclose(sp.dcm_from_quat(q), P, atol=1e-14)
    # qdot = 1/2 q (x) [0, w]  <=>  Pdot = P (*w)
    q, w, h = sp.quat_from_dcm(rand_dcm()), rng.standard_normal(3), 1e-6
    dq = sp.quat_derivative(q, w)
    Pdot = (sp.dcm_from_quat(q + h * dq) - sp.dcm_from_quat(q - h * dq)) / (2 * h)
    assert np.allclose(Pdot, sp.dcm_from_quat(q) @ sp.skew(w), atol=1e-8)


def test_rotation_vector_near_pi():
    r = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    for angle in (np.pi - 1e-9, np.pi - 1e-3, 1e-8):
        assert np.allclose(sp.rotation_vector(sp.axis_rotation(r, angle)), angle * r, atol=1e-7)


def test_relative_rotation_vector():
    """Through quaternions, the rotation vector of ``P(b)^T P(a)``: as scipy's rotations give
    it at random attitudes, as the matrix route gives it at gimbal lock, across +-pi and for
    small rotations, and exact for rotations near pi; the quaternion is the DCM's."""
    from scipy.spatial.transform import Rotation
    for _ in range(200):
        a = rng.uniform(-np.pi, np.pi, 3)
        a[1] = rng.uniform(-np.pi / 2, np.pi / 2)
        q = np.array(sp.quat_from_euler(a))
        assert np.allclose(sp.dcm_from_quat(q), sp.dcm_from_euler(a), atol=1e-15)
        for b in (a + 0.3 * rng.standard_normal(3), rng.uniform(-np.pi, np.pi, 3)):
            Ra, Rb = (Rotation.from_euler("ZYX", x[::-1]) for x in (a, b))      # psi, theta, phi
            ref = (Rb.inv() * Ra).as_rotvec()
            if np.linalg.norm(ref) < np.pi - 1e-6:          # at pi the sign of the axis is a choice
                assert np.allclose(sp.relative_rotation_vector(a, b), ref, rtol=0, atol=1e-13)
    for a, b in (([0.3, np.pi / 2, -1.0], [0.2, np.pi / 2 - 1e-9, -1.1]), ([3.1, 0.1, -3.1], [-3.1, 0.1, 3.1]),
                 ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])):
        ref = sp.rotation_vector(sp.dcm_from_euler(b).T @ sp.dcm_from_euler(a))
        assert np.allclose(sp.relative_rotation_vector(a, b), ref, rtol=0, atol=1e-14)
    r = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    b = np.array([0.4, -0.3, 1.2])
    for angle in (np.pi - 1e-9, np.pi - 1e-3, 1e-8):
        a = sp.euler_from_dcm(sp.dcm_from_euler(b) @ sp.axis_rotation(r, angle))
        assert np.allclose(sp.relative_rotation_vector(a, b), angle * r, atol=1e-7)


def test_rotated_euler():
    """``Theta(P(b) e^{(*d)})`` through quaternions: the DCM of the matrix route (random,
    near gimbal lock, tiny, zero and near-pi rotations; the same angles away from gimbal
    lock), and the inverse of relative_rotation_vector."""
    def matrix_route(b, d):
        angle = np.linalg.norm(d)
        R = sp.axis_rotation(d / angle, angle) if angle > 0 else np.eye(3)
        return sp.dcm_from_euler(b) @ R
    cases = [(rng.uniform(-np.pi, np.pi, 3), rng.standard_normal(3)) for _ in range(200)]
    cases += [([0.3, np.pi / 2, -1.0], [0.1, -0.2, 0.3]), ([0.2, np.pi / 2 - 1e-9, -1.1], [1e-12, 0.0, 0.0]),
              ([0.4, -0.3, 1.2], [0.0, 0.0, 0.0]), ([0.4, -0.3, 1.2], [1e-9, -2e-9, 0.0]),
              ([-3.1, 0.1, 3.1], (np.pi - 1e-9) * np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5]))]
    for b, d in cases:
        b, d = np.asarray(b, dtype=float), np.asarray(d, dtype=float)
        b[1] = np.clip(b[1], -np.pi / 2, np.pi / 2)
        P = matrix_route(b, d)
        got = sp.rotated_euler(b, d)
        assert np.allclose(sp.dcm_from_euler(got), P, rtol=0, atol=1e-14)
        if np.hypot(P[0, 0], P[1, 0]) > 1e-6:                          # away from gimbal lock
            assert np.allclose(got, sp.euler_from_dcm(P), rtol=0, atol=1e-13)
        if np.linalg.norm(d) < np.pi - 1e-6:
            assert np.allclose(sp.relative_rotation_vector(got, b), d, rtol=0, atol=1e-12)


def test_batched_attitude_helpers_are_the_single_ones():
    """quats_from_euler, quat_rotation_vectors and rotated_eulers on a flat run of triples give,
    bit for bit, what the single-attitude functions give triple by triple (random attitudes,
    gimbal lock, zero and near-pi rotations); cross is np.cross bit for bit."""
    A = rng.uniform(-np.pi, np.pi, (40, 3))
    A[:, 1] = np.clip(A[:, 1], -np.pi / 2, np.pi / 2)
    A[:3, 1] = np.pi / 2, -np.pi / 2, np.pi / 2 - 1e-9
    B = A + rng.standard_normal((40, 3)) * np.logspace(-12, 0.5, 40)[:, None]
    B[3] = A[3]                                                  # no rotation at all
    B[4] = sp.euler_from_dcm(sp.dcm_from_euler(A[4]) @ sp.axis_rotation([0.0, 0.6, 0.8], np.pi - 1e-9))
    D = rng.standard_normal((40, 3)) * np.logspace(-13, 0.4, 40)[:, None]
    D[5] = 0.0
    qa, qb = sp.quats_from_euler(A.ravel().tolist()), sp.quats_from_euler(B.ravel().tolist())
    assert qa == [sp.quat_from_euler(a) for a in A]
    rv = sp.quat_rotation_vectors(qa, qb)
    assert rv == [x for a, b in zip(A, B) for x in sp.relative_rotation_vector(a, b)]
    assert sp.rotated_eulers(A.ravel().tolist(), D.ravel().tolist()) == \
        [x for a, d in zip(A, D) for x in sp.rotated_euler(a, d)]
    for a, b in zip(rng.standard_normal((1000, 3)) * 10.0 ** rng.uniform(-5, 5, (1000, 1)),
                    rng.standard_normal((1000, 3)) * 10.0 ** rng.uniform(-5, 5, (1000, 1))):
        assert np.array_equal(sp.cross(a, b), np.cross(a, b))


def test_motion_in_frame_and_upsilon():
    m = rng.standard_normal(18)
    m[15:18] = [0.1, -0.2, 0.3]
    P_ab = rand_dcm()
    m_a, P_ai = sp.motion_in_frame(m, P_ab)
    assert np.allclose(m_a[0:15], (sp.P_18(P_ab).T @ m)[0:15], atol=1e-14)
    assert np.allclose(sp.P_x2(P_ab) @ m_a[6:12], m[6:12], atol=1e-14)
    assert np.allclose(P_ai, sp.dcm_from_euler(m[15:18]) @ P_ab)
    assert np.allclose(sp.dcm_from_euler(m_a[15:18]), P_ai, atol=1e-14)
    # every vector of the motion is the same vector in R_i whatever the projection frame
    P_bi = sp.dcm_from_euler(m[15:18])
    for k in range(5):
        assert np.allclose(P_ai @ m_a[3 * k:3 * k + 3], P_bi @ m[3 * k:3 * k + 3], atol=1e-14)


def test_upsilon_is_rigid_body_kinematics():
    """``m_C = upsilon_CP(m_P)`` (eq. (14)) against the cross products: ``v_C = v_P +
    omega x PC``, ``vdot_C = vdot_P + omegadot x PC`` (``PC`` fixed in the body frame),
    same rotation, ``IC = IP + PC``."""
    m = rng.standard_normal(18)
    m[15:18] = [0.1, -0.2, 0.3]
    CP = rng.standard_normal(3)
    PC = -CP
    mC = sp.upsilon(CP, m)
    assert np.allclose(mC[0:3], m[0:3] + np.cross(m[3:6], PC), atol=1e-14)
    assert np.allclose(mC[6:9], m[6:9] + np.cross(m[9:12], PC), atol=1e-14)
    assert np.array_equal(mC[3:6], m[3:6]) and np.array_equal(mC[9:12], m[9:12])
    assert np.allclose(mC[12:15], m[12:15] + PC, atol=1e-15) and np.array_equal(mC[15:18], m[15:18])
    assert np.array_equal(sp.upsilon(CP, m, sp.tau(CP)), mC)


def test_inertial_position_of_a_motion_vector():
    """``[IP]_Ri = P_b/i [IP]_Rb``: a frame turned 90 deg about y sees the point ``[0, 0, 2]_Ri``
    at ``[-2, 0, 0]`` in its own axes (``x_b = -z_i``, ``z_b = x_i``)."""
    m = np.zeros(18)
    m[12:15] = [-2.0, 0.0, 0.0]
    m[15:18] = [0.0, np.pi / 2, 0.0]
    assert np.allclose(sp.inertial_position(m), [0.0, 0.0, 2.0], atol=1e-15)
    rng = np.random.default_rng(7)
    m[12:18] = rng.standard_normal(6)
    assert np.allclose(sp.inertial_position(m), sp.dcm_from_euler(m[15:18]) @ m[12:15], rtol=0, atol=1e-15)


def test_inertial_position_and_twist_of_a_body_point():
    """A point X of a body from its motion vector at P, by the nomenclature's routes: the motion
    vector carried to X (upsilon_XP, eq. (14)) then turned into R_i by P_b/i."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        m = rng.standard_normal(18)
        m[15:18] = [rng.uniform(-np.pi, np.pi), rng.uniform(-1.5, 1.5), rng.uniform(-np.pi, np.pi)]
        PX = rng.standard_normal(3)
        P = sp.dcm_from_euler(m[15:18])
        m_X = sp.upsilon(-PX, m)                                    # XP = -PX
        assert np.allclose(sp.inertial_position(m, PX), P @ m_X[12:15], rtol=0, atol=1e-14)
        assert np.allclose(sp.inertial_twist(m, PX), sp.P_x2(P) @ m_X[6:12], rtol=0, atol=1e-14)
        assert np.array_equal(sp.inertial_position(m), P @ m[12:15])
