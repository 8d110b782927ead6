"""BlockUnit: one block as a co-simulation unit (inputs, outputs, the kinematics cache)."""

import numpy as np
import pytest

from titop_fmu.blocks import RevoluteBody, RigidBody
from titop_fmu.cosim.numerics import wrap
from titop_fmu.errors import SolverError
from titop_fmu.fmu import catalog
from titop_fmu.unit import BlockUnit

rng = np.random.default_rng(3)


def unit():
    body = RigidBody(1.5, np.diag([0.1, 0.2, 0.15]), com=[0.1, -0.6, 0.2], children=[[0.0, -1.0, 0.3]])
    u = BlockUnit(RevoluteBody(body, axis=[0.3, 0.2, 1.0], mount=[0.1, 0.2, -0.3], k=2.0, d=0.3),
                  kernel="numpy")                # the NumPy path's kinematics cache
    u.set_inputs(u.ALL, rng.standard_normal(len(u.input_names)))
    return u


def fresh(u):
    """The outputs recomputed from scratch by the block."""
    out = u.block.outputs(u.x, u.input_dict())
    return np.concatenate([np.atleast_1d(out[n]) for n in u.output_spec])


def test_outputs_follow_every_input_and_state_change():
    """The kinematic stage is kept while states and parent twist/pose do not change: the
    outputs must still equal a fresh evaluation after any kind of change."""
    u = unit()
    names = u.input_names
    acc_level = [i for i, n in enumerate(names) if not (n.startswith("p.m[") and int(n[4:-1]) > 6)]
    state_level = [i for i, n in enumerate(names) if n.startswith("p.m[") and int(n[4:-1]) > 6]
    for k in range(12):
        idx = rng.choice(acc_level if k % 3 else state_level, 3, replace=False)
        u.set_inputs(idx, rng.standard_normal(3))
        assert np.array_equal(u.outputs(), fresh(u))
        if k % 4 == 0:
            u.do_step(u.t, 0.01)
            assert np.array_equal(u.outputs(), fresh(u))
    s = u.get_state()
    u.do_step(u.t, 0.01)
    u.set_state(s)
    assert np.array_equal(u.outputs(), fresh(u))


def test_non_finite_inputs_change_nothing():
    u = unit()
    before, y = u.u.copy(), u.outputs().copy()
    with pytest.raises(SolverError, match=r"non-finite input\(s\) \['c1.w\[2\]'\]"):
        u.set_inputs(u.input_names.index("c1.w[1]") + np.array([0, 1]), [1.0, np.nan])
    with pytest.raises(SolverError, match=r"non-finite input\(s\) \[.p\.m\[1\].,"):
        u.set_input("p.m", np.full(18, np.inf))
    with pytest.raises(SolverError):
        u.set_inputs(u.ALL, np.full(len(u.input_names), np.nan))
    assert np.array_equal(u.u, before) and np.array_equal(u.outputs(), y)


def _loaded(model_id, seed):
    """The unit of a catalog model at random states and inputs."""
    r = np.random.default_rng(seed)
    u, _ = catalog.build_unit(model_id, {})
    u.x = u._project(u.x + 0.2 * r.standard_normal(u.x.size))
    u.set_inputs(u.ALL, 0.3 * r.standard_normal(len(u.input_names)))
    return u


@pytest.mark.parametrize("model_id", [catalog.model_identifier(k, n) for k, n in catalog.all_identifiers()])
def test_directional_derivatives_against_differences(model_id):
    """Every catalog model: along the acceleration-level inputs the derivatives equal
    forward differences of a unit step (the outputs are affine there: any step is exact)
    to rounding; along the twist/pose inputs they equal central differences of the
    outputs to their truncation error. Outputs and states are left as they were."""
    u = _loaded(model_id, 11)
    u0, y0 = u.u.copy(), u.outputs().copy()
    n = len(u.input_names)
    J = u.directional_derivatives(u.ALL, u.ALL, np.eye(n))
    assert np.array_equal(u.u, u0) and np.array_equal(u.outputs(), y0)
    scale = max(1.0, float(np.abs(J).max()))
    affine = set(u._affine_inputs.tolist())
    for j in range(n):
        if j in affine:
            step, forward = 1.0, True
        else:
            step, forward = 1e-5, False
        up = u0.copy()
        up[j] += step
        u.set_inputs(u.ALL, up)
        yp = u.outputs().copy()
        if forward:
            ref = (yp - y0) / step
        else:
            um = u0.copy()
            um[j] -= step
            u.set_inputs(u.ALL, um)
            d = yp - u.outputs()
            d[u._angle_outputs] = wrap(d[u._angle_outputs])
            ref = d / (2 * step)
        u.set_inputs(u.ALL, u0)
        tol = 1e-13 if forward else 1e-8
        assert np.abs(J[:, j] - ref).max() <= tol * scale, (model_id, u.input_names[j])
    # a combination of seeds is the combination of the columns; sub-blocks are the blocks
    seeds = np.random.default_rng(2).standard_normal((n, 3))
    assert np.allclose(u.directional_derivatives(u.ALL, u.ALL, seeds), J @ seeds, rtol=1e-9, atol=1e-9 * scale)
    rows, cols = [0, 2], sorted(affine)[:4]
    assert np.allclose(u.directional_derivatives(rows, cols, np.eye(len(cols))), J[np.ix_(rows, cols)],
                       rtol=0, atol=1e-14 * scale)


def test_differences_along_twist_and_pose_keep_the_kinematics():
    """The central differences along twist/pose inputs evaluate the kinematic stage at
    perturbed inputs; the unit's kinematics of its own inputs are kept for what follows (the
    outputs, the exact columns): no kinematic stage again (on the NumPy block: the C kernel
    keeps no kinematics)."""
    unit = BlockUnit(catalog.build_unit("revolute_c1", {"mass": 2.0, "q0": 0.3, "qd0": 0.5})[0].block,
                     kernel="numpy")
    unit.set_inputs(unit.ALL, 0.3 * np.random.default_rng(1).standard_normal(len(unit.input_names)))
    y = unit.outputs().copy()
    calls = []
    kinematics = unit.block.kinematics
    unit.block.kinematics = lambda *a, **k: calls.append(1) or kinematics(*a, **k)
    twist = unit.input_names.index("p.m[10]")
    unit.directional_derivatives(np.arange(len(unit.output_names)), [twist], np.ones((1, 1)))
    assert len(calls) == 2                                  # the two perturbed evaluations
    accel = unit.input_names.index("p.m[1]")
    unit.directional_derivatives(np.arange(len(unit.output_names)), [accel], np.ones((1, 1)))
    assert np.array_equal(unit.outputs(), y) and len(calls) == 2


@pytest.mark.parametrize("model_id", [catalog.model_identifier(k, n) for k, n in catalog.all_identifiers()])
def test_the_kernel_computes_what_the_numpy_block_computes(model_id):
    """Every catalog model at random parameters, states and inputs: on the C kernel, outputs, state derivatives and the exact directional derivatives equal the
    NumPy block's to rounding, and a step equals the NumPy step to the integrator's tolerance."""
    from titop_fmu.fmu.model_description import random_parameters
    iface = catalog.interface_of(model_id)
    r = np.random.default_rng(5)
    for _ in range(3):
        u, _ = iface.make_unit(random_parameters(iface, r))
        ref = BlockUnit(u.block, u.rtol, u.atol, kernel="numpy")
        assert u.kernel == "c"
        x = u._project(u.x + 0.3 * r.standard_normal(u.x.size))
        inputs = r.standard_normal(len(u.input_names))
        for w in (u, ref):
            w.x = x.copy()
            w.set_inputs(w.ALL, inputs)
        a, b = u.outputs(), ref.outputs()
        assert np.abs(a - b).max() <= 1e-13 * np.abs(b).max()
        affine = u._affine_inputs                      # the exact columns
        outs = np.arange(len(u.output_names))
        Da = u.directional_derivatives(outs, affine, np.eye(len(affine)))
        Db = ref.directional_derivatives(outs, affine, np.eye(len(affine)))
        assert np.abs(Da - Db).max() <= 1e-13 * max(1.0, np.abs(Db).max())
        if x.size:
            fa, fb = u._derivative_function()(x), ref._derivative_function()(x)
            assert np.abs(fa - fb).max() <= 1e-13 * np.abs(fb).max()
            u.do_step(0.0, 0.01)
            ref.do_step(0.0, 0.01)
            assert np.abs(u.x - ref.x).max() <= 1e-8 * max(1.0, np.abs(ref.x).max())


def test_the_kernel_step_is_dopri5_step_for_step():
    """The C step takes the steps integrators.dopri5 takes on the kernel's derivatives (same
    tableau, same control): the same result to rounding and the same next step-size guess,
    over short and long steps (several internal steps), from a guess and without one, and from
    a guess of a few ulps (left by a sliver of a last step: both stopped with "step size
    underflow" after a step they had accepted)."""
    from titop_fmu.integrators import dopri5
    r = np.random.default_rng(8)
    for model_id in ("floating_base_c1", "revolute_c1", "prismatic_c0"):
        u, _ = catalog.build_unit(model_id, {})
        k = u._kernel
        for h, guess in ((0.004, None), (0.5, None), (0.5, 0.01), (2.0, 0.3), (0.004, 1.4e-16)):
            x = u._project(u.x + 0.3 * r.standard_normal(u.x.size))
            u.set_inputs(u.ALL, r.standard_normal(len(u.input_names)))
            np.copyto(k.u, u.u)
            ref, h_ref, n = dopri5(k.derivatives, x, h, 1e-9, 1e-9, guess)
            got, h_got = k.step(x, h, 1e-9, 1e-9, guess)
            assert np.abs(got - ref).max() <= 1e-13 * max(1.0, np.abs(ref).max()), (model_id, h)
            # the guess follows the error estimate, a difference of stages: its rounding (numpy's
            # products against C's loops) shows at 1e-8 relative
            assert h_got == pytest.approx(h_ref, rel=1e-6)
            if h == 2.0:
                assert n > 50                                  # many internal steps
    u, _ = catalog.build_unit("revolute_c0", {})
    u.x = np.array([0.0, np.inf])
    with pytest.raises(SolverError, match="non-finite"):
        u.do_step(0.0, 0.01)
