"""The Modelica side of the validation tests: skip with the one-line reason when no
Modelica compiler or no Modelica Standard Library (``MODELICAPATH``) is there."""

from pathlib import Path

import pytest

from titop_fmu import modelica

ROOT = Path(__file__).resolve().parents[2]
BALLOON_MO = ROOT / "validation" / "modelica" / "BalloonSystem.mo"
TWO_BRANCH_MO = ROOT / "validation" / "modelica" / "TwoBranch.mo"
SPACECRAFT_MO = ROOT / "validation" / "modelica" / "Spacecraft.mo"


def need_modelica():
    """Skip (with the reason in pytest's summary) unless a Modelica compiler and the MSL are there."""
    reason = modelica.unavailable_reason()
    if reason:
        pytest.skip(reason)
