"""Co-simulation master for TITOP FMUs (and any FMI 2.0 co-simulation FMU).

* :mod:`.units` -- the unit interface: FMUs through FMPy, blocks in process;
* :mod:`.graph` -- system description, checks, algebraic loops, tearing;
* :mod:`.loop` -- Newton on the torn variables at a communication point;
* :mod:`.cosim` -- macro steps: symmetric coupling iteration, extrapolation,
  step-size control, dense output, statistics;
* :mod:`.engines` -- units from FMUs or in process; :func:`simulate`;
* :mod:`.systemfile` -- the declarative system file (TOML or JSON);
* :mod:`.balloon_fmu` -- the balloon as a system of FMUs;
* :mod:`.cli` -- ``titop-fmu simulate --engine fmu``.
"""

from .cosim import Master, Options, Result, Stats
from .engines import build, simulate
from .graph import CoSystem, analyse
from .loop import LoopError
from .units import FunctionSpec

__all__ = ["CoSystem", "FunctionSpec", "Options", "Master", "Result", "Stats", "LoopError", "analyse",
           "build", "simulate"]
