"""The bridge between the TITOP blocks and the generic co-simulation package: TITOP units
for the master (:mod:`.units`) and the monolithic twin of a system of them (:mod:`.monolithic`)."""

from .units import TitopUnits

__all__ = ["TitopUnits"]
