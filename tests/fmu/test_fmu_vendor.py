"""The TITOP FMUs' vendor functions, called from their binary through ctypes as any host
would: ``titopGetTrialSteps`` and ``titopGetDirectionalDerivatives``.

Every FMU declares both in its model description and exports them. At random
parameters, states and inputs after a few steps, a batch of trial steps gives, bit for
bit, what the standard calls give trial by trial (``fmi2SetFMUstate``, ``fmi2SetReal``,
``fmi2DoStep``, ``fmi2SetReal``, ``fmi2GetReal``), and leaves the FMU as it was: same
outputs, and its next ``fmi2DoStep`` the same as without the call. A batch of seeds gives
what ``fmi2GetDirectionalDerivative`` gives seed by seed, bit for bit. Bad calls (a value
reference that is not an input or an output, a non-finite held value, a NULL array, a
trial step before initialization) are an ``fmi2Error`` with a message, and change nothing.
The master's FMU units use the derivatives for several seeds in one call, and a declared
function the binary lacks is an error when the unit is made.
"""

import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from fmu_fixtures import (IDS, H, Host, derivatives, fmu_dir, fmu_paths, kind, kind_paths, standalone_paths, random_inputs, random_setup,  # noqa: F401
                          trial_function, trial_steps, unzipped, vrs)
from marks import pythonfmu_slow
from titop_fmu.cosim.fmpy_unit import VENDOR_FUNCTIONS, VENDOR_TOOL, FMUUnit, fmu_unit_type
from titop_fmu.errors import ConnectionError_

STEPS = 3


def stepped(path, mid, seed):
    """``(host, iface)``: an initialized FMU instance after :data:`STEPS` random steps."""
    iface, params, _ = random_setup(mid, seed=seed)
    rng = np.random.default_rng(300 + seed)
    host = Host(path, f"{mid}_{seed}")
    host.initialize(params, dict(zip(iface.input_names, random_inputs(iface, rng))))
    for k in range(STEPS):
        host.set(dict(zip(iface.input_names, random_inputs(iface, rng))))
        host.fmu.doStep(k * H, H)
    return host, iface


@pythonfmu_slow
def test_every_fmu_declares_and_exports_them(kind_paths):
    for mid, path in kind_paths.items():
        md, unzipdir = unzipped(path)
        root = ElementTree.parse(Path(unzipdir) / "modelDescription.xml").getroot()
        tool = root.find(f"VendorAnnotations/Tool[@name='{VENDOR_TOOL}']/Functions")
        assert {e.tag: e.get("function") for e in tool} == VENDOR_FUNCTIONS, mid
        assert fmu_unit_type(path).trial_steps, mid
        host = Host(path, mid)
        try:
            for name in VENDOR_FUNCTIONS.values():
                assert hasattr(host.fmu.dll, name), (mid, name)
        finally:
            host.free()


@pytest.mark.parametrize("mid", IDS)
def test_trial_steps_are_the_standard_calls(kind_paths, mid):
    host, iface = stepped(kind_paths[mid], mid, IDS.index(mid))
    ins, outs = list(iface.input_names), list(iface.output_names)
    rng = np.random.default_rng(11)
    try:
        t = STEPS * H
        u0, y0 = host.get(ins), host.get(outs)
        end = u0 + 0.01 * rng.standard_normal(len(ins))
        held = u0[:, None] + 1e-3 * rng.standard_normal((len(ins), 5))
        status, got = trial_steps(host, t, H, ins, held, end, outs)
        assert status == 0 and host.errors() == []
        assert np.array_equal(host.get(ins), u0) and np.array_equal(host.get(outs), y0)    # left as it was
        saved = host.fmu.getFMUstate()
        for j in range(held.shape[1]):                      # the standard calls, trial by trial
            host.fmu.setFMUstate(saved)
            host.fmu.setReal(list(vrs(host, ins)), list(held[:, j]))
            host.fmu.doStep(t, H)
            host.fmu.setReal(list(vrs(host, ins)), list(end))
            assert np.array_equal(host.get(outs), got[:, j]), (mid, j)
        # and the next step of the FMU is the same as without the trial steps
        host.fmu.setFMUstate(saved)
        host.fmu.doStep(t, H)
        after = host.get(outs)
        host.fmu.setFMUstate(saved)
        trial_steps(host, t, H, ins[:3], held[:3], end[:3], outs[:2])
        host.fmu.doStep(t, H)
        assert np.array_equal(host.get(outs), after)
        host.fmu.freeFMUstate(saved)
        assert host.errors() == []
    finally:
        host.free()


@pytest.mark.parametrize("mid", ["revolute_c1", "floating_base_c2", "loop_closure", "prismatic_c0"])
def test_derivatives_for_several_seeds_are_the_standard_ones(kind_paths, mid):
    host, iface = stepped(kind_paths[mid], mid, 40 + IDS.index(mid))
    ins, outs = list(iface.input_names), list(iface.output_names)
    rng = np.random.default_rng(5)
    try:
        seeds = np.column_stack([np.eye(len(ins))[:, :4], rng.standard_normal((len(ins), 3))])
        status, got = derivatives(host, outs, ins, seeds)
        assert status == 0 and host.errors() == []
        for j in range(seeds.shape[1]):
            one = host.fmu.getDirectionalDerivative(list(vrs(host, outs)), list(vrs(host, ins)), list(seeds[:, j]))
            assert np.array_equal(np.array(one), got[:, j]), (mid, j)
        rows, cols = rng.permutation(len(outs))[:5], rng.permutation(len(ins))[:6]
        status, sub = derivatives(host, [outs[i] for i in rows], [ins[k] for k in cols], seeds[cols])
        full = np.column_stack([host.fmu.getDirectionalDerivative(list(vrs(host, [outs[i] for i in rows])),
                                                                  list(vrs(host, [ins[k] for k in cols])),
                                                                  list(seeds[cols, j])) for j in range(7)])
        assert status == 0 and np.array_equal(sub, full)
    finally:
        host.free()


def test_bad_calls_are_errors_and_change_nothing(kind_paths):
    host, iface = stepped(kind_paths["revolute_c1"], "revolute_c1", 3)
    ins, outs = list(iface.input_names), list(iface.output_names)
    try:
        u0, y0 = host.get(ins), host.get(outs)
        held = np.repeat(u0[:, None], 2, axis=1)

        def failed(status, expect):
            assert status == 3, status
            assert any(expect in m for m in host.errors()), host.log
            host.log.clear()
            assert np.array_equal(host.get(ins), u0) and np.array_equal(host.get(outs), y0)

        failed(trial_steps(host, 0.0, H, ["c1.m[1]"], held[:1], u0[:1], outs)[0],
               "titopGetTrialSteps: c1.m[1] is not an input")
        failed(trial_steps(host, 0.0, H, ins, held, u0, ["p.m[2]"])[0], "p.m[2] is not an output")
        bad = held.copy()
        bad[4, 1] = np.nan
        failed(trial_steps(host, 0.0, H, ins, bad, u0, outs)[0], "non-finite input")
        failed(trial_steps(host, 0.0, -H, ins, held, u0, outs)[0], "invalid communication step size")
        failed(derivatives(host, ["c1.m[1]"], ["mass"], np.ones((1, 2)))[0],
               "titopGetDirectionalDerivatives: mass is not an input")
        failed(trial_function(host)(host.fmu.component, 0.0, H, None, 2, 1, None, None, None, 0, None), "a NULL array")
        assert trial_steps(host, 0.0, H, ins, held, u0, outs)[0] == 0        # still usable
    finally:
        host.free()


def test_trial_steps_before_initialization_are_an_error(kind_paths):
    host = Host(kind_paths["revolute_c1"])
    try:
        host.fmu.setupExperiment(startTime=0.0)
        host.fmu.enterInitializationMode()
        status, _ = trial_steps(host, 0.0, H, ["p.m[1]"], np.zeros((1, 1)), [0.0], ["c1.m[1]"])
        assert status == 3
        assert any("trial steps are only allowed after fmi2ExitInitializationMode" in m for m in host.errors())
        host.fmu.exitInitializationMode()
    finally:
        host.free()


def test_the_master_units_call_the_vendor_function_for_several_seeds(kind_paths):
    """An FMU unit of the master gives all the columns of its directional derivatives in one
    vendor call, bit for bit what one fmi2GetDirectionalDerivative per column gives."""
    unit = FMUUnit("b", kind_paths["revolute_c1"])
    try:
        unit.setup({}, 0.0)
        unit.set_inputs(np.arange(25), np.random.default_rng(2).standard_normal(25) * 0.3)
        unit.do_step(0.0, H)
        seeds = np.eye(25)[:, :13]
        standard = unit._dd
        unit._dd = None                         # not called: one vendor call for all
        got = unit.directional_derivatives(np.arange(27), np.arange(25), seeds)
        unit._dd = standard
        del unit._vendor["DirectionalDerivatives"]          # one fmi2GetDirectionalDerivative per column
        assert np.array_equal(got, unit.directional_derivatives(np.arange(27), np.arange(25), seeds))
    finally:
        unit.terminate()


def test_a_declared_vendor_function_missing_from_the_binary_is_an_error(fmu_paths, tmp_path):
    """An FMU whose model description declares a vendor function its binary lacks: a connection
    error naming it when the unit is made (not a crash at the first measurement)."""
    src = fmu_paths["revolute_c1"]
    bad = tmp_path / "revolute_c1.fmu"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "modelDescription.xml":
                data = data.replace(b'function="titopGetTrialSteps"', b'function="titopNoSuchFunction"')
            zout.writestr(item, data)
    assert fmu_unit_type(bad).trial_steps
    with pytest.raises(ConnectionError_, match="declares the vendor function titopNoSuchFunction but its binary"):
        FMUUnit("b", bad)
