"""The continuous states the TITOP FMUs expose (FMI 2.0 co-simulation with
``ModelStructure/Derivatives``): ``x.<state>`` and ``der(x.<state>)`` read as the unit's,
and ``fmi2GetDirectionalDerivative`` with states among the knowns and state derivatives
among the unknowns equal to central differences of the in-process unit (the standard
function, one seed, and the vendor function, several); such variables cannot be set."""

import numpy as np
import pytest

from fmu_fixtures import IDS, derivatives, fmu_dir, fmu_paths  # noqa: F401
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
def test_states_and_their_derivatives(fmu_paths, mid):
    host, iface, ref = stepped(fmu_paths[mid], mid, WITH_STATES.index(mid))
    states = list(iface.state_names)
    ders = [f"der({s})" for s in states]
    assert [host.var[d].derivative.name for d in ders] == states                 # the derivative attribute
    try:
        assert np.array_equal(host.get(states), ref.x)
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
