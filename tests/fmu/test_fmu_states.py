"""The continuous states the TITOP FMUs of both kinds expose (FMI 2.0 co-simulation with
``ModelStructure/Derivatives``): ``x.<state>`` and ``der(x.<state>)`` read as the unit's,
and ``fmi2GetDirectionalDerivative`` with states among the knowns and state derivatives
among the unknowns equal to central differences of the in-process unit (the standard
function, one seed, and the vendor function, several); such variables cannot be set. The
standalone kind's (its C layer on the forward-mode kernel) equal the pythonfmu kind's."""

import numpy as np
import pytest

from fmu_fixtures import IDS, derivatives, fmu_dir, fmu_paths, kind, kind_paths, standalone_paths  # noqa: F401
from tests.fmu.test_fmu_derivatives import stepped
from titop_fmu.fmu import catalog

from fmpy.fmi1 import FMICallException  # noqa: E402

WITH_STATES = [m for m in IDS if catalog.interface_of(m).state_names]


def unit_central(ref, n_in, h=1e-6):
    """``d [y; xdot] / d [u; x]`` of the in-process unit by central differences."""
    u0, x0 = ref.u.copy(), ref.x.copy()
    cols = []
    try:
        for j in range(n_in + x0.size):
            vals = []
            for sgn in (1, -1):
                z = np.concatenate([u0, x0])
                z[j] += sgn * h
                ref.set_inputs(ref.ALL, z[:n_in])
                ref.x = z[n_in:]
                ref._y = None
                vals.append(np.concatenate([ref.outputs(), ref.state_derivatives()]))
            cols.append((vals[0] - vals[1]) / (2 * h))
    finally:
        ref.set_inputs(ref.ALL, u0)
        ref.x = x0
        ref._y = None
    return np.array(cols).T


@pytest.mark.parametrize("mid", WITH_STATES)
def test_states_and_their_derivatives(kind_paths, kind, mid):
    """The pythonfmu kind's states are the unit's; the standalone kind's to 1e-13 (its blocks'
    data is computed in C: the last bits may differ, and steps carry them)."""
    host, iface, ref = stepped(kind_paths[mid], mid, WITH_STATES.index(mid))
    states = list(iface.state_names)
    ders = [f"der({s})" for s in states]
    assert [host.var[d].derivative.name for d in ders] == states                 # the derivative attribute
    try:
        tol = 0 if kind == "pythonfmu" else 1e-13 * max(1, np.abs(ref.x).max())
        assert np.abs(host.get(states) - ref.x).max() <= tol
        assert np.abs(host.get(ders) - ref.state_derivatives()).max() <= 1e-14 * max(1, np.abs(ref.x).max())
        knowns, unknowns = list(iface.input_names) + states, list(iface.output_names) + ders
        J = np.column_stack([host.fmu.getDirectionalDerivative([host.vr[n] for n in unknowns], [host.vr[k]], [1.0])
                             for k in knowns])
        fd = unit_central(ref, len(iface.input_names))
        assert np.abs(J - fd).max() <= 1e-6 * max(1.0, np.abs(fd).max())
        status, many = derivatives(host, unknowns, knowns, np.eye(len(knowns)))        # the vendor function
        assert status == 0 and np.array_equal(many, J)
        with pytest.raises(FMICallException):
            host.fmu.setReal([host.vr[states[0]]], [1.0])
        assert any("is a state or its derivative (local) and cannot be set" in m for m in host.errors())
        with pytest.raises(FMICallException):
            host.fmu.getDirectionalDerivative([host.vr[ders[0]]], [host.vr[ders[0]]], [1.0])
        assert any("is not an input or a state" in m for m in host.errors())
    finally:
        host.free()


@pytest.mark.parametrize("mid", WITH_STATES)
def test_standalone_states_and_derivatives_are_the_pythonfmu_fmu_s(fmu_paths, standalone_paths, mid):
    """At the same random parameters, inputs and states (after random steps), each kind's states,
    their derivatives and ``d [y; xdot] / d [u; x]`` (every column, the vendor function): both
    exact, the same to 1e-12 of the largest (the blocks' data is computed in C on one side,
    with numpy on the other)."""
    seed = WITH_STATES.index(mid)
    got = {}
    for kind, paths in (("pythonfmu", fmu_paths), ("standalone", standalone_paths)):
        host, iface, _ = stepped(paths[mid], mid, seed)
        try:
            states = list(iface.state_names)
            ders = [f"der({s})" for s in states]
            knowns, unknowns = list(iface.input_names) + states, list(iface.output_names) + ders
            status, J = derivatives(host, unknowns, knowns, np.eye(len(knowns)))
            assert status == 0
            got[kind] = host.get(states), host.get(ders), J
        finally:
            host.free()
    errs = [np.abs(a - b).max() / max(1.0, np.abs(b).max()) for a, b in zip(got["standalone"], got["pythonfmu"])]
    print(f"\n[states] {mid}: standalone vs pythonfmu, states {errs[0]:.1g}, derivatives {errs[1]:.1g}, "
          f"d [y; xdot] / d [u; x] {errs[2]:.1g}")
    assert max(errs) <= 1e-12
    assert np.abs(got["pythonfmu"][2]).max() > 0
