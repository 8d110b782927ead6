"""Shared fixtures: the balloon runs are expensive, make them once per session."""

import warnings

import pytest

from titop_fmu import balloon
from titop_fmu.errors import ParameterWarning


def run_balloon(overrides=None, stop=20.0, tol=1e-12):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        s = balloon.build(overrides)
    return s, s.simulate(stop, 0.01, rtol=tol, atol=tol)


@pytest.fixture(scope="session")
def balloon_run():
    """The scenario as specified, in-process monolithic, 20 s."""
    return run_balloon()


@pytest.fixture(scope="session")
def balloon_undamped_run():
    """The scenario with d_s = d_p1 = d_p2 = 0, 20 s."""
    return run_balloon({"d_s": 0.0, "d_p1": 0.0, "d_p2": 0.0})
