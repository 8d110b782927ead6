"""The TITOP FMUs of both kinds (pythonfmu, the reference, and standalone, C only), built once
per test session, a small FMPy host that keeps the log, and what the C hosts need (a C
compiler, the environment of the FMU documentation).

Imported by ``test_fmus.py``, ``test_fmu_c_host.py`` and ``test_fmu_unload.py``;
the build is cached at module level, so all use the same freshly built FMUs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
import ctypes
from ctypes import byref
from pathlib import Path

import numpy as np
import pytest

import warnings

from titop_fmu.errors import ParameterWarning
from titop_fmu.fmu import catalog
from titop_fmu.fmu.model_description import random_parameters
from titop_fmu.cbuild import c_compiler

pytest.importorskip("pythonfmu", reason="the FMU tests need pythonfmu, FMPy and lark (FMU toolchain)")
pytest.importorskip("fmpy", reason="the FMU tests need pythonfmu, FMPy and lark (FMU toolchain)")

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import (FMU2Model, FMU2Slave, fmi2CallbackAllocateMemoryTYPE,  # noqa: E402
                       fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)

#: every FMU built by default
IDS = [catalog.model_identifier(k, n) for k, n in catalog.all_identifiers()]

_BUILT = {}


def compile_c(source: Path, exe: Path) -> Path:
    """Compile the C host ``source`` to ``exe`` (skips the test without a C compiler)."""
    cc = c_compiler()
    if not cc:
        pytest.skip("no C compiler (cc) to build the C host")
    r = subprocess.run([*cc.split(), "-O1", "-o", str(exe), str(source), "-ldl"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="module")
def host_env():
    """The environment of the FMU documentation for a C host: libpython findable, numpy importable."""
    from titop_fmu.fmu.build import c_host_env, libpython_soname
    env = c_host_env()
    libdir, soname = sysconfig.get_config_var("LIBDIR") or "", libpython_soname()
    if not os.path.isfile(os.path.join(libdir, soname)):    # on the loader's default path?
        check = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({soname!r})"], env=env)
        if check.returncode:
            pytest.skip(f"no shared Python library {soname} for a C host to load")
    return env


def unzip_fmu(fmu: Path, dest: Path):
    """Unzip ``fmu`` into ``dest`` (if not done yet); ``(dest, model identifier, guid)``."""
    if not dest.exists():
        with zipfile.ZipFile(fmu) as z:
            z.extractall(dest)
    md = (dest / "modelDescription.xml").read_text()
    return dest, fmu.stem, md.split('guid="', 1)[1].split('"', 1)[0]


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    """A folder with every FMU (``titop_fmu.fmu.build.build_all``), built once."""
    if "dir" not in _BUILT:
        if not c_compiler():
            pytest.skip("no C compiler (cc): the FMUs cannot be built")
        from titop_fmu.fmu.build import build_all
        d = tmp_path_factory.mktemp("fmus")
        _BUILT["dir"] = d
        _BUILT["paths"] = {p.stem: p for p in build_all(d)}
    return _BUILT["dir"]


@pytest.fixture(scope="session")
def fmu_paths(fmu_dir):
    """``{model identifier: path}`` of the built FMUs."""
    return _BUILT["paths"]


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """``export(system, kind, name)``: ``titop-fmu export SYSTEM --out NAME.fmu --fmu-kind KIND``,
    once per system and kind in the test run (the assembly FMUs of test_assembly.py and
    test_strict_hosts.py): the workers of ``-n`` share them, one exports, the others wait (each
    exported its own: the same assembly FMUs built on both cores)."""
    import hashlib

    from session_cache import locked, shared_folder
    from titop_fmu.cli import main
    folder = shared_folder(tmp_path_factory, "exported")

    def export(system, kind, name):
        key = hashlib.sha256(f"{system}\0{kind}\0{name}".encode()).hexdigest()[:12]
        out = folder / f"{name}_{kind}_{key}" / f"{name}.fmu"
        with locked(folder / f"{key}.lock"):
            if not out.is_file():
                part = out.parent.with_name(out.parent.name + ".part")
                shutil.rmtree(part, ignore_errors=True)
                part.mkdir()
                assert main(["export", system, "--out", str(part / out.name), "--fmu-kind", kind]) == 0
                shutil.rmtree(out.parent, ignore_errors=True)
                os.replace(part, out.parent)
        return out
    return export


#: the two kinds of TITOP block FMUs: the same contract, checked by the same tests
FMU_KINDS = ("pythonfmu", "standalone")


@pytest.fixture(scope="session")
def standalone_paths(tmp_path_factory):
    """``{model identifier: path}`` of every standalone FMU (``titop_fmu.fmu.standalone.build_all``),
    built once."""
    if "standalone" not in _BUILT:
        if not c_compiler():
            pytest.skip("no C compiler (cc): the FMUs cannot be built")
        from titop_fmu.fmu.standalone import build_all
        _BUILT["standalone"] = {p.stem: p for p in build_all(tmp_path_factory.mktemp("standalone"))}
    return _BUILT["standalone"]


@pytest.fixture(scope="session")
def standalone_dir(standalone_paths):
    """The folder of every standalone FMU."""
    return next(iter(standalone_paths.values())).parent


@pytest.fixture(scope="session", params=FMU_KINDS)
def kind(request):
    """Each kind of FMU in turn."""
    return request.param


@pytest.fixture(scope="session")
def kind_paths(kind, request):
    """``{model identifier: path}`` of the FMUs of the kind :func:`kind`."""
    return request.getfixturevalue("fmu_paths" if kind == "pythonfmu" else "standalone_paths")


_EXTRACTED = {}


def unzipped(path):
    """``(model description, unzip dir)`` of an FMU, extracted once."""
    key = str(path)
    if key not in _EXTRACTED:
        _EXTRACTED[key] = (read_model_description(key), extract(key))
    return _EXTRACTED[key]


#: every Host's callbacks, never freed (see Host.__init__)
_LOGGERS = []


class Host:
    """One FMU instance through FMPy, with the messages it logs in :attr:`log`
    (``(status, category, message)``) and value references by name; ``logging``: debug
    logging on (the messages of status fmi2OK too); ``model_exchange``: an instance of type
    Model Exchange (:class:`fmpy.fmi2.FMU2Model`)."""

    def __init__(self, path, name="instance", logging=False, model_exchange=False):
        self.md, unzipdir = unzipped(path)
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.var = {v.name: v for v in self.md.modelVariables}
        self.log = []
        cls, interface = (FMU2Model, self.md.modelExchange) if model_exchange else (FMU2Slave, self.md.coSimulation)
        self.fmu = cls(guid=self.md.guid, unzipDirectory=unzipdir, modelIdentifier=interface.modelIdentifier,
                       instanceName=name)
        self._callbacks = fmi2CallbackFunctions()
        self._callbacks.logger = fmi2CallbackLoggerTYPE(self._logger)
        from fmpy import calloc, free
        self._callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self._callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        from fmpy.logging import addLoggerProxy
        addLoggerProxy(byref(self._callbacks))
        # FMPy's native logger proxy keeps a pointer to the last logger it was given, for every
        # later instance in the process (simulate_fmu's too): a freed one crashes the next message
        _LOGGERS.append(self._callbacks)
        self.fmu.instantiate(callbacks=self._callbacks, loggingOn=logging)

    def _logger(self, env, instance, status, category, message):
        self.log.append((status, (category or b"").decode(), message.decode()))

    def names(self, causality):
        return [v.name for v in self.md.modelVariables if v.causality == causality]

    def set(self, values: dict):
        reals = {n: v for n, v in values.items() if self.var[n].type == "Real"}
        ints = {n: v for n, v in values.items() if self.var[n].type == "Integer"}
        if reals:
            self.fmu.setReal([self.vr[n] for n in reals], [float(v) for v in reals.values()])
        if ints:
            self.fmu.setInteger([self.vr[n] for n in ints], [int(v) for v in ints.values()])

    def get(self, names):
        return np.array(self.fmu.getReal([self.vr[n] for n in names]))

    def initialize(self, params: dict = None, inputs: dict = None, start=0.0, tolerance=None):
        self.fmu.setupExperiment(tolerance=tolerance, startTime=start)
        if params:
            self.set(params)
        self.fmu.enterInitializationMode()
        if inputs:
            self.set(inputs)
        self.fmu.exitInitializationMode()

    def errors(self):
        return [m for s, _, m in self.log if s >= 3]

    def free(self):
        self.fmu.freeInstance()


def linked_libraries(binary: Path) -> set:
    """The shared libraries an FMU binary needs: ``readelf -d`` of a Linux one, MinGW-w64's
    ``objdump -p`` of a Windows one (the test skips without the tool)."""
    windows = Path(binary).suffix == ".dll"
    tool = shutil.which("x86_64-w64-mingw32-objdump" if windows else "readelf")
    if not tool:
        pytest.skip(f"no {'x86_64-w64-mingw32-objdump' if windows else 'readelf'} (binutils)")
    text = subprocess.run([tool, "-p" if windows else "-d", str(binary)], capture_output=True, text=True).stdout
    if windows:
        return {line.split(":")[1].strip() for line in text.splitlines() if "DLL Name:" in line}
    return {line.split("[")[1].rstrip("]") for line in text.splitlines() if "(NEEDED)" in line}


def messages(path, params, inputs) -> list:
    """The errors an FMU logs when ``params`` are set before initialization and ``inputs`` after
    it (each call that fails returns fmi2Error)."""
    from fmpy.fmi1 import FMICallException
    host = Host(path)
    try:
        host.fmu.setupExperiment(startTime=0.0)
        host.set(params)
        host.fmu.enterInitializationMode()
        try:
            host.fmu.exitInitializationMode()
            host.set(inputs)
        except FMICallException as e:
            assert e.status == 3
        return host.errors()
    finally:
        host.free()


def scalar_parameters(iface, values) -> dict:
    """``{FMI parameter name: value}`` for the scalar parameter values of ``iface``."""
    return {s[0]: v for s, v in zip(iface.param_scalars, values)}


#: the communication step of the FMU tests [s]
H = 0.01


def random_setup(mid, seed):
    """``(iface, {parameter: value}, reference BlockUnit)`` at generic random parameters
    (random initial conditions, so random states)."""
    kind, n = catalog.parse_identifier(mid)
    iface = catalog.interface(kind, n)
    rng = np.random.default_rng(seed)
    values = random_parameters(iface, rng)
    params = scalar_parameters(iface, values)
    if "ext_frame" in params:
        params["ext_frame"] = int(rng.integers(2))
        values = [params[s[0]] for s in iface.param_scalars]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        ref, _ = iface.make_unit(values)
    return iface, params, ref


def random_inputs(iface, rng):
    return 0.5 * rng.standard_normal(len(iface.input_names))


_NO_SCIPY = """
import importlib.abc, sys
class NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("scipy is blocked")
sys.meta_path.insert(0, NoScipy())
sys.path = [p for p in sys.path if p not in ("", {cwd!r})]
"""


def run_without_scipy(code: str, cwd) -> list:
    """The words ``code`` prints, run in a fresh Python process that cannot import scipy and
    has neither the repository nor ``PYTHONPATH`` on its path (as an FMU's host may be)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", _NO_SCIPY.format(cwd=os.getcwd()) + code], capture_output=True,
                       text=True, cwd=cwd, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


# -- the vendor functions of the TITOP FMUs, called through ctypes as a host would ----------
_vp, _sz = ctypes.c_void_p, ctypes.c_size_t


def vrs(host, names):
    """The value references of ``names``, as a C array."""
    return np.array([host.vr[n] for n in names], dtype=np.uint32)


def trial_function(host):
    """``titopGetTrialSteps`` of the instance's binary."""
    d = ctypes.c_double
    return ctypes.CFUNCTYPE(ctypes.c_int, _vp, d, d, _vp, _sz, _sz, _vp, _vp, _vp, _sz, _vp)(
        ("titopGetTrialSteps", host.fmu.dll))


def trial_steps(host, t, h, known, held, end, unknown):
    """``(status, (len(unknown), k) values)`` of ``titopGetTrialSteps``."""
    f = trial_function(host)
    kv, uv = vrs(host, known), vrs(host, unknown)
    held_t, end = np.ascontiguousarray(np.asarray(held, dtype=float).T), np.ascontiguousarray(end, dtype=float)
    out = np.full((held_t.shape[0], len(uv)), np.nan)
    status = f(host.fmu.component, t, h, kv.ctypes.data, len(kv), held_t.shape[0], held_t.ctypes.data,
               end.ctypes.data, uv.ctypes.data, len(uv), out.ctypes.data)
    return status, out.T


def derivatives(host, unknown, known, seeds):
    """``(status, (len(unknown), k) values)`` of ``titopGetDirectionalDerivatives``."""
    f = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, _sz, _vp, _sz, _sz, _vp, _vp)(
        ("titopGetDirectionalDerivatives", host.fmu.dll))
    uv, kv = vrs(host, unknown), vrs(host, known)
    seeds_t = np.ascontiguousarray(np.asarray(seeds, dtype=float).T)
    out = np.full((seeds_t.shape[0], len(uv)), np.nan)
    status = f(host.fmu.component, uv.ctypes.data, len(uv), kv.ctypes.data, len(kv), seeds_t.shape[0],
               seeds_t.ctypes.data, out.ctypes.data)
    return status, out.T
