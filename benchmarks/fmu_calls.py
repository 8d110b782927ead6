"""Cost of the FMI calls of each TITOP FMU through FMPy (median microseconds per call).

    python benchmarks/fmu_calls.py [--dir fmus] [--repeat 200] [--step 0.01]

Builds the FMUs into a temporary folder (or uses ``--dir``), then, per FMU,
after initialization with the default parameters, times:

* ``setReal``: all inputs in one call;
* ``getReal``: all outputs in one call (right after a ``setReal``, so the
  outputs are recomputed: the direct-feedthrough cost);
* ``getReal (cached)``: the same call again (nothing changed);
* ``doStep``: one communication step of ``--step`` s (internal DOPRI5 at the
  default tolerances);
* ``dirDerivative``: ``fmi2GetDirectionalDerivative`` of all outputs along one
  seed over the acceleration-level inputs (spatial accelerations ``*.m[1..6]``,
  wrenches, joint efforts: the loop's), what one exact column of the master's
  loop Jacobian costs (a finite-difference column costs a ``setReal`` and a
  ``getReal``; along twist and pose inputs the FMU differences its outputs);
* ``getFMUstate`` / ``setFMUstate``: save and restore of the complete state.

Each figure is the median over ``--repeat`` calls, in the current Python
process (the FMU then runs in this interpreter, as with any FMPy host).
"""

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
from fmpy import extract


def median_us(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def bench(path, repeat, h):
    md = read_model_description(str(path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    ins = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    fmu.instantiate()
    try:
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        rng = np.random.default_rng(0)
        values = [list(0.01 * rng.standard_normal(len(ins))) for _ in range(2)]
        k = [0]

        def set_inputs():
            k[0] ^= 1
            fmu.setReal(ins, values[k[0]])

        def set_get():
            set_inputs()
            fmu.getReal(outs)

        t = [0.0]

        def step():
            fmu.doStep(t[0], h)
            t[0] += h

        row = {"inputs": len(ins), "outputs": len(outs)}
        row["setReal"] = median_us(set_inputs, repeat) if ins else float("nan")
        row["getReal"] = (median_us(set_get, repeat) - row["setReal"]) if outs and ins else \
            (median_us(lambda: fmu.getReal(outs), repeat) if outs else float("nan"))
        row["getReal (cached)"] = median_us(lambda: fmu.getReal(outs), repeat) if outs else float("nan")
        row["doStep"] = median_us(step, repeat)
        acc = [v.valueReference for v in md.modelVariables if v.causality == "input" and (
            not re.fullmatch(r".*\.m\[\d+\]", v.name) or re.fullmatch(r".*\.m\[[1-6]\]", v.name))]
        seed = list(rng.standard_normal(len(acc)))
        row["dirDerivative"] = median_us(lambda: fmu.getDirectionalDerivative(outs, acc, seed), repeat) \
            if md.coSimulation.providesDirectionalDerivative and acc and outs else float("nan")
        state = fmu.getFMUstate()
        row["getFMUstate"] = median_us(lambda: fmu.freeFMUstate(fmu.getFMUstate()), repeat)
        row["setFMUstate"] = median_us(lambda: fmu.setFMUstate(state), repeat)
        fmu.freeFMUstate(state)
        fmu.terminate()
    finally:
        fmu.freeInstance()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="folder of built FMUs (default: build them into a temporary folder)")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--step", type=float, default=0.01, help="communication step of doStep [s]")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.dir:
            paths = sorted(Path(args.dir).glob("*.fmu"))
        else:
            from titop_fmu.fmu.build import build_all
            paths = sorted(build_all(tmp))
        if not paths:
            sys.exit(f"no FMU in {args.dir}")
        cols = ["setReal", "getReal", "getReal (cached)", "doStep", "dirDerivative", "getFMUstate", "setFMUstate"]
        print(f"median us per call through FMPy ({args.repeat} calls; doStep of {args.step:g} s; "
              "getReal after a setReal of every input, minus the setReal)")
        print(f"{'FMU':<24} {'in':>4} {'out':>4} " + " ".join(f"{c:>16}" for c in cols))
        for p in paths:
            r = bench(p, args.repeat, args.step)
            print(f"{p.stem:<24} {r['inputs']:>4} {r['outputs']:>4} "
                  + " ".join(f"{r[c]:>16.1f}" for c in cols))


if __name__ == "__main__":
    main()
