"""Generic FMI 2.0 co-simulation: systems of units with algebraic loops, solved at every
communication point, coupled by a symmetric iterated scheme with extrapolation.

Nothing here knows TITOP: the units come from a :class:`~.protocol.UnitFactory`
(FMU files and Python functions here; TITOP blocks from :mod:`titop_fmu.titop`).

* :mod:`.names` -- FMI structured variable names;
* :mod:`.protocol` -- :class:`Unit`, :class:`UnitType`, :class:`UnitFactory`;
* :mod:`.fmpy_unit`, :mod:`.function_unit` -- units of FMU files and Python functions;
* :mod:`.graph` -- the system description (:class:`CoSystem`); :mod:`.systemfile` reads it from a file,
  :mod:`.ssp` writes and reads it as an SSP 1.0 package;
* :mod:`.structure`, :mod:`.cycles` -- checks, algebraic loops and their unknowns, schedules;
* :mod:`.loop` -- Newton on the loops' unknowns at a communication point;
* :mod:`.options` -- settings (resolved once) and statistics;
* :mod:`.numerics` -- angles, extrapolation weights, interpolation;
* :mod:`.charts` -- differences and steps of angles and attitudes (on the rotation group);
* :mod:`.dense` -- the output between mesh points;
* :mod:`.run`, :mod:`.stepper`, :mod:`.workers` -- one run's base steps, groups of runs,
  worker processes;
* :mod:`.master` -- macro steps, extrapolation, step-size control, output;
* :mod:`.engine` -- :func:`build` and :func:`simulate`.
"""

from .engine import FileUnits, build, simulate
from .function_unit import FunctionSpec
from .graph import CoSystem
from .loop import LoopError
from .master import Master, Result
from .options import Options, Stats
from .protocol import Unit, UnitFactory, UnitType, Variable
from .structure import analyse

__all__ = ["CoSystem", "FileUnits", "FunctionSpec", "LoopError", "Master", "Options", "Result", "Stats", "Unit",
           "UnitFactory", "UnitType", "Variable", "analyse", "build", "simulate"]
