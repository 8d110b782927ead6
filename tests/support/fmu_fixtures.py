"""The TITOP FMUs, built once per test session, and a small FMPy host that keeps the log.

Imported by ``test_fmus.py`` and ``test_fmu_c_host.py``; the build is cached at
module level, so both use the same freshly built FMUs.
"""

from __future__ import annotations

import os
import shutil
from ctypes import byref

import numpy as np
import pytest

from titop_fmu.fmu import catalog

pytest.importorskip("pythonfmu", reason="the FMU tests need pythonfmu, FMPy and lark (FMU toolchain)")
pytest.importorskip("fmpy", reason="the FMU tests need pythonfmu, FMPy and lark (FMU toolchain)")

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,  # noqa: E402
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)

#: every FMU built by default
IDS = [catalog.model_identifier(k, n) for k, n in catalog.all_identifiers()]

_BUILT = {}


def compiler():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    """A folder with every FMU (``titop_fmu.fmu.build.build_all``), built once."""
    if "dir" not in _BUILT:
        if not compiler():
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


_EXTRACTED = {}


def unzipped(path):
    """``(model description, unzip dir)`` of an FMU, extracted once."""
    key = str(path)
    if key not in _EXTRACTED:
        _EXTRACTED[key] = (read_model_description(key), extract(key))
    return _EXTRACTED[key]


class Host:
    """One FMU instance through FMPy, with the messages it logs in :attr:`log`
    (``(status, category, message)``) and value references by name."""

    def __init__(self, path, name="instance"):
        self.md, unzipdir = unzipped(path)
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.var = {v.name: v for v in self.md.modelVariables}
        self.log = []
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=unzipdir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName=name)
        self._callbacks = fmi2CallbackFunctions()
        self._callbacks.logger = fmi2CallbackLoggerTYPE(self._logger)
        from fmpy import calloc, free
        self._callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self._callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        from fmpy.logging import addLoggerProxy
        addLoggerProxy(byref(self._callbacks))
        self.fmu.instantiate(callbacks=self._callbacks)

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

    def initialize(self, params: dict = None, inputs: dict = None, start=0.0):
        self.fmu.setupExperiment(startTime=start)
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


def scalar_parameters(iface, values) -> dict:
    """``{FMI parameter name: value}`` for the scalar parameter values of ``iface``."""
    return {s[0]: v for s, v in zip(iface.param_scalars, values)}
