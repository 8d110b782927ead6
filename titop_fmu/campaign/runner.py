"""What a worker does for one sample: the campaign's system prepared once per process
(:func:`prepared`, cached by the campaign's settings: the system file read, the names that
can be set, the FMUs found and unzipped once), then one run with the sample's values.

A run that fails (an invalid value, a solver that stops, anything raised) is a result
too: ``status = "failed"`` with its message on one line.
"""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from ..errors import ParameterWarning, TitopError
from ..io import assign
from .distributions import SweepError
from .spec import Sweep


class Prepared:
    """A campaign's system, ready for runs: the :class:`~titop_fmu.simulation.Target`, the
    fixed overrides, the options, the unit factory of the FMU engine."""

    def __init__(self, spec: Sweep, fingerprint: str):
        from ..simulation import Target
        if spec.fingerprint() != fingerprint:
            raise SweepError(f"{spec.system}: not the system file the campaign was made with (changed since, "
                             "or another file at that path on this worker)")
        self.spec = spec
        self.target = Target(spec.system)
        self.fixed = self.target.overrides(spec.set)
        self.args = SimpleNamespace(stop=spec.stop, dt=spec.dt, rtol=spec.rtol, tol=spec.tol, dt_max=spec.dt_max,
                                    sequence=tuple(int(k) for k in spec.sequence.split(",")), workers=0,
                                    kernel=spec.kernel)
        self.units = None
        if spec.engine == "fmu":
            from ..titop import TitopUnits
            from ..titop.units import default_fmu_dir
            self.units = TitopUnits("fmu", default_fmu_dir(spec.fmu_kind), spec.fmu_kind)

    def run(self, index: int, values) -> dict:
        """One sample: a record for the store (:func:`record`)."""
        start = time.perf_counter()
        try:
            overrides = dict(self.fixed)
            for name, v in zip(self.spec.vary, values):
                assign(overrides, self.target.settable, name, float(v))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ParameterWarning)
                try:
                    t, y, _ = self.target.run(overrides, self.args, self.spec.engine, self.units)
                except TitopError:
                    self.target.checked(overrides)      # an invalid value, named as the campaign names it
                    raise
            return record(index, "ok", time.perf_counter() - start, "", np.column_stack([t, y]))
        except Exception as e:                  # the campaign goes on: the failure is a result
            return record(index, "failed", time.perf_counter() - start, one_line(e), None)


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if text and not isinstance(e, (KeyError, IndexError, TypeError, AttributeError)) \
        else f"{type(e).__name__}: {text}"


def record(index, status, wall, error, table, worker=None) -> dict:
    """A sample's result: ``table`` is ``(len(t), 1 + outputs)``, the columns of ``simulate``'s CSV;
    ``worker``: where it ran (default: this process, ``host:pid``)."""
    return dict(index=int(index), status=status, wall=float(wall), error=error, table=table,
                worker=f"{socket.gethostname()}:{os.getpid()}" if worker is None else worker)


@lru_cache(maxsize=4)
def prepared(spec_json: str, fingerprint: str) -> Prepared:
    """The campaign's system in this process, made at its first sample (a worker's cache)."""
    return Prepared(Sweep(**json.loads(spec_json)), fingerprint)


def run_sample(spec_json: str, fingerprint: str, index: int, values) -> dict:
    """The task of one sample (what Dask runs on a worker)."""
    try:
        p = prepared(spec_json, fingerprint)
    except Exception as e:
        return record(index, "failed", 0.0, one_line(e), None)
    return p.run(index, values)
