"""fmi2GetDirectionalDerivative of the TITOP FMUs through FMPy.

Every FMU at random parameters, states and inputs after a few steps: the
derivative of every output w.r.t. each acceleration-level input equals the
forward difference of a unit step through the FMU (the outputs are affine
there); w.r.t. each twist/pose input, a central difference; a seed over
several inputs, and subsets of unknowns and knowns in any order, give the
matching combination of columns; the numbers are the in-process unit's. A
reference that is not an output (unknown) or an input (known), or a call
before the outputs exist, is an fmi2Error with a message, and the instance
stays usable. Several instances of several FMUs answer independently, also
after fmi2Reset and after another instance is freed.
"""

import numpy as np
import pytest

from fmu_fixtures import IDS, H, Host, fmu_dir, fmu_paths, kind, kind_paths, standalone_paths, random_inputs, random_setup, unzipped  # noqa: F401
from marks import by_kind
from titop_fmu.cosim.numerics import wrap

from fmpy.fmi1 import FMICallException  # noqa: E402  (fmu_fixtures skips the module without FMPy)

STEPS = 3


def stepped(path, mid, seed):
    """``(host, iface, reference unit)``: an initialized FMU instance and the in-process unit
    in the same state, after :data:`STEPS` steps with random inputs."""
    iface, params, ref = random_setup(mid, seed=seed)
    rng = np.random.default_rng(200 + seed)
    host = Host(path, f"{mid}_{seed}")
    u = random_inputs(iface, rng)
    host.initialize(params, dict(zip(iface.input_names, u)))
    ref.set_inputs(ref.ALL, u)
    for k in range(STEPS):
        u = random_inputs(iface, rng)
        host.set(dict(zip(iface.input_names, u)))
        ref.set_inputs(ref.ALL, u)
        host.fmu.doStep(k * H, H)
        ref.do_step(ref.t, H)
    return host, iface, ref


def derivative(host, unknowns, knowns, seed):
    return np.array(host.fmu.getDirectionalDerivative([host.vr[n] for n in unknowns],
                                                      [host.vr[n] for n in knowns], list(map(float, seed))))


@pytest.mark.parametrize("kind, mid", by_kind(IDS), indirect=["kind"])
def test_derivatives_equal_differences(kind_paths, kind, mid):
    md, _ = unzipped(kind_paths[mid])
    assert md.coSimulation.providesDirectionalDerivative
    host, iface, ref = stepped(kind_paths[mid], mid, IDS.index(mid))
    ins, outs = list(iface.input_names), list(iface.output_names)
    try:
        u0, y0 = host.get(ins), host.get(outs)
        J = np.column_stack([derivative(host, outs, [n], [1.0]) for n in ins])
        assert np.array_equal(host.get(outs), y0)                      # nothing changed
        scale = max(1.0, float(np.abs(J).max()))
        affine = set(ref._affine_inputs.tolist())
        for j, name in enumerate(ins):
            if j in affine:             # affine: a unit step is exact
                host.set({name: u0[j] + 1.0})
                diff, tol = host.get(outs) - y0, 1e-12
            else:                       # central differences, Euler angles on the circle
                step = 1e-5
                host.set({name: u0[j] + step})
                yp = host.get(outs)
                host.set({name: u0[j] - step})
                d = yp - host.get(outs)
                d[ref._angle_outputs] = wrap(d[ref._angle_outputs])
                diff, tol = d / (2 * step), 1e-7
            host.set({name: u0[j]})
            assert np.abs(J[:, j] - diff).max() <= tol * scale, (mid, name)
        assert np.array_equal(host.get(outs), y0)
        # the in-process unit's numbers: to rounding along the acceleration-level inputs; along the
        # twist/pose inputs the same central differences, which turn a difference of the states in
        # their last bits (the standalone kind computes the blocks' data in C, not with numpy's
        # BLAS) into one of about eps |y| / 1e-6 (their own accuracy, 1e-10): bit for bit for
        # the pythonfmu kind, which runs the in-process unit
        diff = np.abs(J - ref.directional_derivatives(ref.ALL, ref.ALL, np.eye(len(ins))))
        assert diff[:, sorted(affine)].max(initial=0.0) <= 1e-12 * scale
        assert diff.max() <= (1e-12 if kind == "pythonfmu" else 1e-9) * scale, diff.max() / scale
        # a seed over every input, and over subsets in any order
        rng = np.random.default_rng(7)
        seed = rng.standard_normal(len(ins))
        assert np.abs(derivative(host, outs, ins, seed) - J @ seed).max() <= 1e-8 * scale
        rows = rng.permutation(len(outs))[:max(1, len(outs) // 3)]
        cols = rng.permutation(sorted(affine))[:4]
        seed = rng.standard_normal(len(cols))
        got = derivative(host, [outs[i] for i in rows], [ins[j] for j in cols], seed)
        assert np.abs(got - J[np.ix_(rows, cols)] @ seed).max() <= 1e-12 * scale
        assert host.errors() == []
    finally:
        host.free()


def test_euler_angle_outputs_are_differenced_on_the_circle(kind_paths):
    """A parent at psi just below pi: the central difference along p.m[18] crosses pi in the child's
    angle c1.m[18], and is taken on the circle (the derivative 1, not -1e6)."""
    host = Host(kind_paths["revolute_c1"])
    try:
        host.initialize(inputs={"p.m[18]": np.pi - 1e-9})
        assert host.get(["c1.m[18]"])[0] == pytest.approx(np.pi - 1e-9, abs=1e-12)
        assert derivative(host, ["c1.m[18]"], ["p.m[18]"], [1.0])[0] == pytest.approx(1.0, abs=1e-6)
    finally:
        host.free()


@pytest.mark.parametrize("unknown,known,expect", [
    ("p.m[1]", "p.m[1]", "p.m[1] is not an output"),            # an input as unknown
    ("c1.m[1]", "c1.m[2]", "c1.m[2] is not an input"),          # an output as known
    ("c1.m[1]", "mass", "mass is not an input"),                # a parameter
    ("c1.m[1]", 10 ** 6, "<value reference 1000000> is not an input"),
])
def test_bad_references_are_errors(kind_paths, unknown, known, expect):
    host, iface, _ = stepped(kind_paths["revolute_c1"], "revolute_c1", 1)
    try:
        vr = lambda n: n if isinstance(n, int) else host.vr[n]                     # noqa: E731
        with pytest.raises(FMICallException, match="status 3"):
            host.fmu.getDirectionalDerivative([vr(unknown)], [vr(known)], [1.0])
        assert any(m.startswith("fmi2GetDirectionalDerivative") and expect in m for m in host.errors()), host.log
        # the instance is still usable
        host.log.clear()
        assert np.all(np.isfinite(derivative(host, ["c1.m[1]"], ["p.m[1]"], [1.0])))
        host.fmu.doStep(STEPS * H, H)
        assert host.errors() == []
    finally:
        host.free()


def test_before_initialization_is_an_error(kind_paths):
    host = Host(kind_paths["revolute_c1"])
    try:
        with pytest.raises(FMICallException, match="status 3"):
            derivative(host, ["c1.m[1]"], ["p.m[1]"], [1.0])
        assert any("outputs are available from fmi2EnterInitializationMode on" in m for m in host.errors())
        host.fmu.setupExperiment(startTime=0.0)
        host.fmu.enterInitializationMode()         # outputs exist from here: so do their derivatives
        d = derivative(host, ["c1.m[1]"], ["p.m[1]"], [1.0])
        assert d.shape == (1,) and np.isfinite(d).all()
        host.fmu.exitInitializationMode()
    finally:
        host.free()


def test_instances_of_several_fmus_answer_independently(kind_paths):
    """Interleaved instances of two FMUs each give their own unit's derivatives, also after
    fmi2Reset of one (pythonfmu makes a new Python object) and after another one is freed."""
    mids = ["revolute_c1", "revolute_c1", "floating_base_c1"]
    runs = [stepped(kind_paths[m], m, 60 + i) for i, m in enumerate(mids)]

    def check(host, iface, ref):
        ins, outs = list(iface.input_names), list(iface.output_names)
        seed = np.random.default_rng(len(ins)).standard_normal(len(ins))
        want = ref.directional_derivatives(ref.ALL, ref.ALL, seed[:, None])[:, 0]
        assert np.abs(derivative(host, outs, ins, seed) - want).max() <= 1e-10 * max(1.0, np.abs(want).max())

    try:
        for run in runs:
            check(*run)
        host, iface, _ = runs[0]
        host.fmu.reset()
        host.initialize()                           # default parameters, start values
        ref, _ = iface.make_unit(iface.defaults())
        ref.set_inputs(ref.ALL, host.get(iface.input_names))
        runs[0] = host, iface, ref
        check(*runs[0])
        runs.pop(1)[0].free()
        for run in runs:
            check(*run)
            assert run[0].errors() == []
    finally:
        for run in runs:
            run[0].free()
