"""The C host of the FMU tests: ``tests/fmu/c/fmu_harness.c`` built with the machine's cc, in
the environment the FMU documentation asks for (``fmu_fixtures.host_env``; the standalone FMUs
need none: ``env -i``), and :func:`run` (one FMU through the harness, with a directional
derivative if asked)."""

import subprocess
from pathlib import Path

import pytest

from fmu_fixtures import compile_c, host_env, unzip_fmu  # noqa: F401  (host_env: a fixture for the users)

HARNESS = Path(__file__).resolve().parents[1] / "fmu" / "c" / "fmu_harness.c"
STEPS, H = 3, 0.01


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return compile_c(HARNESS, tmp_path_factory.mktemp("harness") / "fmu_harness")


def harness_args(fmu, tmp_path, params=(), inputs=(), outputs=(), unknowns=(), knowns=(), steps=STEPS, h=H):
    """The harness's arguments for ``fmu`` (see :func:`run`)."""
    d, mid, guid = unzip_fmu(fmu, tmp_path / fmu.stem)
    args = [str(d), mid, guid, "-n", str(steps), "-h", repr(h)]
    for vr, v in params:
        args += ["-p", f"{vr}={v!r}"]
    for vr, v in inputs:
        args += ["-i", f"{vr}={v!r}"]
    for vr in outputs:
        args += ["-o", str(vr)]
    for vr in unknowns:
        args += ["-u", str(vr)]
    for vr, v in knowns:
        args += ["-k", f"{vr}={v!r}"]
    return args


def run(harness, env, fmu, tmp_path, params=(), inputs=(), outputs=(), unknowns=(), knowns=(), steps=STEPS):
    """Run ``fmu`` through the harness: ``params`` and ``inputs`` ``(vr, value)`` pairs,
    ``outputs`` the value references printed at each step, then a directional derivative
    of ``unknowns`` w.r.t. ``knowns`` (``(vr, seed)`` pairs) after the steps; in the
    environment ``env``, or with none (``env`` None: started by ``env -i``)."""
    args = [str(harness), *harness_args(fmu, tmp_path, params, inputs, outputs, unknowns, knowns, steps)]
    if env is None:
        return subprocess.run(["env", "-i", *args], capture_output=True, text=True, timeout=120)
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
