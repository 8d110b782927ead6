"""Cost of time signals and control units in the in-process engine, against the same system
with constant inputs, measured in one run (docs/closed-loops.md).

    python benchmarks/closed_loop.py [--repeats 5] [--stop 10]

The system is the balloon held by a gain (tests/control/systems/balloon_gain.toml); its
variants: the open loop with constant torques (the reference), the torques given by time
signals (expressions, a table), the loop closed by the gain, by two PIDs, and by a
discrete state-space controller sampled at 100 Hz. Prints per variant the cost of one
right-hand side (median of ``--repeats`` batches of 2000 calls) and of a whole run per
simulated second, each as a ratio to the reference.
"""

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from titop_fmu.cosim import systemfile
from titop_fmu.errors import ParameterWarning
from titop_fmu.titop import monolithic
from titop_fmu.titop.closedloop import ClosedLoop

ROOT = Path(__file__).resolve().parents[1]
GAIN = ROOT / "tests" / "control" / "systems" / "balloon_gain.toml"
OPEN = [c for c in ('connections = [', '    ["pendulum1.joint.q[3]", "K.u[1]"], ["pendulum1.joint.q[2]", "K.u[2]"],',
                    '    ["pendulum2.joint.q[3]", "K.u[3]"], ["pendulum2.joint.q[2]", "K.u[4]"],',
                    '    ["K.y[1]", "pendulum1.joint.tau"], ["K.y[2]", "pendulum2.joint.tau"],', ']')]
CONTROLLER = '[units.K]\nmodel = "gain"\nK = [[-20.0, -8.0, 0.0, 0.0], [0.0, 0.0, -15.0, -6.0]]\n'


def variants(folder: Path) -> dict:
    """``{name: system file}`` of the variants, written into ``folder``."""
    text = GAIN.read_text()
    plant = text.replace("\n".join(OPEN), "").replace(CONTROLLER, "")
    table = folder / "tau.csv"
    ts = np.linspace(0, 20, 401)
    np.savetxt(table, np.column_stack([ts, 0.3 * np.sin(ts), 0.2 * np.cos(ts)]), delimiter=",",
               header="t,tau1,tau2", comments="")
    out = {
        "constant torques (reference)": plant + '"pendulum1.joint.tau" = 0.3\n"pendulum2.joint.tau" = 0.2\n',
        "expression signals": plant + '"pendulum1.joint.tau" = "where(t < 5, 0.3*sin(t), 0)"\n'
                                      '"pendulum2.joint.tau" = "0.2*cos(t)"\n',
        "table signals (linear)": plant + '"pendulum1.joint.tau" = { table = "tau.csv", column = "tau1" }\n'
                                          '"pendulum2.joint.tau" = { table = "tau.csv", column = "tau2" }\n',
        "gain (4 -> 2)": text,
        "two PIDs": plant.replace("[simulation]", 'connections = [\n'
                                  '    ["pendulum1.joint.q[3]", "pid1.u"], ["pid1.y", "pendulum1.joint.tau"],\n'
                                  '    ["pendulum2.joint.q[3]", "pid2.u"], ["pid2.y", "pendulum2.joint.tau"],\n]\n\n'
                                  '[simulation]') + '\n[units.pid1]\nmodel = "pid"\nkp = -20\nki = -2\nkd = -8\n'
                                  'tf = 0.02\n\n[units.pid2]\nmodel = "pid"\nkp = -15\nki = -2\nkd = -6\ntf = 0.02\n',
        "discrete state space, 100 Hz": text.replace(CONTROLLER, '[units.K]\nmodel = "state_space"\nA = [[0.0]]\n'
                                                     'B = [[0.0, 0.0, 0.0, 0.0]]\nC = [[0.0], [0.0]]\n'
                                                     'D = [[-20.0, -8.0, 0.0, 0.0], [0.0, 0.0, -15.0, -6.0]]\n'
                                                     'sample_time = 0.01\n'),
    }
    paths = {}
    for i, (name, content) in enumerate(out.items()):
        path = folder / f"v{i}.toml"
        path.write_text(content.replace('q0 = "1 deg"', 'q0 = "5 deg"'))
        paths[name] = path
    return paths


def per_rhs(path, repeats) -> float:
    """Seconds per right-hand side of the variant's in-process engine (median of batches)."""
    loop = ClosedLoop(systemfile.read(path).system)
    loop.use_kernel("c")
    Y, d = loop.initial_state(), loop.initial_discrete()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for k in range(2000):
            loop.evaluate(0.001 * k, Y, d)
        times.append((time.perf_counter() - t0) / 2000)
    return statistics.median(times)


def plant_alone(path, repeats) -> float:
    """Seconds per right-hand side of the same plant as a plain monolithic twin (no closed-loop
    machinery): what the reference variant costs outside :class:`ClosedLoop`."""
    system = monolithic.twin(systemfile.read(path).system)
    rhs, y = system.compiled_rhs(), system.initial_state()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for k in range(2000):
            rhs(0.001 * k, y)
        times.append((time.perf_counter() - t0) / 2000)
    return statistics.median(times)


def per_second(path, stop, repeats) -> tuple:
    """``(seconds of wall per simulated second, right-hand sides)`` of a whole run (median)."""
    cs = systemfile.read(path).system
    walls = []
    for _ in range(repeats):
        tr, _ = monolithic.run(cs, stop, 0.01, 1e-10, 1e-10)
        walls.append(tr.wall)
    return statistics.median(walls) / stop, tr.nfev


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stop", type=float, default=10.0)
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    with tempfile.TemporaryDirectory() as d:
        rows = []
        paths = variants(Path(d))
        alone = plant_alone(next(iter(paths.values())), args.repeats)
        for name, path in paths.items():
            rhs = per_rhs(path, args.repeats)
            wall, nfev = per_second(path, args.stop, args.repeats)
            rows.append((name, rhs, wall, nfev))
    ref_rhs, ref_wall = rows[0][1], rows[0][2]
    print(f"the balloon, in process, C kernel, rtol 1e-10, {args.stop:g} s, median of {args.repeats}")
    print(f"{'variant':32s} {'per RHS':>10s} {'ratio':>6s} {'wall per s':>11s} {'ratio':>6s} {'RHS calls':>9s}")
    print(f"{'the plant alone (System)':32s} {alone * 1e6:8.1f}us {alone / ref_rhs:6.2f}")
    for name, rhs, wall, nfev in rows:
        print(f"{name:32s} {rhs * 1e6:8.1f}us {rhs / ref_rhs:6.2f} {wall * 1e3:9.1f}ms {wall / ref_wall:6.2f} {nfev:9d}")


if __name__ == "__main__":
    main()
