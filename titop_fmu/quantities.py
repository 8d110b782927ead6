"""Numbers written with their units: ``"30 deg"``, ``"5 mm"``, ``"25 g"`` (gram), ``"2 kN m"``,
``"100 rpm"``, ``"3 deg/s"``, read by pint (the units library) and converted to the unit the
value is declared in (an FMI unit string of the catalog or of an FMU: ``"rad"``, ``"kg.m2"``,
``"N.m/rad"``), its dimension checked: a length where a mass is wanted is an error that names
the field. Without a declared unit a value is converted to SI base units (kg, m, s, rad).

Angles are dimensionless, as in SI: ``"3 deg"`` is ``0.05236`` wherever a radian goes;
``rpm`` and ``turn/s`` are turns (``2 pi rad``) per time, while ``Hz`` is ``1/s`` (not a turn
per second). pint is imported when a value first has a unit.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from .errors import TitopError

#: a plain number: no unit, no pint
_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
#: an FMI unit string's factor with an exponent (``m2``, ``s-1``): pint writes ``m**2``
_EXPONENT = re.compile(r"([A-Za-z])(-?\d+)")


class UnitError(TitopError):
    """A value whose unit cannot be read or is of the wrong dimension."""


@lru_cache(maxsize=1)
def registry():
    """The unit registry (pint's defaults: SI and the usual others; ``g`` is the gram)."""
    import pint
    return pint.UnitRegistry()


def pint_unit(unit: str) -> str:
    """An FMI unit string as pint reads it: ``"kg.m2"`` -> ``"kg*m**2"``, ``"m/s2"`` -> ``"m/s**2"``,
    ``"N.m.s/rad"`` -> ``"N*m*s/rad"``; ``"1"`` and ``""`` are dimensionless."""
    unit = unit.strip()
    if unit in ("", "1"):
        return "dimensionless"
    return _EXPONENT.sub(r"\1**\2", unit.replace(".", "*"))


def has_unit(text: str) -> bool:
    """``text`` is not a plain number."""
    return not _NUMBER.match(text)


def si_unit(text) -> str | None:
    """The SI base unit of a number written with its unit (``"25 kg"`` -> ``"kilogram"``, ``"3 rpm"``
    -> ``"radian / second"``); None for anything else (a plain number, an expression of names)."""
    if not isinstance(text, str) or not has_unit(text):
        return None
    ureg = registry()
    try:
        q = ureg.parse_expression(text)
    except Exception:                              # names pint does not know: an expression
        return None
    return str(q.to_base_units().units) if isinstance(q, ureg.Quantity) else None


def quantity(text: str, unit: str | None = None, where: str = "value") -> float:
    """The number ``text`` written with its unit, in the FMI unit ``unit`` (its dimension
    checked), or in SI base units without one: ``quantity("30 deg", "rad") == pi / 6``. A plain
    number is taken as it is (in ``unit``). Errors (:class:`UnitError`) name ``where``."""
    if not text.strip():
        raise UnitError(f"{where}: an empty text is not a number")
    if not has_unit(text):
        return float(text)
    ureg = registry()
    try:
        q = ureg.parse_expression(text)
    except Exception as e:                         # pint's parser raises many kinds: said as one
        raise UnitError(f"{where}: cannot read {text!r} ({_reason(e)}): a number, or a number with its unit "
                        "such as '30 deg', '5 mm', '2 kN m'") from None
    if not isinstance(q, ureg.Quantity):
        q = ureg.Quantity(q)
    try:
        target = ureg.parse_units(pint_unit(unit)) if unit is not None else None
    except Exception:
        raise UnitError(f"{where}: its unit {unit!r} is not one pint knows: give a plain number in {unit}") from None
    try:
        value = q.to(target).magnitude if target is not None else q.to_base_units().magnitude
    except Exception:
        wanted = _dimension(ureg.Quantity(1, target))
        raise UnitError(f"{where}: {text!r} is {_dimension(q)}, not {wanted} (the value is in {unit})") from None
    value = float(value)
    if not math.isfinite(value):
        raise UnitError(f"{where}: {text!r} is not a finite number")
    return value


#: the dimensions of the usual values, by name
DIMENSIONS = {
    "dimensionless": "a number or an angle", "[length]": "a length", "[mass]": "a mass", "[time]": "a time",
    "1 / [time]": "a rate (an angular velocity)", "1 / [time] ** 2": "an angular acceleration",
    "[length] / [time]": "a velocity", "[length] / [time] ** 2": "an acceleration",
    "[mass] * [length] / [time] ** 2": "a force", "[mass] * [length] ** 2 / [time] ** 2": "a torque",
    "[mass] * [length] ** 2": "an inertia", "[mass] / [time] ** 2": "a stiffness (N/m)",
    "[mass] / [time]": "a damping (N s/m)", "[mass] * [length] ** 2 / [time]": "an angular momentum",
}


def _dimension(q) -> str:
    dims = str(q.dimensionality)
    return DIMENSIONS.get(dims, f"of dimension {dims}")


def _reason(e: Exception) -> str:
    text = str(e).strip()
    return text if text else type(e).__name__
