"""The in-process balloon run the tests compare against (shared by fixtures and tests)."""

import warnings

from titop_fmu.scenarios import balloon
from titop_fmu.errors import ParameterWarning


def run_balloon(overrides=None, stop=20.0, tol=1e-12):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        s = balloon.build(overrides)
    return s, s.simulate(stop, 0.01, rtol=tol, atol=tol)
