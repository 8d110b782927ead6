"""Errors and warnings raised by titop-fmu, each naming what is wrong."""

from __future__ import annotations


class TitopError(Exception):
    """Base class of every titop-fmu error."""


class ParameterError(TitopError, ValueError):
    """A physical parameter is invalid; ``.parameter`` names it, ``.detail`` says what is wrong."""

    def __init__(self, parameter: str, message: str):
        super().__init__(f"parameter '{parameter}': {message}")
        self.parameter, self.detail = parameter, message

    def renamed(self, parameter: str) -> ParameterError:
        """The same error for the parameter as the caller names it (``balloon.mass``)."""
        return ParameterError(parameter, self.detail)


class ConnectionError_(TitopError):
    """A system is wired wrongly: dangling, unknown or doubly connected port, cycle."""


class SolverError(TitopError):
    """A simulation could not proceed (singular loop, non-convergence, integrator failure)."""


class Interrupted(TitopError):
    """Ctrl-C: the work stopped cleanly (a run at the end of a macro step, nothing written; a
    campaign with its store consistent). The command line exits with code 130."""


class ParameterWarning(UserWarning):
    """A parameter is accepted but physically unusual (e.g. triangle inequality violated)."""


def did_you_mean(name, known, n: int = 3) -> str:
    """``" (did you mean 'mass'?)"``: the nearest of the names ``known`` to a misspelled
    ``name`` (:func:`difflib.get_close_matches`), or ``""`` when none is close. Every message
    about an unknown model, unit, port, parameter, record entry or key ends with it."""
    import difflib
    cutoff = 0.5 if len(str(name)) <= 3 else 0.6            # 'qo' for 'q0'; not 'record' for 'colour'
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=n, cutoff=cutoff)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
