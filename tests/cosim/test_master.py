"""The generic co-simulation master (``titop_fmu.cosim``) on hand-made systems of
:class:`FunctionSpec` units: the algebraic loops and their unknowns found, linear loops
solved to their analytic value, a loop without a solution an
error naming it; a two-unit oscillator against its exact solution.
"""

import math

import numpy as np
import pytest
from loop_checks import check_loops, labels

from titop_fmu.cosim import (
    CoSystem,
    FileUnits,
    FunctionSpec,
    LoopError,
    Options,
    analyse,
    build,
    simulate,
)
from titop_fmu.errors import SolverError

#: the master's default tolerance (3e-5) keeps a smooth system within this of its exact solution
DEFAULT_BOUND = 1e-5


def report(what, **figures):
    print(f"\n[master] {what}: " + ", ".join(f"{k} {v:.3g}" for k, v in figures.items()))


# -- hand-made systems --------------------------------------------------------------------

def unit(inputs, outputs, f, deps=None, **kw):
    return FunctionSpec(list(inputs), list(outputs), f, dependencies=deps, **kw)


def pair_loop(s, a="a", b="b"):
    """``a.y = u/2 + 1``, ``b.w = 2 - v/4``, ``a.y -> b.v``, ``b.w -> a.u``:
    ``y = 16/9``, ``w = 14/9``."""
    s.add(a, unit(["u"], ["y"], lambda x, u: [0.5 * u[0] + 1.0]))
    s.add(b, unit(["v"], ["w"], lambda x, u: [2.0 - 0.25 * u[0]]))
    s.connect(f"{a}.y", f"{b}.v")
    s.connect(f"{b}.w", f"{a}.u")


def structure(system):
    return analyse(system, FileUnits().unit_types(system))


def initial_outputs(system, **kw):
    """The recorded outputs after the loops are solved at t = 0."""
    master = build(system, FileUnits(), Options(workers=0, sequence=(1,), **kw))
    try:
        return master.initialize(0.0)
    finally:
        master.terminate()


# loop tolerances 1e-15: a residual below 1e-15 (1 + |z|) <= 6.2e-15 (|z| <= 5.2 below), an
# error below that times |(I - dG/dz)^-1| (8/9, 2 and 2.87 for the loops below): under 3e-14
EXACT = dict(loop_rtol=1e-15, loop_atol=1e-15)
EXACT_BOUND = 3e-14


def test_two_units_in_an_algebraic_loop():
    s = CoSystem()
    pair_loop(s)
    s.record("a.y", "b.w")
    st = structure(s)
    assert len(st.loops) == 1
    assert st.loops[0].units == ["a", "b"]
    assert labels(st, st.loops[0].inputs) == {"a.u", "b.v"}
    assert labels(st, st.unknowns) == {"a.u", "b.v"}
    check_loops(st)
    y = initial_outputs(s, **EXACT)
    assert np.max(np.abs(y - [16 / 9, 14 / 9])) <= EXACT_BOUND


def test_a_chain_and_a_feedback_through_a_state_have_no_loop():
    """``src`` (state x = 3, output x: no direct feedthrough) -> ``mid`` (2 u) -> ``end``
    (v + 1) -> back to ``src``: a cycle of connections, but no algebraic loop."""
    s = CoSystem()
    s.add("src", unit(["u"], ["y"], lambda x, u: [x[0]], deps=[[]], x0=(3.0,),
                      derivative_fn=lambda x, u: np.array([-u[0]])))
    s.add("mid", unit(["u"], ["y"], lambda x, u: [2.0 * u[0]]))
    s.add("end", unit(["v"], ["z"], lambda x, u: [u[0] + 1.0]))
    s.connect("src.y", "mid.u")
    s.connect("mid.y", "end.v")
    s.connect("end.z", "src.u")
    s.record("src.y", "mid.y", "end.z")
    st = structure(s)
    assert st.loops == [] and len(st.unknowns) == 0
    check_loops(st)
    assert np.array_equal(initial_outputs(s), [3.0, 6.0, 7.0])


def test_independent_loops_are_found_and_solved():
    """Three loops: the pair ``a``-``b``; ``c``-``d`` exchanging two scalars each way, fed
    one-way by the first loop (``b.w -> c.e``); ``s`` feeding itself (``y = u/2 + 3``)."""
    s = CoSystem()
    pair_loop(s)
    C = np.array([[0.5, 0.1], [0.2, -0.3]])
    D = np.array([[1.0, 0.5], [0.25, -0.5]])
    s.add("c", unit(["u1", "u2", "e"], ["y1", "y2"],
                    lambda x, u: [C[0] @ u[:2] + u[2], C[1] @ u[:2] + 1.0], deps=[[0, 1, 2], [0, 1]]))
    s.add("d", unit(["v1", "v2"], ["w1", "w2"], lambda x, u: D @ u))
    s.add("s", unit(["u"], ["y"], lambda x, u: [0.5 * u[0] + 3.0]))
    for out, inp in [("c.y1", "d.v1"), ("c.y2", "d.v2"), ("d.w1", "c.u1"), ("d.w2", "c.u2"),
                     ("b.w", "c.e"), ("s.y", "s.u")]:
        s.connect(out, inp)
    s.record("a.y", "c.y1", "c.y2", "d.w1", "d.w2", "s.y")
    st = structure(s)
    assert {frozenset(lp.units) for lp in st.loops} == {frozenset("ab"), frozenset("cd"), frozenset("s")}
    assert {frozenset(labels(st, lp.inputs)) for lp in st.loops} == {
        frozenset({"a.u", "b.v"}), frozenset({"c.u1", "c.u2", "d.v1", "d.v2"}), frozenset({"s.u"})}
    assert "c.e" not in set().union(*(labels(st, lp.inputs) for lp in st.loops))
    assert len(st.unknowns) == 7
    check_loops(st)
    # analytic values: y = C U + [e, 1], U = D y with e = 14/9  ->  (I - C D) y = [e, 1]
    e = 14 / 9
    y = np.linalg.solve(np.eye(2) - C @ D, [e, 1.0])
    expect = np.concatenate([[16 / 9], y, D @ y, [6.0]])
    assert np.max(np.abs(initial_outputs(s, **EXACT) - expect)) <= EXACT_BOUND


# -- loops without a solution -------------------------------------------------------------------

def test_zero_loop_tolerances_are_refused():
    s = CoSystem()
    pair_loop(s)
    with pytest.raises(SolverError, match=r"loop tolerances must be >= 0 and not both 0"):
        build(s, FileUnits(), Options(workers=0, loop_rtol=0.0, loop_atol=0.0))


def gain_and_wire(f, **kw):
    s = CoSystem()
    s.add("gain", unit(["u"], ["y"], f, **kw))
    s.add("wire", unit(["v"], ["w"], lambda x, u: [u[0]]))
    s.connect("gain.y", "wire.v")
    s.connect("wire.w", "gain.u")
    s.record("gain.y")
    return s


@pytest.mark.parametrize("f, least_residual", [
    (lambda x, u: [u[0] + 1.0], 1.0),               # y = u + 1, u = y: r = 1 for every u
    (lambda x, u: [u[0] ** 2 + 1.0], 0.75),         # u^2 - u + 1 >= 3/4: no real root
], ids=["linear", "quadratic"])
def test_a_loop_without_solution_is_an_error_naming_it(f, least_residual):
    with pytest.raises(LoopError) as info:
        simulate(gain_and_wire(f), 0.1, FileUnits(), options=Options(workers=0))
    e = info.value
    assert isinstance(e, SolverError)
    msg = str(e)
    assert e.loop == "loop 1 (gain, wire)" and e.loop in msg
    assert "largest at gain.u" in msg or "largest at wire.v" in msg
    assert e.time == 0.0 and "t=0 s" in msg
    assert e.residual >= least_residual * (1 - 1e-9) and f"residual {e.residual:.3g}" in msg


@pytest.mark.parametrize("kw", [dict(hold=True), dict(sequence=(1,), fixed=True)], ids=["hold", "midpoint"])
def test_a_loop_losing_its_root_fails_at_that_time(kw):
    """``y = u^2 + x`` with ``x = t`` and ``u = y``: roots ``1/2 +- sqrt(1/4 - t)`` up to
    t = 1/4 (a double root there, where Newton may stall), none after. On a 0.01 s grid the
    master must stop at 0.25 or 0.26."""
    s = gain_and_wire(lambda x, u: [u[0] ** 2 + x[0]], x0=(0.0,), derivative_fn=lambda x, u: np.array([1.0]))
    with pytest.raises(LoopError) as info:
        simulate(s, 0.5, FileUnits(), options=Options(workers=0, h0=0.01, **kw))
    e = info.value
    assert 0.25 - 1e-12 <= e.time <= 0.26 + 1e-12
    assert f"t={e.time:.9g} s" in str(e) and "loop 1 (gain, wire)" in str(e)
    assert e.residual > 0 and f"residual {e.residual:.3g}" in str(e)


def test_two_unit_oscillator_follows_the_exact_solution():
    """``q'' = F``, ``F = -4 q`` split into a mass unit (state, no feedthrough) and a spring
    unit: ``q = cos 2t``. (The first base steps converge at their first coupling iterate: the
    error was 4e-4 when measuring the step sensitivities left the units at the step's start.)"""
    s = CoSystem()
    s.add("mass", unit(["F"], ["q"], lambda x, u: [x[0]], deps=[[]], x0=(1.0, 0.0),
                       derivative_fn=lambda x, u: np.array([x[1], u[0]])))
    s.add("spring", unit(["q"], ["F"], lambda x, u: [-4.0 * u[0]]))
    s.connect("mass.q", "spring.q")
    s.connect("spring.F", "mass.F")
    s.record("mass.q")
    res = simulate(s, 1.0, FileUnits(), output_interval=0.01, options=Options(workers=0))
    err = float(np.max(np.abs(res.values[:, 0] - np.cos(2.0 * res.t))))
    report("two-unit oscillator, 1 s", error=err)
    assert err <= DEFAULT_BOUND


def light_body_system(m_a=0.004, m_b=0.02, k=30.0):
    """A light body on a spring carrying a heavier one, split where a light gimbal's joint is: unit
    ``a`` (mass ``m_a``, spring ``k`` to the ground, state ``x, v``) gives its acceleration, which
    depends on the force ``F`` it is given; unit ``b`` (mass ``m_b``, rigidly carried) answers
    with its inertial force ``F = -m_b a``: an algebraic loop, ``a = -k x / (m_a + m_b)``. The
    coupled mode is ``sqrt(k / (m_a + m_b))`` (32 rad/s), but over a macro step unit ``a`` holds
    ``F`` and moves at its own ``sqrt(k / m_a)`` (87 rad/s), which no coupling input shows."""
    s = CoSystem()
    s.add("a", unit(["F"], ["x", "v", "acc"], lambda x, u: [x[0], x[1], (-k * x[0] + u[0]) / m_a],
                    deps=[[], [], [0]], x0=(1e-3, 0.0),
                    derivative_fn=lambda x, u: np.array([x[1], (-k * x[0] + u[0]) / m_a])))
    s.add("b", unit(["acc"], ["F"], lambda x, u: [-m_b * u[0]]))
    s.connect("a.acc", "b.acc")
    s.connect("b.F", "a.F")
    s.record("a.x", "a.v")
    w = np.sqrt(k / (m_a + m_b))
    return s, lambda t: np.column_stack([1e-3 * np.cos(w * t), -1e-3 * w * np.sin(w * t)])


def test_a_light_body_is_held_to_the_tolerance():
    """A light body (:func:`light_body_system`): at default settings the master's outputs stay
    within the tolerance of the exact solution over 5 s (absolute: they are under one unit), and
    its own estimate is at or above their error. The estimate of before, from the coupling inputs
    alone, saw 1e-3 of what the step made; the error was 0.006 (200 times the tolerance)."""
    s, exact = light_body_system()
    res = simulate(s, 5.0, FileUnits(), output_interval=0.01, options=Options(workers=0))
    err = float(np.max(np.abs(res.values - exact(res.t))))
    report("light body, 5 s", error=err, estimate=res.stats.error_estimate, macro_steps=res.stats.macro_steps)
    assert err <= Options.tol and res.stats.error_estimate >= err and not res.warning


def test_the_first_interval_is_shortened_by_the_base_step_s_order():
    """Before the first accepted interval the tableau has no columns to scale the local error by:
    the error is the base step's, ~ H^2 per unit step, and a rejection shortens the step by that
    order. The light body's first interval (1 ms, the default start) was tried five times when
    the step was shortened by the level's order, ~ H^6 (then 0.50, 0.29, 0.22 and 0.18 ms), twice
    now (then 0.2 ms, the largest cut a rejection makes)."""
    s, _ = light_body_system()
    m = build(s, FileUnits(), Options(workers=0))
    tried = []
    m.on_attempt = tried.append
    m.initialize()
    m.advance(0.5)
    assert m.stats.rejected == 1 and len(tried) == 1 and tried[0] <= 0.2 * 1e-3 * (1 + 1e-12)


def _feedthrough(rng, n):
    """A random ``M`` (n x n) block-sparse as units' feedthrough: 3 x 3 blocks, each unit's
    rows x the next one's coupling inputs."""
    M = np.zeros((n, n))
    for i in range(0, n, 3):
        M[i:i + 3, (i + 3) % n:(i + 3) % n + 3] = 0.3 * rng.standard_normal((3, 3))
    return M


@pytest.mark.parametrize("dense_up_to", [10 ** 9, 0], ids=["dense", "sparse"])
def test_step_jacobian_solves_follow_its_broyden_updates(dense_up_to, monkeypatch):
    """The coupling iteration's solves with ``I - J``, kept through Broyden's updates (dense:
    Sherman-Morrison on the inverse; sparse: a low-rank term by Woodbury's identity, up to
    MAX_RANK of them, the updates past it declined) and through the rescaling with the base step, equal a fresh dense
    solve with ``J = h/h_ref (1/2 (I - M)^-1 P + sum u v^T)``: to rounding where the dense
    inverse is exact, within ``REFINED`` of the solution where it was formed at another step
    (the preconditioner of refinements); an ulp's change of the base step keeps the factors."""
    from titop_fmu.cosim import step_jacobian
    from titop_fmu.cosim.step_jacobian import StepJacobian

    monkeypatch.setattr(step_jacobian, "MAX_RANK", 6)
    rng = np.random.default_rng(4)
    n = 12
    M = _feedthrough(rng, n)

    class Sens:
        @staticmethod
        def solve(X):
            return np.linalg.solve(np.eye(n) - M, X)

        @staticmethod
        def factors():
            from scipy import sparse
            from scipy.sparse.linalg import splu
            IM = sparse.csc_matrix(np.eye(n) - M)
            return IM, splu(IM)

        @staticmethod
        def sparse(X):
            from scipy import sparse
            return sparse.csc_matrix(X)
    P = 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)
    J0 = 0.5 * np.linalg.solve(np.eye(n) - M, P)       # at h = 0.01, no correction
    jac = StepJacobian(n, dense_up_to=dense_up_to)
    jac.reset(P, Sens, h=0.01)
    J = J0.copy()
    for k in range(10):
        h = 0.01 if k < 3 else 0.009
        r = rng.standard_normal(n)
        Jh = J * (h / 0.01)
        exact = np.linalg.solve(np.eye(n) - Jh, r)
        sparse = jac._sparse is not None
        refined = dense_up_to and k >= 3          # the inverse formed at 0.01, before the updates
        got = jac.correction(h, r)
        assert np.abs(got - exact).max() <= (step_jacobian.REFINED if refined else 1e-11) * np.abs(exact).max()
        if refined:
            assert jac.jac[2] in (0.0, 0.01)      # not formed again
        assert sparse == (dense_up_to == 0)
        # the norm: sparse, of J without its corrections
        assert jac.norm(h) == pytest.approx(np.abs(J0 * (h / 0.01) if sparse else Jh).sum(axis=1).max())
        if k == 1:          # a base step that differs by the rounding of t + H k/n keeps the factors
            kept = jac._sparse._lu_B if sparse else jac.Jinv.copy()
            jac.correction(0.01 * (1 + 4e-16), r)
            if sparse:
                assert jac._sparse._lu_B is kept
            else:
                assert jac.jac[1] and np.array_equal(jac.Jinv, kept)
        dz, dG, w = rng.standard_normal(n), 0.1 * rng.standard_normal(n), np.exp(rng.standard_normal(n))
        x = dz * w
        taken = jac.update(dz, dG, w)
        assert taken == (not sparse or k < step_jacobian.MAX_RANK)
        if taken:
            J = (Jh + np.outer((dG - Jh @ dz) / (x @ x), x * w)) * (0.01 / h)


def test_the_loops_inverse_jacobian_in_product_form_follows_the_formed_one(monkeypatch):
    """Past DENSE_UP_TO the loops' ``J^-1`` is kept as ``H0 + A B^T`` (one sparse solve a
    product) instead of formed: its products follow the formed ``H``'s through Broyden's
    updates to rounding, start again from ``M``'s after LOOP_RANK of them, and a snapshot
    taken between updates restores the same products. Each update returns the next Newton
    step, ``-H r`` with ``H`` updated."""
    from types import SimpleNamespace
    from titop_fmu.cosim import loop
    from titop_fmu.cosim.loop import Sensitivities

    monkeypatch.setattr(loop, "LOOP_RANK", 4)
    rng = np.random.default_rng(11)
    n = 12
    M = _feedthrough(rng, n)
    st = SimpleNamespace(n_cin=n, unknowns=np.array([0, 1, 2, 4, 5, 7, 9, 10]),
                         layouts=[SimpleNamespace(rows=np.arange(i, i + 3), cin=np.arange(i + 3, i + 6) % n)
                                  for i in range(0, n, 3)])
    formed = Sensitivities(st)
    monkeypatch.setattr(loop, "DENSE_UP_TO", 0)
    product = Sensitivities(st)
    assert product.product and not formed.product
    H0 = -np.linalg.inv(np.eye(n) - M)[np.ix_(st.unknowns, st.unknowns)]
    for s in (formed, product):
        s.set_M(M.copy())
    nu = len(st.unknowns)
    snap = None
    for k in range(7):
        v = rng.standard_normal(nu)
        want = formed.inverse_times(v)
        assert np.abs(product.inverse_times(v) - want).max() <= 1e-12 * np.abs(want).max()
        if k == 0:
            assert np.abs(want - H0 @ v).max() <= 1e-12 * np.abs(want).max()
        if k == 2:
            snap, snap_v, snap_want = product.snapshot(), v, want
        r0, r = rng.standard_normal(nu), rng.standard_normal(nu)
        dz = formed.inverse_times(-r0)                 # a Newton step, then the residual r
        if k == loop.LOOP_RANK:     # the product form starts again from H0, without this pair
            formed.set_M(M.copy())
            step = formed.inverse_times(-r)
        else:
            step = formed.broyden(dz, r)
            assert np.abs(step - formed.inverse_times(-r)).max() <= 1e-12 * np.abs(step).max()     # -H r, H updated
        assert np.abs(product.broyden(dz, r) - step).max() <= 1e-12 * np.abs(step).max()
    product.restore(snap)
    assert np.abs(product.inverse_times(snap_v) - snap_want).max() <= 1e-12 * np.abs(snap_want).max()


def test_a_step_jacobian_far_from_its_inverse_s_step_is_inverted_again():
    """Where the inverse kept from another base step is too poor a preconditioner for its
    refinements to converge (the step twenty times longer, ``|J|`` from 0.09 to 1.8), the inverse is formed
    again at the new step: the solve is exact, and exact at that step from then on."""
    from titop_fmu.cosim.step_jacobian import StepJacobian

    rng = np.random.default_rng(7)
    n = 8
    P = rng.standard_normal((n, n))
    P *= 0.18 / np.abs(P).sum(axis=1).max()                # |J| = 0.09 at h = 0.01, 1.8 at 0.2
    jac = StepJacobian(n)
    jac.reset(P, type("Sens", (), {"solve": staticmethod(lambda X: X)}), h=0.01)
    r = rng.standard_normal(n)
    jac.correction(0.01, r)
    assert jac.jac[2] == 0.01
    exact = np.linalg.solve(np.eye(n) - 0.5 * P * 20, r)
    assert np.allclose(jac.correction(0.2, r), exact, rtol=1e-12, atol=0)
    assert jac.jac[2] == 0.2


@pytest.mark.slow
def test_a_system_that_fails_its_analysis_leaves_no_worker_running(monkeypatch):
    """The worker processes start before the analysis (their start-up overlaps it): when the
    analysis fails, they end with it."""
    from titop_fmu.cosim import engine
    from titop_fmu.errors import ConnectionError_
    from titop_fmu.scenarios import generate
    from titop_fmu.titop import TitopUnits
    started = []

    class Recorded(engine.RemoteStepper):
        def __init__(self, key):
            super().__init__(key)
            started.append(self)

    monkeypatch.setattr(engine, "RemoteStepper", Recorded)
    cs = generate.cosystem(3)
    cs.add("loose", "revolute_c0")                      # its parent port connected to nothing
    with pytest.raises(ConnectionError_, match="loose"):
        build(cs, TitopUnits("inprocess"), Options(workers=2))
    assert len(started) == 1 and started[0].proc.poll() is not None


@pytest.mark.slow
def test_an_observer_failing_while_the_workers_compute_stops_the_run_cleanly():
    """The accepted intervals' observed values are computed while the workers compute the
    next interval: an observer that raises there stops the run with its error, once the
    workers have answered (the protocol stays in step: the run's units terminate)."""
    from titop_fmu.scenarios import generate
    from titop_fmu.titop import TitopUnits
    calls = []

    def observe(rec):
        calls.append(1)
        if len(calls) == 20:
            raise ValueError("observer failed")
        return rec

    cs = generate.cosystem(2)
    with pytest.raises(ValueError, match="observer failed"):
        simulate(cs, 0.5, TitopUnits("inprocess"), output_interval=0.01,
                 options=Options(workers=2, observe=observe))
    res = simulate(cs, 0.05, TitopUnits("inprocess"), output_interval=0.01, options=Options(workers=2))
    ref = simulate(cs, 0.05, TitopUnits("inprocess"), output_interval=0.01, options=Options(workers=0))
    assert np.array_equal(res.values, ref.values) and res.stats.error_estimate == ref.stats.error_estimate > 0


def test_cyclic_components_are_scipys_strong_components():
    """The loops' strongly connected components (Tarjan, without scipy) are the ones scipy's
    csgraph finds, on random graphs sparse and dense, with self-loops, and on a long chain of
    two-node cycles deeper than Python's recursion limit."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    from titop_fmu.cosim.cycles import _cyclic_components

    def reference(succ):
        rows = [k for k, s in enumerate(succ) for _ in s]
        cols = [m for s in succ for m in s]
        g = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(succ), len(succ)))
        _, label = connected_components(g, directed=True, connection="strong")
        comps = {}
        for k, c in enumerate(label):
            comps.setdefault(int(c), []).append(k)
        return sorted([c for c in comps.values() if len(c) > 1 or c[0] in succ[c[0]]], key=lambda c: c[0])

    rng = np.random.default_rng(4)
    for n, p in [(1, 0.5), (5, 0.2), (30, 0.03), (30, 0.1), (200, 0.01), (60, 0.3)]:
        for _ in range(20):
            succ = [sorted(set(int(m) for m in np.flatnonzero(rng.random(n) < p))) for _ in range(n)]
            assert _cyclic_components(succ) == reference(succ)
    n = 6000                                            # 0 <-> 1 -> 2 <-> 3 -> ... : 3000 loops
    succ = [[k + 1] if k % 2 == 0 else ([k - 1, k + 1] if k + 1 < n else [k - 1]) for k in range(n)]
    assert _cyclic_components(succ) == reference(succ) and len(_cyclic_components(succ)) == n // 2


@pytest.mark.slow
def test_a_small_system_runs_without_scipy(tmp_path):
    """Up to 256 coupling inputs the master needs numpy only (its loops found by Tarjan's
    algorithm, its solves dense): a run in a process that cannot import scipy."""
    import textwrap
    from fmu_fixtures import run_without_scipy
    words = run_without_scipy(textwrap.dedent("""
        from titop_fmu.cosim import Options, simulate
        from titop_fmu.scenarios import generate
        from titop_fmu.titop import TitopUnits
        res = simulate(generate.cosystem(3), 0.1, TitopUnits("inprocess"), options=Options(workers=0))
        print(res.stats.macro_steps > 0, "scipy" in sys.modules)
    """), tmp_path)
    assert words[-2:] == ["True", "False"]


def test_dense_output_reproduces_quintics_between_mesh_points():
    """The dense output (interval by interval, several output times at once) on a quintic
    polynomial: exact to rounding between mesh points from the values alone (Lagrange, degree
    5) and from values and derivatives (Hermite), on an uneven mesh with output times on and
    off its points; the Lagrange weights at several times are those at each time, bit for bit."""
    from titop_fmu.cosim.dense import dense
    from titop_fmu.cosim.numerics import lagrange_weights
    rng = np.random.default_rng(7)
    c = rng.standard_normal((6, 4))                       # four columns, y = sum_q c_q t^q
    mesh = np.concatenate([[0.0], np.cumsum(rng.uniform(0.05, 0.3, 25))])
    grid = np.union1d(np.linspace(0.0, mesh[-1], 301), mesh[::4])

    def y(t, d=0):
        """The d-th time derivative at the times ``t``, ``(len(t), 4)``."""
        t = np.asarray(t, dtype=float)[:, None]
        return sum(math.perm(q, d) * c[q] * t ** (q - d) for q in range(d, 6))
    exact = y(grid)
    assert np.abs(dense(mesh, y(mesh), grid) - exact).max() <= 1e-11 * np.abs(exact).max()
    with_d = np.stack([y(mesh), y(mesh, 1), y(mesh, 2)], axis=1)
    assert np.abs(dense(mesh, with_d, grid) - exact).max() <= 1e-11 * np.abs(exact).max()
    t = rng.uniform(-1.0, 2.0, 9)
    W = lagrange_weights(mesh[3:9], t)
    assert all(np.array_equal(W[i], lagrange_weights(mesh[3:9], t[i])) for i in range(len(t)))
