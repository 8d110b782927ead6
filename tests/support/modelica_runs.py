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


def mutated_copy(model, old, new, folder) -> Path:
    """A copy of the Modelica file ``model`` in ``folder`` with its one occurrence of ``old``
    replaced by ``new`` (a deliberate mistake the comparison must catch, or a changed
    parameter)."""
    text = Path(model).read_text()
    assert text.count(old) == 1, old
    copy = Path(folder) / Path(model).name
    copy.write_text(text.replace(old, new))
    return copy
