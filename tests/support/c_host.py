"""The C host of the FMU tests: ``tests/fmu/c/fmu_harness.c`` built with the machine's cc, in
the environment the FMU documentation asks for (``fmu_fixtures.host_env``; the standalone FMUs
need none: ``env -i``), and :func:`run` (one FMU through the harness, with a directional
derivative if asked), :func:`strict_outputs` (its outputs, the run checked clean); the harness built with MinGW-w64 for the win64 binaries, run under Wine."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import compile_c, host_env, unzip_fmu  # noqa: F401  (host_env: a fixture for the users)

from fmpy import read_model_description  # noqa: E402  (fmu_fixtures skips without FMPy)

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


def strict_outputs(harness, fmu, tmp_path, steps):
    """Every output of ``fmu`` at each of ``steps`` steps through the harness started by ``env -i``
    (an array, a row a communication point), after checking the run is clean: exit code 0, every
    call fmi2OK, nothing logged, the state round trip exact."""
    md = read_model_description(str(fmu))
    outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    r = run(harness, None, fmu, tmp_path, outputs=outputs, steps=steps)
    assert r.returncode == 0, r.stdout[-3000:]
    lines = r.stdout.splitlines()
    assert all(line.split()[2] in ("OK", "done") for line in lines if line.startswith("call "))
    assert not any(line.startswith("log ") for line in lines) and "state_roundtrip ok" in lines
    return np.array([float(line.split()[-1]) for line in lines if line.startswith("y ")]).reshape(steps + 1, -1)


def windows_harness(folder: Path) -> Path:
    """The harness built with the MinGW-w64 cross compiler into ``folder`` (the test skips, saying
    which is missing, without that compiler or Wine)."""
    from titop_fmu.fmu.standalone import mingw_compiler
    cc = mingw_compiler()
    if not cc:
        pytest.skip("no MinGW-w64 cross compiler (Debian: gcc-mingw-w64-x86-64): no win64 binaries")
    if not wine():
        pytest.skip("no Wine (Debian: wine) to run the win64 binaries")
    exe = Path(folder) / "fmu_harness.exe"
    r = subprocess.run([cc, "-O1", "-D__USE_MINGW_ANSI_STDIO=1", "-o", str(exe), str(HARNESS)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def wine():
    return shutil.which("wine64") or shutil.which("wine")


def under_wine(exe: Path, args: list, folder: Path):
    """``exe args`` under Wine, in ``folder`` (its own Wine prefix there; Wine reads no Unix path
    among the arguments: give them relative to ``folder``)."""
    env = dict(os.environ, WINEPREFIX=str(Path(folder) / "wineprefix"), WINEDEBUG="-all")
    return subprocess.run([wine(), str(exe), *args], capture_output=True, text=True, env=env, timeout=600,
                          cwd=folder)
