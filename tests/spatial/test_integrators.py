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
    """x'' = -w^2 x over 3 periods: the error is held near the tolerance asked for,
    and the first step's guess comes back for the next call."""
    w, T = 2.0, 3 * np.pi
    x, h_next, n = dopri5(oscillator(w), np.array([1.0, 0.0]), T, rtol, rtol)
    exact = np.array([np.cos(w * T), -w * np.sin(w * T)])
    err = np.max(np.abs(x - exact))
    assert err < 200 * rtol * 2.0 and err > 1e-16
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


def test_repeatable_and_guess_independent_of_history():
    f = oscillator(3.0)
    a = dopri5(f, np.array([0.3, -0.1]), 0.05, 1e-10, 1e-10, h_guess=0.01)
    b = dopri5(f, np.array([0.3, -0.1]), 0.05, 1e-10, 1e-10, h_guess=0.01)
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]


def test_non_finite_derivative_is_an_error():
    with pytest.raises(SolverError, match="non-finite"):
        dopri5(lambda x: x / 0.0 * 0.0, np.array([1.0]), 0.1)


def test_empty_state_or_zero_step_is_a_no_op():
    x, h, n = dopri5(lambda x: x, np.zeros(0), 0.1)
    assert x.size == 0 and n == 0
    x, h, n = dopri5(lambda x: x, np.array([2.0]), 0.0, h_guess=0.01)
    assert x[0] == 2.0 and h == 0.01 and n == 0
