"""The standalone (C only) block FMUs of a flexible body, ``<kind>_c<k>_f<n>``: their modal data
are FMI parameters, checked in C (``fmu/csrc/flexible_body.c``) as the pythonfmu FMU checks them
in Python. Bad modal data (a non-symmetric mass, a negative frequency, ...) set through FMI end
in fmi2Error with the pythonfmu FMU's very message logged, never a crash; good data give the
pythonfmu FMU's outputs."""

import numpy as np
import pytest
from fmu_fixtures import Host, messages
from marks import slow

from titop_fmu.fmu import build, catalog, standalone
from titop_fmu.fmu.flexible import random_values

NAN, INF = float("nan"), float("inf")
MODES = 2


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    """``fmus(kind, model identifier)``: the FMU of that kind (pythonfmu, standalone), built once."""
    d, paths = tmp_path_factory.mktemp("flexible_fmus"), {}

    def get(kind, mid):
        if (kind, mid) not in paths:
            module = build if kind == "pythonfmu" else standalone
            built = module.build_all(d / kind / mid, children=[], flexible=[catalog.parse_model(mid)])
            paths[(kind, mid)] = next(p for p in built if p.stem == mid)
        return paths[(kind, mid)]
    return get


#: (FMU, parameters): each one an error of fmi2ExitInitializationMode, its message the same in both kinds
BAD = [
    ("welded_c1_f2", {"flex.mass[1,2]": 0.5}),                                  # a non-symmetric mass
    ("welded_c1_f2", {"flex.omega[2]": -3.5}),                                  # a negative frequency
    ("welded_c1_f2", {"flex.omega[1]": 0.0}),
    ("welded_c1_f2", {"flex.zeta[2]": -0.01}),
    ("welded_c1_f2", {"flex.mass[2,2]": 2.0}),                                  # not m 1
    ("welded_c1_f2", {"flex.mass[4,4]": -1.0}),                                 # not positive semi-definite
    ("welded_c1_f2", {"flex.L[1,1]": 1.5}),                                     # D_P - L^T L not PSD
    ("welded_c1_f2", {"flex.I_phi_phi[1,2,1,2]": 0.3}),
    ("welded_c1_f2", {"flex.I_phi_phi[1,1,2,2]": 1.5}),                         # not mass-normalised
    ("welded_c1_f2", {"flex.K0om[4,1,2]": 1.0}),
    ("welded_c1_f2", {"flex.I_phi_x0[3,3,2]": NAN}),
    ("welded_c1_f2", {"c1.K0F[2,1,2]": 1.0}),
    ("welded_c1_f2", {"c1.psi[3,1]": INF}),
    ("welded_c1_f2", {"flex.stiffening": 2}),
    ("welded_c1_f2", {"flex.etad0[2]": -INF}),
    *slow(("revolute_c1_f2", {"flex.L[1,6]": 1.0}),                             # no residual inertia about z
          ("floating_base_c1_f2", {"flex.L[2,2]": 1.0})),                       # a singular residual mass
]


@pytest.mark.parametrize("mid,params", BAD)
def test_bad_modal_data_is_an_fmi_error_with_the_pythonfmu_message(fmus, mid, params):
    got = messages(fmus("standalone", mid), params, {})
    print(f"\n[flexible standalone] {mid} {params}: {got}")
    assert len(got) == 1 and got == messages(fmus("pythonfmu", mid), params, {}), got


@pytest.mark.parametrize("mid", ["welded_c1_f2", *slow("revolute_c1_f2", "floating_base_c1_f2")])
def test_outputs_and_states_are_the_pythonfmu_fmu_s(fmus, mid):
    """A random beam (random sections, axis, ports and initial modal states) and random inputs:
    ten steps of 0.01 s, every output of the standalone FMU within 1e-9 of the largest of the
    pythonfmu FMU's (the same kernel; measured to rounding)."""
    iface = catalog.interface_of(mid)
    rng = np.random.default_rng(3)
    values = {name: v for p, value in random_values(iface.n_children, MODES, rng).items()
              for name, v in zip([s[0] for s in iface.param_scalars if iface.params[s[1]].name == p],
                                 np.ravel(value))}
    inputs = {n: 0.1 * rng.standard_normal() for n in iface.input_names}
    outputs = []
    for kind in ("pythonfmu", "standalone"):
        host = Host(fmus(kind, mid))
        try:
            host.fmu.setupExperiment(startTime=0.0)
            host.set(values)
            host.fmu.enterInitializationMode()
            host.fmu.exitInitializationMode()
            host.set(inputs)
            rows = []
            for k in range(10):
                host.fmu.doStep(currentCommunicationPoint=0.01 * k, communicationStepSize=0.01)
                rows.append(host.get(iface.output_names))
            assert host.errors() == []
            outputs.append(np.array(rows))
        finally:
            host.free()
    scale = np.abs(outputs[0]).max()
    err = np.abs(outputs[1] - outputs[0]).max() / scale
    print(f"\n[flexible standalone] {mid}: standalone vs pythonfmu, 10 steps: {err:.2g} of the largest output")
    assert scale > 0 and err <= 1e-9
