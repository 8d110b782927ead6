"""The cost of one linearization, against Pinocchio's analytic ABA derivatives.

    python benchmarks/linearize.py [--n 8 16 32 64] [--repeats 200] [--widths 8]

For the balloon at its hanging equilibrium and for chains of ``--n`` bodies on a floating
base (``titop_fmu.scenarios.generate.chain``, at their initial state of rest, the joints
at +-0.3 rad), in one process, alternately, the median of ``--repeats`` calls of:

* TITOP: ``Linearizer.at`` (:mod:`titop_fmu.linear`) on the forward-mode kernel (8 columns
  a call): ``A`` alone (no input), like Pinocchio's; ``A, B`` with every free input a
  column; ``A..D`` with every block output as outputs too (their columns come in the same
  kernel calls);
* Pinocchio: ``computeABADerivatives`` plus the same assembly of ``A`` (the springs,
  dampers and external wrench through ``M^-1``, ``[[0, 1], [ddq/dq, ddq/dv]]``): the
  Pinocchio twin of the same system (validation/engines/pinocchio_titop.py);

and their ratio. ``--widths`` also times the forward-mode kernel compiled with other
numbers of tangents per dual number (each compiled on first use).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from titop_fmu import dual  # noqa: E402
from titop_fmu.errors import ParameterWarning  # noqa: E402
from titop_fmu.kernel import plan_entries  # noqa: E402
from titop_fmu.linear import Linearizer  # noqa: E402
from titop_fmu.linear.coordinates import output_layout  # noqa: E402
from titop_fmu.linear.trim import trim  # noqa: E402
from titop_fmu.scenarios import balloon, generate  # noqa: E402


def median_time(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cases(ns):
    """``[(label, CoSystem, its state at rest)]``."""
    cs = balloon.system({"theta1_0": np.radians(5.0), "theta2_0": np.radians(-5.0)})
    out = [("balloon (equilibrium)", cs, trim(cs).state)]
    for n in ns:
        c = generate.cosystem(n, branching=1)
        out.append((f"chain of {n}", c, None))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--widths", type=int, nargs="*", default=[])
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    try:
        from validation.engines.pinocchio_titop import PinocchioTwin
    except ImportError:
        PinocchioTwin = None
        print("no Pinocchio (the crosscheck extra): TITOP only")
    rows = []
    for label, cs, state in cases(args.n):
        from titop_fmu.titop.monolithic import twin
        s = twin(cs)
        y = s.initial_state() if state is None else state
        a_only, ab = Linearizer(s, [], ()), Linearizer(s, None, ())
        outputs = [f"{b}.{p}" for (b, p) in output_layout(s)[0]]
        abcd = Linearizer(s, None, outputs)
        reps = max(5, args.repeats // max(1, len(y) // 20))
        t_a = median_time(lambda: a_only.at(y, outputs=False), reps)
        t_ab = median_time(lambda: ab.at(y, outputs=False), reps)
        t_abcd = median_time(lambda: abcd.at(y), reps)
        t_pin = float("nan")
        if PinocchioTwin is not None:
            tw = PinocchioTwin(cs)
            q, v = tw.configuration({n: y[s.state_slice(n)] for n in s.blocks if s.blocks[n].n_states})
            t_pin = median_time(lambda: tw.linearization(q, v), reps)
        rows.append((label, ab.coords.n, len(ab.inputs), len(abcd.outputs), t_a, t_ab, t_abcd, t_pin))
        for w in args.widths:
            tree = dual.DualTree(plan_entries(ab.system.plan()), 0, width=w)
            T = ab.coords.tangent(y)
            t_w = median_time(lambda: tree.evaluate(y, T), reps)
            print(f"{label}: the {ab.coords.n} state columns with {w} tangents per dual number: {t_w * 1e3:.3f} ms")
    print(f"{'system':>22} {'states':>6} {'inputs':>6} {'outputs':>7} {'A [ms]':>8} {'A,B [ms]':>9} "
          f"{'A..D [ms]':>9} {'Pinocchio A [ms]':>16} {'ratio A':>8} {'ratio A..D':>10}")
    for label, n, m, p, t_a, t_ab, t_abcd, t_pin in rows:
        print(f"{label:>22} {n:6d} {m:6d} {p:7d} {t_a * 1e3:8.3f} {t_ab * 1e3:9.3f} {t_abcd * 1e3:9.3f} "
              f"{t_pin * 1e3:16.4f} {t_a / t_pin:8.1f} {t_abcd / t_pin:10.1f}")
    chains = [(r[0], r[4], r[7]) for r in rows if r[0].startswith("chain")]
    for (a, ta, pa), (b, tb, pb) in zip(chains, chains[1:]):
        print(f"{b} / {a}: TITOP A {tb / ta:.2f}, Pinocchio {pb / pa:.2f}")


if __name__ == "__main__":
    main()
