"""The Modelica balloon run, compiled and simulated once per test session (skips with
the reason when there is no Modelica compiler or no MSL)."""

import pytest

from modelica_runs import BALLOON_MO, need_modelica
from titop_fmu import modelica
from validation import compare_twin as twin   # the TITOP side (one import place)


@pytest.fixture(scope="session")
def modelica_balloon():
    """BalloonSystem.mo, 0 to 20 s every 0.01 s (rumoca rk-like, rtol = atol = 1e-12)."""
    need_modelica()
    return modelica.simulate(BALLOON_MO, twin.balloon_columns(), 20.0, 0.01)
