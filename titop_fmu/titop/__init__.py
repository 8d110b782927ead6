"""The bridge between the TITOP blocks and the generic co-simulation package: TITOP units
for the master (:mod:`.units`), the monolithic twin of a system of them (:mod:`.monolithic`)
and that twin as one unit and one FMU for any FMI host (:mod:`.assembly`, :mod:`.export`)."""

from .units import TitopUnits

__all__ = ["TitopUnits"]
