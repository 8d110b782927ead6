"""Linear models through the units of a co-simulation (titop_fmu.linear.fmus): the TITOP FMUs
through FMPy and fmi2GetDirectionalDerivative (their exposed states), interconnected in
closed form, give the matrices of the in-process linearization, at the balloon's hanging
equilibrium and at the hovering spacecraft's (every FMU kind but the loop closure and the
inverse joints, one, two and no child ports)."""

from pathlib import Path

import numpy as np
import pytest
from marks import slow

from titop_fmu.cosim import systemfile
from titop_fmu.errors import ConnectionError_
from titop_fmu.linear.fmus import linearize_units
from titop_fmu.linear.trim import trim
from titop_fmu.scenarios import balloon
from titop_fmu.titop.units import TitopUnits

pytest.importorskip("fmpy")
ROOT = Path(__file__).resolve().parents[2]
TILTED = {"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)}
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")


def at_equilibrium(cs):
    """``(in-process model, {unit: its state there})`` at the equilibrium found in process."""
    eq = trim(cs)
    s = eq.system
    model = eq.linearize(outputs=list(cs.recorded))
    return model, {n: eq.state[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states}


def assert_same(model, ref, rtol):
    assert (model.states, model.inputs, model.outputs) == (ref.states, ref.inputs, ref.outputs)
    for name in ("A", "B", "C", "D"):
        a, b = getattr(model, name), getattr(ref, name)
        err = float(np.max(np.abs(a - b), initial=0.0)) / max(1.0, float(np.max(np.abs(b), initial=0.0)))
        assert err <= rtol, (name, err)
    assert np.abs(model.xdot0).max() <= 1e-12 and np.abs(model.y0 - ref.y0).max() <= 1e-12


@pytest.mark.parametrize("engine,kind", [("inprocess", "pythonfmu"), *slow(("fmu", "pythonfmu")), ("fmu", "standalone")])
def test_the_balloon_through_its_units_is_the_in_process_model(engine, kind, tmp_path_factory):
    """The standalone FMUs too: their C layer's exposed states and exact derivatives."""
    cs = balloon.system(TILTED)
    ref, states = at_equilibrium(cs)
    model = linearize_units(cs, TitopUnits(engine, fmu_kind=kind), states, inputs=ref.inputs)
    assert_same(model, ref, 1e-13)


def test_the_hovering_spacecraft_through_its_fmus_is_the_in_process_model():
    """To about 1e-11 relative: the closed-form interconnection of 7 units solves a loop of
    a few hundred coupling scalars, mixed units, condition number ~1e3 (measured)."""
    cs = systemfile.read(ROOT / "examples" / "spacecraft_hover.toml").system
    ref, states = at_equilibrium(cs)
    model = linearize_units(cs, None, states, inputs=ref.inputs)     # the default: the standalone FMUs
    assert_same(model, ref, 1e-10)


def test_at_a_moving_state_too():
    """Not an equilibrium: the spacecraft file's initial state (spinning bus, moving joints);
    the record list's unit outputs (the units give no inertial quantities)."""
    cs = systemfile.read(ROOT / "examples" / "spacecraft.toml").system
    from titop_fmu.linear import linearize
    model = linearize_units(cs, TitopUnits("inprocess"))
    assert len(model.outputs) == 17 and model.outputs == cs.recorded[:17]
    ref = linearize(cs, inputs=model.inputs, outputs=model.outputs)
    for name in ("A", "B", "C", "D", "xdot0", "y0"):
        a, b = getattr(model, name), getattr(ref, name)
        assert np.abs(a - b).max() <= 1e-10 * max(1.0, np.abs(b).max()), name


def test_unknown_names_are_errors():
    with pytest.raises(ConnectionError_, match="unknown output 'balloon.c9.m'"):
        linearize_units(balloon.system(), TitopUnits("inprocess"), outputs=["balloon.c9.m"])
    with pytest.raises(ConnectionError_, match="unknown output 'balloon.com.position'; a body's inertial quantities "
                                               "are linearized in process"):
        linearize_units(balloon.system(), TitopUnits("inprocess"), outputs=["balloon.com.position"])
