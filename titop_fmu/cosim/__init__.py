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

import importlib

#: the package's names and their modules, imported when first used (PEP 562): a module that
#: needs one submodule (the FMUs need :mod:`.names`) does not import the whole master
_EXPORTS = {"FileUnits": "engine", "build": "engine", "simulate": "engine", "FunctionSpec": "function_unit",
            "CoSystem": "graph", "LoopError": "loop", "Master": "master", "Result": "master",
            "Options": "options", "Stats": "options", "Unit": "protocol", "UnitFactory": "protocol",
            "UnitType": "protocol", "Variable": "protocol", "analyse": "structure"}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
