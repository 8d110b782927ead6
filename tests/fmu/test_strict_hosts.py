"""Every TITOP FMU runs to completion in hosts that stop on any status but fmi2OK.

Such hosts exist (the Reference FMUs' fmusim, MasterSim): a known and accepted
property of the parameters (the balloon's principal moments violate the triangle
inequality) is therefore logged with status fmi2OK (in the FMU's category
``logParameters``), never returned as fmi2Warning. Checked for the block FMUs
and two assembly FMUs (``titop-fmu export [--fmu-kind KIND]``: the balloon, and
``examples/spacecraft.toml``: full inertias, mount angles, oblique axes, an
attitude near gimbal lock), each of both kinds, over their default experiment, in

* FMPy's ``simulate_fmu`` with debug logging on and an FMU wrapper that stops at
  the first call returning anything but fmi2OK or logging a message of another
  status (:func:`hosts.strict_fmpy_run`); it passes the default experiment's
  tolerance to ``fmi2SetupExperiment``;
* libcosim (``libcosimpy``, the extra ``hosts``), whose log shows every message
  of an FMU at its status: every step succeeds and the log holds no warning or error.

The spacecraft's default experiment (20 s) runs in the slow suite, 1 s otherwise; the balloon's
20 s runs are those of ``test_assembly.py``, in the same strict hosts. The plain run checks one
block FMU of each kind in both hosts; ``--slow``, every FMU and the assemblies.
"""

import functools
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import FMU_KINDS, IDS, exported, fmu_dir, fmu_paths, kind, kind_paths, standalone_paths  # noqa: F401
from hosts import libcosim_complaints, libcosim_run, recorded_names, strict_fmpy_run
from marks import by_kind
from titop_fmu.cosim import systemfile
from titop_fmu.scenarios import balloon
from titop_fmu.titop import monolithic

from fmpy import read_model_description  # noqa: E402  (fmu_fixtures skips without FMPy)

ROOT = Path(__file__).resolve().parents[2]
ASSEMBLIES = {"balloon": "balloon", "spacecraft": str(ROOT / "examples" / "spacecraft.toml")}


@pytest.fixture
def assembly(exported, kind):
    """``assembly(name)``: ``titop-fmu export SYSTEM --out NAME.fmu --fmu-kind KIND`` of the balloon
    or the spacecraft (exported once in the session)."""
    return lambda name: exported(ASSEMBLIES[name], kind, name)


def outputs_of(path):
    return [v.name for v in read_model_description(str(path)).modelVariables if v.causality == "output"]


@pytest.mark.parametrize("kind, mid", by_kind(IDS), indirect=["kind"])
def test_block_fmu_runs_in_a_strict_fmpy_host(kind_paths, mid):
    r = strict_fmpy_run(kind_paths[mid])                # the default experiment: 1 s
    assert r["time"][-1] == pytest.approx(1.0)
    assert all(np.all(np.isfinite(r[n])) for n in r.dtype.names)


def close_to(y, ref):
    """Within 1e-6 of the monolithic run, relative to its largest value: the hosts run the
    FMUs at their default tolerance (the 20 s balloon measured 9e-8 at 1e-10, 1.7e-9 at the
    assemblies' default 1e-12, tests/fmu/test_assembly.py)."""
    return np.abs(y - ref).max() <= 1e-6 * max(1.0, np.abs(ref).max())


#: (kind, system, stop): the default experiment (20 s) through the default kind only, whose
#: outputs the pythonfmu kind's equal over it (test_assembly.py; here it took 95 s more)
RUNS = [(kind, name, 1.0) for kind in FMU_KINDS for name in ("balloon", "spacecraft")] + \
    [pytest.param("standalone", "spacecraft", 20.0, id="standalone-spacecraft-default-experiment")]


@functools.cache
def monolithic_reference(name, stop):
    """``(recorded outputs' names, their in-process monolithic run)`` for the system ``name``."""
    cs = balloon.system() if name == "balloon" else systemfile.read(ASSEMBLIES[name]).system
    return recorded_names(cs), monolithic.simulate(cs, stop, 0.01)[1]


@pytest.mark.slow
@pytest.mark.parametrize("kind,name,stop", RUNS, indirect=["kind"])
def test_assembly_fmu_runs_in_a_strict_fmpy_host(assembly, name, stop):
    """To completion (20 s: the default experiment), near the monolithic run."""
    r = strict_fmpy_run(assembly(name), stop_time=stop)
    assert r["time"][-1] == pytest.approx(stop)
    names, ref = monolithic_reference(name, stop)
    every = int(round((r["time"][1] - r["time"][0]) / 0.01))     # FMPy keeps at most 1000 intervals
    assert len(r) == len(ref[::every]) and close_to(np.column_stack([r[n] for n in names]), ref[::every])


@pytest.mark.parametrize("kind, mid", by_kind(IDS), indirect=["kind"])
def test_block_fmu_runs_in_libcosim_with_no_warning(kind_paths, mid, capfd):
    path = kind_paths[mid]
    t, y = libcosim_run({"u": path}, [], {}, [f"u.{n}" for n in outputs_of(path)], 1.0, 0.01)
    assert len(t) == 100 and np.all(np.isfinite(y))
    assert libcosim_complaints(capfd) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind,name,stop", RUNS, indirect=["kind"])
def test_assembly_fmu_runs_in_libcosim_with_no_warning(assembly, name, stop, capfd):
    names, ref = monolithic_reference(name, stop)
    t, y = libcosim_run({"a": assembly(name)}, [], {}, [f"a.{n}" for n in names], stop, 0.01)
    assert len(t) == len(ref) - 1 and close_to(y, ref[1:])
    assert libcosim_complaints(capfd) == []
