"""titop-fmu: non-linear TITOP multibody blocks, their FMUs and a co-simulation master."""

__version__ = "0.1.0"
