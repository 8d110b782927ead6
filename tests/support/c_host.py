"""The C host of the FMU tests: ``tests/fmu/c/fmu_harness.c`` built with the machine's cc, the
environment the FMU documentation asks for, and :func:`run` (one FMU through the harness)."""

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fmu_fixtures import compiler
from titop_fmu.fmu.build import libpython_soname

HARNESS = Path(__file__).resolve().parents[1] / "fmu" / "c" / "fmu_harness.c"
STEPS, H = 3, 0.01


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cc = compiler()
    if not cc:
        pytest.skip("no C compiler (cc) to build the C host")
    exe = tmp_path_factory.mktemp("harness") / "fmu_harness"
    r = subprocess.run([*cc.split(), "-O1", "-o", str(exe), str(HARNESS), "-ldl"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="module")
def host_env():
    """The environment of the FMU documentation: libpython findable, numpy importable."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    soname = libpython_soname()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if os.path.isfile(os.path.join(libdir, soname)):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [libdir, env.get("LD_LIBRARY_PATH")]))
    else:   # on the loader's default path?
        check = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({soname!r})"], env=env)
        if check.returncode:
            pytest.skip(f"no shared Python library {soname} for a C host to load")
    env["PYTHONPATH"] = str(Path(np.__file__).resolve().parents[1])      # where numpy is installed
    return env


def run(harness, env, fmu, tmp_path, params=(), inputs=(), outputs=()):
    d = tmp_path / fmu.stem
    if not d.exists():
        with zipfile.ZipFile(fmu) as z:
            z.extractall(d)
    md = (d / "modelDescription.xml").read_text()
    guid = md.split('guid="', 1)[1].split('"', 1)[0]
    args = [str(harness), str(d), fmu.stem, guid, "-n", str(STEPS), "-h", repr(H)]
    for vr, v in params:
        args += ["-p", f"{vr}={v!r}"]
    for vr, v in inputs:
        args += ["-i", f"{vr}={v!r}"]
    for vr in outputs:
        args += ["-o", str(vr)]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
