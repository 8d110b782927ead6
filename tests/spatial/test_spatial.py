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
    """Power is the same at both points: W_C . x'_C == (tau_CP^T W_C) . x'_P (eq. (13), Definition 1)."""
    CP, xp, W = rng.standard_normal(3), rng.standard_normal(6), rng.standard_normal(6)
    t = sp.tau(CP)
    v_C = xp[0:3] + np.cross(xp[3:6], -CP)            # v_C = v_P + omega x PC
    assert np.allclose((t @ xp)[0:3], v_C, atol=1e-14)
    assert np.isclose(W @ (t @ xp), (t.T @ W) @ xp, atol=1e-13)
    T_P = W[3:6] + np.cross(-CP, W[0:3])              # T_P = T_C + PC x F
    assert np.allclose((t.T @ W)[3:6], T_P, atol=1e-14)


def test_dynamic_model_eq4_equals_eq2():
    m, BP = 2.5, rng.standard_normal(3)
    A = rng.standard_normal((3, 3))
    I_B = A @ A.T
    D = sp.dynamic_model(m, I_B, BP)
    S = sp.skew(BP)
    expected = np.block([[m * np.eye(3), m * S], [-m * S, I_B - m * S @ S]])
    assert np.allclose(D, expected, atol=1e-13)
    assert np.allclose(D, D.T) and np.all(np.linalg.eigvalsh(D) > 0)


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


def test_motion_in_frame_and_upsilon():
    m = rng.standard_normal(18)
    m[15:18] = [0.1, -0.2, 0.3]
    P_ab = rand_dcm()
    m_a, P_ai = sp.motion_in_frame(m, P_ab)
    assert np.allclose(m_a[0:15], (sp.P_18(P_ab).T @ m)[0:15], atol=1e-14)
    assert np.allclose(sp.P_x2(P_ab) @ m_a[6:12], m[6:12], atol=1e-14)
    assert np.allclose(m_a[6:9], P_ab.T @ m[6:9])
    assert np.allclose(P_ai, sp.dcm_from_euler(m[15:18]) @ P_ab)
    assert np.allclose(sp.dcm_from_euler(m_a[15:18]), P_ai, atol=1e-14)
    # the inertial position of P does not depend on the projection frame
    assert np.allclose(P_ai @ m_a[12:15], sp.dcm_from_euler(m[15:18]) @ m[12:15])
    CP = rng.standard_normal(3)
    mC = sp.upsilon(CP, m)
    assert np.allclose(mC[12:15], m[12:15] - CP) and np.allclose(mC[15:], m[15:])
    assert np.allclose(mC[6:12], sp.tau(CP) @ m[6:12]) and np.allclose(mC[0:6], sp.tau(CP) @ m[0:6])
