"""The right-hand side of a flexible body against Exudyn's ``ObjectFFRFreducedOrder`` with the
same modal data, how its cost grows with the number of modes and of flexible bodies, and the
spin-up beam's run (docs/flexible-bodies.md; docs/benchmarks.md).

    python benchmarks/flexible.py [--modes 2 5 10 20 40] [--bodies 1 2 4 8] [--repeats 5]
                                  [--steps 2000] [--mesh 20 2 2] [--spinup]

**The same data.** A steel bar (1 m x 60 x 40 mm) meshed in 20-node bricks
(``titop_fmu.fe.solid``), read by Exudyn's ``FEMinterface`` and clamped at its end face
``x = 0``; its first ``n`` clamped modes ``X`` are the mode basis of both:

* Exudyn: ``ObjectFFRFreducedOrderInterface(fem)`` with ``fem.modeBasis = X`` (Exudyn computes
  its reduced mass and stiffness and its inertia invariants from the mesh's matrices itself),
  ``AddObjectFFRFreducedOrder``: one free-floating body, a rigid-body node in Tait-Bryan angles
  (``RotationRxyz``, an ODE without constraints, so that an explicit solver runs it) and ``n``
  modal coordinates, no gravity, no damping;
* ours: ``titop_fmu.fe.exudyn.modal_data`` of the same mesh and clamp (the same ``n`` modes),
  a ``FloatingBase`` carrying that ``FlexibleBody`` (the mesh has no geometric stiffness, so the
  body has none, as Exudyn's), no port.

Before timing, both give the same accelerations at one state (a translational and a spin
rate, random modal coordinates and rates): the largest difference of the frame's and the modal
accelerations relative to their largest is printed (the spin is about one axis: there Exudyn's
angle accelerations are the angular acceleration, with no term of the angles' rates).

**What is timed** (median of ``--repeats`` rounds, both sides alternated in each round, BLAS on
one thread):

* Exudyn's right-hand side: a fixed-step explicit run (``SolveDynamic``, RK44, no output, no
  solution file), whose every stage evaluates the body's mass matrix and forces and solves for
  the accelerations; the cost of one stage is ``(T(2 S) - T(S)) / (4 S)`` with ``S = --steps``
  (the difference removes the run's set-up);
* ours in C: one step of the kernel's Dormand-Prince integrator (``titop_step``, the one the
  FMUs run) taken whole (tolerances so loose that the step is accepted), which evaluates the
  right-hand side 7 times in C: the time of a call / 7; both are thus a stage of an explicit
  integrator run in compiled code, with its vector updates;
* ours from Python: one call of ``System.compiled_rhs()`` (what ``System.simulate`` calls: the
  C kernel through ctypes, the state copied in and out).

Printed per ``n``: the three costs, the ratio ours (C) / Exudyn, and ours in C with the beam
generator's data of the same ``n`` and stiffening on (Simo's beam, a port at the tip: the
``K0`` terms not zero); then the exponent ``p`` of a least-squares fit ``cost ~ n^p`` over the
``n`` given and over ``n >= 10``. ``--bodies``: a rigid hub (floating base) carrying ``k``
welded flexible appendages (the beam generator's, 10 modes, stiffening on, a port at each tip),
the cost of one right-hand side in C per ``k`` and per appendage. ``--spinup``: the spin-up
beam (``examples/spinup_beam.toml``, 20 s) through ``titop-fmu simulate``: the run's wall time
and right-hand-side evaluations as the command prints them, and the whole command's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from titop_fmu.blocks import FlexibleBody, FloatingBase, RigidBody, WeldedBody
from titop_fmu.blocks.beam import beam_modal_data, section
from titop_fmu.cosim.numerics import single_threaded_blas
from titop_fmu.errors import ParameterWarning
from titop_fmu.fe.solid import box, matrices, write_abaqus
from titop_fmu.system import System

ROOT = Path(__file__).resolve().parents[1]
#: the bar: steel, 1 m along x, 60 mm (y) by 40 mm (z)
BAR = dict(length=1.0, width=0.06, height=0.04, E=2.1e11, nu=0.3, rho=7800.0)
#: Simo and Vu-Quoc's beam (examples/spinup_beam.toml)
SIMO = dict(length=10.0, EA=2.8e7, EIy=1.4e4, EIz=1.4e4, GJ=1.4e4, rhoA=1.2, rhoJ=6e-4)
#: the state both are compared at: velocity and spin of the frame (about z only, see the docstring)
V, W = np.array([0.1, 0.2, -0.3]), np.array([0.0, 0.0, 0.7])


def bar_fem(folder, nx, ny, nz):
    """Exudyn's ``FEMinterface`` of the bar in ``nx ny nz`` bricks, and its clamp nodes."""
    from exudyn.FEM import FEMinterface
    nodes, elements = box(BAR["length"], BAR["width"], BAR["height"], nx, ny, nz)
    M, K = matrices(nodes, elements, E=BAR["E"], nu=BAR["nu"], rho=BAR["rho"])
    inp, mass, stiffness = write_abaqus(folder, nodes, elements, M, K)
    fem = FEMinterface()
    with contextlib.redirect_stdout(io.StringIO()):
        fem.ImportFromAbaqusInputFile(str(inp))
        fem.ReadMassMatrixFromAbaqus(str(mass))
        fem.ReadStiffnessMatrixFromAbaqus(str(stiffness))
    return fem, fem.GetNodesInPlane([0, 0, 0], [1, 0, 0])


def same_data(fem, clamp, n):
    """``(ours, exudyn)``: our floating flexible body and Exudyn's reduced-order body of the first
    ``n`` clamped modes of ``fem`` (each a :class:`System` / ``(mbs, SimulationSettings)``)."""
    import exudyn as exu
    from exudyn.FEM import ObjectFFRFreducedOrderInterface
    from titop_fmu.fe import exudyn as importer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        data = importer.modal_data(fem, clamp, [], n)
    x, M, K = importer._mesh(fem)
    omega, X = importer._clamped_modes(K, M, importer._clamp(clamp, x), n)   # the same modes, for Exudyn
    assert np.allclose(omega, data.omega, rtol=1e-12) and np.allclose(x[clamp].mean(axis=0), 0.0, atol=1e-12)
    fem.modeBasis = {"matrix": X, "type": "NormalModes"}
    with contextlib.redirect_stdout(io.StringIO()):
        cms = ObjectFFRFreducedOrderInterface(fem, rigidBodyNodeType="NodeType.RotationRxyz")
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    cms.AddObjectFFRFreducedOrder(mbs)           # its frame at the mesh's origin: P, the clamp face's centre
    mbs.Assemble()
    ours = System()
    ours.add("bar", FloatingBase(FlexibleBody(data, stiffening=False), gravity=[0, 0, 0]))
    ours.set_input("bar.ext.w", np.zeros(6))
    return ours, (sc, mbs)


def settings(steps, stop=1e-4):
    import exudyn as exu
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = steps
    s.timeIntegration.endTime = stop
    s.timeIntegration.verboseMode = 0
    s.solution.file.write = False
    s.solution.sensors.writePeriod = 1e9
    s.timeIntegration.explicit.computeEndOfStepAccelerations = False
    return s


def state(n, seed=1):
    rng = np.random.default_rng(seed)
    return 1e-6 * rng.standard_normal(n), 1e-4 * rng.standard_normal(n)


def compared_state(ours, n):
    """Our state vector at the state both are compared and timed at."""
    y = ours.initial_state()
    y[0:3], y[3:6] = V, W
    y[13:13 + n], y[13 + n:] = state(n)
    return y


def accelerations_differ(ours, exudyn, n):
    """The largest difference of the frame's and the modal accelerations of both at one state,
    relative to the largest of them."""
    import exudyn as exu
    eta, etad = state(n)
    y = compared_state(ours, n)
    yd = ours.compiled_rhs()(0.0, y)
    mine = np.concatenate([yd[0:6], yd[13 + n:]])
    _, mbs = exudyn
    solver = exu.MainSolverExplicit()
    s = settings(1)
    s.timeIntegration.solverType = exu.DynamicSolverType.RK44
    solver.InitializeSolver(mbs, s)
    current = exu.ConfigurationType.Current
    mbs.systemData.SetODE2Coordinates(list(np.concatenate([np.zeros(6), eta])), configuration=current)
    mbs.systemData.SetODE2Coordinates_t(list(np.concatenate([V, W, etad])), configuration=current)
    solver.ComputeMassMatrix(mbs)
    solver.ComputeODE2RHS(mbs)
    qtt = np.linalg.solve(np.array(solver.GetSystemMassMatrix()), np.array(solver.GetSystemResidual())[:6 + n])
    # Exudyn's frame: the inertial acceleration of P and the angles' accelerations (= omegadot at
    # zero angles, one spin axis); ours: the rates of the body-frame components, vdot = a - w x v
    theirs = np.concatenate([qtt[0:3] - np.cross(W, V), qtt[3:6], qtt[6:]])
    return np.abs(mine - theirs).max() / np.abs(theirs).max()


def exudyn_stage(exudyn, steps):
    """The wall time [s] of one RK44 stage (see the docstring) in one measurement."""
    import exudyn as exu
    _, mbs = exudyn
    t = []
    for k in (steps, 2 * steps):
        s = settings(k)
        t0 = time.perf_counter()
        mbs.SolveDynamic(s, solverType=exu.DynamicSolverType.RK44)
        t.append(time.perf_counter() - t0)
    return (t[1] - t[0]) / (4 * steps)


def ours_in_c(system, y=None, calls=200):
    """The wall time [s] of one right-hand side in C at ``y`` (default: the initial state): a
    whole ``titop_step`` (7 evaluations) / 7."""
    tree = system.plan().kernel()._tree
    y = system.initial_state() if y is None else y
    h = 1e-6
    tree.step(y, h, 1e30, 1e30, 0.0)
    t0 = time.perf_counter()
    for _ in range(calls):
        _, _, code = tree.step(y, h, 1e30, 1e30, 0.0)
    assert code == 0
    return (time.perf_counter() - t0) / calls / 7


def ours_from_python(system, y, calls=500):
    """The wall time [s] of one call of ``System.compiled_rhs()`` at ``y``."""
    f = system.compiled_rhs()
    f(0.0, y)
    t0 = time.perf_counter()
    for _ in range(calls):
        f(0.0, y)
    return (time.perf_counter() - t0) / calls


def beam_body(n):
    return beam_modal_data([section(SIMO)], n, elements=max(20, n), ports=[SIMO["length"]])


def beam_system(n):
    """Ours with the beam generator's data of ``n`` modes, stiffening on, a port at the tip."""
    s = System()
    s.add("beam", FloatingBase(FlexibleBody(beam_body(n), True, *state(n)), gravity=[0, 0, 0], twist0=[0, 0, 0, 0, 0, 0.7]))
    s.set_input("beam.ext.w", np.zeros(6))
    s.set_input("beam.c1.w", np.zeros(6))
    return s


def hub_system(k, n=10):
    """A rigid hub (floating base) with ``k`` welded flexible appendages of ``n`` modes."""
    angles = 2 * np.pi * np.arange(k) / k
    ports = [[np.cos(a), np.sin(a), 0.0] for a in angles]
    s = System()
    s.add("hub", FloatingBase(RigidBody(100.0, np.diag([50.0, 50.0, 80.0]), children=ports), gravity=[0, 0, 0],
                              twist0=[0, 0, 0, 0, 0, 0.5]))
    data = beam_body(n)
    for i, a in enumerate(angles):
        s.add(f"wing{i + 1}", WeldedBody(FlexibleBody(data, True, *state(n, seed=i)), gravity=[0, 0, 0],
                                          mount=[0.0, 0.0, a]))
        s.link(f"hub.c{i + 1}", f"wing{i + 1}.p")
        s.set_input(f"wing{i + 1}.c1.w", np.zeros(6))
    s.set_input("hub.ext.w", np.zeros(6))
    return s


def exponent(ns, costs, least=1):
    keep = [i for i, n in enumerate(ns) if n >= least]
    if len(keep) < 2:
        return float("nan")
    return float(np.polyfit(np.log([ns[i] for i in keep]), np.log([costs[i] for i in keep]), 1)[0])


def spinup(repeats):
    """The spin-up beam through ``titop-fmu simulate``: medians of the run's wall time, its
    evaluations and the whole command's wall time."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "titop_fmu.cli", "simulate", "examples/spinup_beam.toml",
                                  "--out", str(Path(tmp) / "spin.csv")], cwd=ROOT, check=True, capture_output=True,
                                 text=True)
            out = out.stdout + out.stderr
            whole = time.perf_counter() - t0
            m = re.search(r"in ([0-9.]+) s wall, ([0-9]+) right-hand-side", out)
            runs.append((float(m.group(1)), int(m.group(2)), whole))
    return [statistics.median(r[i] for r in runs) for i in range(3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", type=int, nargs="+", default=[2, 5, 10, 20, 40])
    ap.add_argument("--bodies", type=int, nargs="*", default=[1, 2, 4, 8])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000, help="RK44 steps of Exudyn's shorter run")
    ap.add_argument("--mesh", type=int, nargs=3, default=[20, 2, 2], metavar=("NX", "NY", "NZ"),
                    help="bricks of the bar along x, y, z")
    ap.add_argument("--spinup", action="store_true", help="also time the spin-up beam's run")
    args = ap.parse_args()
    with single_threaded_blas(), tempfile.TemporaryDirectory() as tmp:
        fem, clamp = bar_fem(Path(tmp), *args.mesh)
        print(f"the bar: {len(fem.GetNodePositionsAsArray())} nodes; the medians of {args.repeats} rounds [us]")
        print(f"{'n':>3} {'same acc.':>10} {'Exudyn':>8} {'ours C':>8} {'ours/Exudyn':>11} {'ours Python':>11}"
              f" {'ours C, beam + K0':>17}")
        rows = []
        for n in args.modes:
            ours, exudyn = same_data(fem, clamp, n)
            beam = beam_system(n)
            differ = accelerations_differ(ours, exudyn, n)
            y = compared_state(ours, n)
            t = {"exudyn": [], "c": [], "py": [], "beam": [], "ratio": []}
            for _ in range(args.repeats):
                t["exudyn"].append(exudyn_stage(exudyn, args.steps))
                t["c"].append(ours_in_c(ours, y))
                t["py"].append(ours_from_python(ours, y))
                t["beam"].append(ours_in_c(beam))
                t["ratio"].append(t["c"][-1] / t["exudyn"][-1])
            m = {k: statistics.median(v) for k, v in t.items()}
            rows.append((n, m))
            print(f"{n:3d} {differ:10.1e} {m['exudyn'] * 1e6:8.2f} {m['c'] * 1e6:8.2f} {m['ratio']:11.2f}"
                  f" {m['py'] * 1e6:11.2f} {m['beam'] * 1e6:17.2f}", flush=True)
        ns = [n for n, _ in rows]
        for key, label in (("exudyn", "Exudyn"), ("c", "ours C"), ("beam", "ours C, beam + K0")):
            costs = [m[key] for _, m in rows]
            print(f"cost ~ n^p, {label}: p = {exponent(ns, costs):.2f} over n = {ns[0]}..{ns[-1]},"
                  f" {exponent(ns, costs, 10):.2f} over n >= 10")
        if args.bodies:
            print("a hub with k appendages of 10 modes (stiffening on): one right-hand side in C [us]")
            base = None
            for k in args.bodies:
                c = statistics.median(ours_in_c(hub_system(k)) for _ in range(args.repeats))
                base = base or c / k
                print(f"  k = {k}: {c * 1e6:.2f} us, {c / k * 1e6:.2f} per appendage ({c / k / base:.2f} of k = "
                      f"{args.bodies[0]}'s)", flush=True)
    if args.spinup:
        wall, nfev, whole = spinup(args.repeats)
        print(f"spin-up beam, 20 s (titop-fmu simulate examples/spinup_beam.toml): run {wall:.2f} s, {nfev} "
              f"right-hand sides ({wall / nfev * 1e6:.1f} us each, DOP853 in Python); the whole command {whole:.2f} s")


if __name__ == "__main__":
    main()
