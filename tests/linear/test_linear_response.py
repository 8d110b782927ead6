"""The linear model against the non-linear system it comes from: from an initial deviation
``eps dx0`` of an equilibrium, the non-linear response (the monolithic run, rtol 1e-12)
and the linear one ``expm(A t) eps dx0`` differ by O(eps^2): halving ``eps`` divides the
error by 4. At the balloon's hanging equilibrium (a state of rest), and about a steady spin
(a relative equilibrium: the attitude measured from the reference turning with the spin)."""

import numpy as np
import pytest
from scipy.linalg import expm

from linear_checks import difference, perturbed
from titop_fmu.linear.trim import trim
from titop_fmu.scenarios import balloon
from tests.linear.test_trim import spinning_hub

TILTED = {"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)}
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def errors(system, y0, model, dx0, amplitudes, t_stop=3.0):
    """``max_t |x(t) - eps expm(A t) dx0|`` for each amplitude ``eps``."""
    out = []
    for eps in amplitudes:
        tr = system.simulate(t_stop, 0.05, rtol=1e-12, atol=1e-14, y0=perturbed(system, y0, eps * dx0))
        err = 0.0
        for t, y in zip(tr.t, tr.y):
            err = max(err, np.abs(difference(system, y, y0, t) - expm(model.A * t) @ (eps * dx0)).max())
        out.append(err)
    return np.array(out)


def check_second_order(err, eps):
    orders = np.log(err[:-1] / err[1:]) / np.log(eps[:-1] / eps[1:])
    assert np.all(np.abs(orders - 2.0) < 0.1), orders
    assert err[0] < 10 * eps[0] ** 2                 # and small: the linear part is exact
    return orders


def test_the_balloon_responds_as_its_linear_model_to_second_order():
    eq = trim(balloon.build(TILTED))
    s, y0 = eq.system, eq.state
    model = eq.linearize()
    dx0 = np.random.default_rng(0).uniform(-1, 1, model.A.shape[0])
    eps = np.array([2e-2, 1e-2, 5e-3])
    check_second_order(errors(s, y0, model, dx0, eps), eps)


def test_a_steady_spin_responds_as_its_linear_model_in_the_co_rotating_chart():
    s = spinning_hub(5.0)
    eq = trim(s)
    model = eq.linearize()
    dx0 = np.random.default_rng(1).uniform(-1, 1, model.A.shape[0])
    eps = np.array([2e-2, 1e-2, 5e-3])
    check_second_order(errors(eq.system, eq.state, model, dx0, eps, t_stop=2.0), eps)
