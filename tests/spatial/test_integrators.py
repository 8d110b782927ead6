"""The communication-step integrator (Dormand-Prince 5(4)) against exact solutions."""

import numpy as np
import pytest

from titop_fmu.errors import SolverError
from titop_fmu.integrators import dopri5


def oscillator(w):
    A = np.array([[0.0, 1.0], [-w * w, 0.0]])
    return lambda x: A @ x


@pytest.mark.parametrize("rtol", [1e-6, 1e-9, 1e-12])
def test_the_error_follows_the_tolerance(rtol):
    """x'' = -w^2 x over 3 periods, the relative tolerance governing (atol = rtol / 1000):
    the error against the exact solution stays within a small factor of rtol, on both
    sides (an integrator that ignored rtol would be far more or far less accurate), and
    the last step's guess comes back for the next call."""
    w, T = 2.0, 3 * np.pi
    x, h_next, n = dopri5(oscillator(w), np.array([1.0, 0.0]), T, rtol, rtol * 1e-3)
    exact = np.array([np.cos(w * T), -w * np.sin(w * T)])
    err = np.max(np.abs(x - exact))
    assert rtol / 20 < err < 20 * rtol
    assert n % 6 == 1 and 0 < h_next <= T


def test_fifth_order_on_one_step():
    """One step of size h on x' = x: the local error scales like h^6."""
    f = lambda x: x
    errs = []
    for h in (0.2, 0.1):
        x, _, n = dopri5(f, np.array([1.0]), h, rtol=1.0, atol=1.0)     # no step rejected
        assert n == 7
        errs.append(abs(x[0] - np.exp(h)))
    assert 5.5 < np.log2(errs[0] / errs[1]) < 6.5


def test_fifth_order_over_many_steps():
    """Unit steps (one step per call, the state carried from call to call) on x' = x
    over [0, 1]: the global error scales like h^5 when h is halved."""
    def error(h):
        x = np.array([1.0])
        for _ in range(round(1.0 / h)):
            x, _, n = dopri5(lambda x: x, x, h, rtol=1.0, atol=1.0)
            assert n == 7
        return abs(x[0] - np.e)
    e = [error(h) for h in (0.1, 0.05, 0.025)]
    assert 4.5 < np.log2(e[0] / e[1]) < 5.5 and 4.5 < np.log2(e[1] / e[2]) < 5.5


def test_repeatable_and_independent_of_history():
    """The same call gives the same result bit for bit (state, guess, evaluations)
    whatever ran before it: other problems, rejected steps, other tolerances and
    guesses. Only ``h_guess`` carries history, as part of the caller's state."""
    f = oscillator(3.0)
    x0 = np.array([0.3, -0.1])
    a = dopri5(f, x0, 0.05, 1e-10, 1e-10, h_guess=0.01)
    history = [
        dopri5(oscillator(40.0), np.array([1.0, 0.0]), 1.0, 1e-6, 1e-6, h_guess=0.5),
        dopri5(lambda x: -1e3 * x, np.array([1.0]), 0.1, 1e-12, 1e-12),
        dopri5(f, a[0], 0.05, 1e-10, 1e-10, h_guess=a[1]),
    ]
    assert history[0][2] > 7 * 6                     # many steps, some rejected
    b = dopri5(f, x0, 0.05, 1e-10, 1e-10, h_guess=0.01)
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]
    c = dopri5(f, x0, 0.05, 1e-10, 1e-10, h_guess=0.002)        # the guess does matter
    assert c[2] != a[2] and np.allclose(c[0], a[0], rtol=0, atol=1e-9)


@pytest.mark.filterwarnings("error")
def test_non_finite_derivative_is_an_error():
    """A NaN derivative is reported as a SolverError (made without numpy warnings)."""
    with pytest.raises(SolverError, match="non-finite"):
        dopri5(lambda x: np.full_like(x, np.nan), np.array([1.0]), 0.1)


def test_empty_state_or_zero_step_is_a_no_op():
    x, h, n = dopri5(lambda x: x, np.zeros(0), 0.1)
    assert x.size == 0 and n == 0
    x, h, n = dopri5(lambda x: x, np.array([2.0]), 0.0, h_guess=0.01)
    assert x[0] == 2.0 and h == 0.01 and n == 0


def test_a_non_autonomous_system_from_its_start_time():
    """x' = t cos(t^2 / 2) - x + sin(t^2 / 2) from t0 = 1.3 over 2 s: x = sin(t^2 / 2) exactly
    (each stage evaluated at its own time), to the tolerance; and the stages' times are the
    tableau's nodes (c = A's row sums)."""
    from titop_fmu.integrators import _A, _C
    t0, h = 1.3, 2.0
    f = lambda t, x: t * np.cos(t * t / 2) - x + np.sin(t * t / 2)
    x, _, _ = dopri5(f, np.array([np.sin(t0 * t0 / 2)]), h, 1e-12, 1e-12, t0=t0)
    assert abs(x[0] - np.sin((t0 + h) ** 2 / 2)) < 1e-11
    np.testing.assert_allclose(_C[1:], _A.sum(axis=1), rtol=0, atol=1e-15)
    seen = []
    dopri5(lambda t, x: seen.append(t) or x, np.ones(1), 0.5, 1.0, 1.0, t0=t0)        # one step
    np.testing.assert_allclose(seen, t0 + 0.5 * _C, rtol=0, atol=1e-15)


def test_a_sliver_of_a_last_step_does_not_shrink_the_next_call():
    """A last internal step cut short by the end of the call (here to 2e-12 s of a 1 s call,
    the tolerance loose enough for every step to pass) leaves the next call the controller's
    own step, not the sliver; and a call from a guess of a few ulps grows its step, with no
    "step size underflow" after an accepted step (a PID unit stopped a closed loop so)."""
    f = oscillator(1e-3)
    _, h_next, n = dopri5(f, np.array([1.0, 0.0]), 1.0, rtol=1.0, atol=1.0, h_guess=1.0 - 2e-12)
    assert n == 13 and h_next >= 1.0                 # two steps: the guess, then the sliver
    x, _, _ = dopri5(oscillator(2.0), np.array([1.0, 0.0]), 3e-6, 1e-12, 1e-12, h_guess=1.4e-16)
    ref, _, _ = dopri5(oscillator(2.0), np.array([1.0, 0.0]), 3e-6, 1e-12, 1e-12)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-15)
