"""Linear models of TITOP systems: equilibria (:func:`trim`), exact linearization at any state
(:func:`linearize` -> :class:`LinearModel`), families of models along a scheduling parameter
(:func:`family` -> :class:`Family`), and the same through the FMUs (:mod:`.fmus`)."""

from .linearize import Linearizer, linearize
from .model import LinearModel, Mode

__all__ = ["LinearModel", "Linearizer", "Mode", "linearize"]
