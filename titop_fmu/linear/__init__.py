"""Linear models of TITOP systems: equilibria (:func:`trim`), exact linearization at any state
(:func:`linearize` -> :class:`LinearModel`), families of models along a scheduling parameter
(:func:`family` -> :class:`Family`), and the same through the FMUs (:mod:`.fmus`)."""

from .linearize import Linearizer, linearize
from .lpv import Family, family
from .model import LinearModel, Mode
from .trim import Equilibrium, trim

__all__ = ["Equilibrium", "Family", "LinearModel", "Linearizer", "Mode", "family", "linearize", "trim"]
