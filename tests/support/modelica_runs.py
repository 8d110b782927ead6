"""The Modelica side of the validation tests: skip with the one-line reason when no
Modelica compiler or no Modelica Standard Library (``MODELICAPATH``) is there."""

import os
from pathlib import Path

import pytest

from titop_fmu import modelica

ROOT = Path(__file__).resolve().parents[2]
BALLOON_MO = ROOT / "validation" / "modelica" / "BalloonSystem.mo"
TWO_BRANCH_MO = ROOT / "validation" / "modelica" / "TwoBranch.mo"
SPACECRAFT_MO = ROOT / "validation" / "modelica" / "Spacecraft.mo"


def need_modelica():
    """Skip (with the reason in pytest's summary) unless a Modelica compiler and the MSL are there."""
    reason = modelica.unavailable_reason()
    if reason:
        pytest.skip(reason)


#: rtol = atol of the Modelica runs that must catch a deliberate mistake (an error of 1e-4 and
#: more): their own error is about 2e-8 there (the two-branch twin over 2 s: 1.8e-8 scaled, against
#: 4e-12 at modelica.RTOL), four decades below what they catch, at a third of the time (8.6 s
#: against 23 s)
TEETH_RTOL = 1e-8


def mutated_copy(model, old, new, folder) -> Path:
    """A copy of the Modelica file ``model`` in ``folder`` with its one occurrence of ``old``
    replaced by ``new`` (a deliberate mistake the comparison must catch, or a changed
    parameter)."""
    text = Path(model).read_text()
    assert text.count(old) == 1, old
    copy = Path(folder) / Path(model).name
    copy.write_text(text.replace(old, new))
    return copy


def simulate_once(simulate, folder: Path):
    """``modelica.simulate`` computed once per test run for the same inputs: the same model
    file (its content), outputs, grid, solver, tolerances, MSL and compiler give the result of
    the first call, kept in ``folder`` (shared by the run's processes: one computes it, the
    others wait for it). rumoca's runs only (the minutes of the suite); a call that fails, or
    finds no compiler or MSL, is the real call every time."""
    import hashlib
    import json

    import numpy as np
    from session_cache import locked

    def once(model_file, outputs, stop, dt=0.01, *, model=None, msl=None, solver=modelica.SOLVER,
             rtol=modelica.RTOL, atol=modelica.ATOL):
        def real():
            return simulate(model_file, outputs, stop, dt, model=model, msl=msl, solver=solver, rtol=rtol, atol=atol)
        path = Path(model_file)
        try:
            root, compiler = modelica.find_msl(msl), modelica.find_compiler()
        except ValueError:
            return real()
        if not path.is_file() or root is None or compiler is None or compiler.name != "rumoca":
            return real()
        key = hashlib.sha256(json.dumps([str(path.resolve()), path.read_bytes().hex(), model, list(outputs),
                                         float(stop), float(dt), str(root), str(compiler), solver,
                                         float(rtol), float(atol)]).encode()).hexdigest()[:24]
        kept = folder / f"{key}.npz"
        with locked(folder / f"{key}.lock"):
            if not kept.is_file():
                r = real()
                np.savez(folder / f"{key}.tmp.npz", t=r.t, values=r.values, names=np.array(r.names),
                         info=np.array(json.dumps(r.info)))
                os.replace(folder / f"{key}.tmp.npz", kept)
        with np.load(kept) as z:
            return modelica.Result(z["t"], tuple(str(n) for n in z["names"]), z["values"],
                                   json.loads(str(z["info"])))
    return once
