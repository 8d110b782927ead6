"""Cost of the FMI calls of each TITOP FMU through FMPy (median microseconds per call).

    python benchmarks/fmu_calls.py [--kind pythonfmu|standalone|both] [--dir fmus]
                                   [--standalone-dir DIR] [--repeat 200] [--step 0.01]

Builds the FMUs of the kind asked for (``pythonfmu``, the default; ``standalone``, C only;
``both``, a row of each per FMU, in one run, and their ratio) into a temporary folder (or
uses ``--dir``, ``--standalone-dir``), then, per FMU, after initialization with the default
parameters, times:

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
* ``getFMUstate`` / ``setFMUstate``: save and restore of the complete state;
* ``P standard`` / ``P vendor``: what one step-sensitivity measurement costs a
  unit, one step tried per input from a saved state (all inputs held moved, the
  outputs read with the inputs set back): by the standard calls (``setFMUstate``,
  ``setReal``, ``doStep``, ``setReal``, ``getReal`` per step) and by one call of
  the vendor function ``titopGetTrialSteps``;
* ``M standard`` / ``M vendor``: the directional derivatives of all outputs along
  every acceleration-level input, one ``fmi2GetDirectionalDerivative`` per column
  and one call of the vendor function ``titopGetDirectionalDerivatives``.

Each figure is the median over ``--repeat`` calls, in the current Python
process (the FMU then runs in this interpreter, as with any FMPy host).
"""

import argparse
import ctypes
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
        row.update(vendor_rows(fmu, md, ins, outs, acc, h, repeat, rng))
        state = fmu.getFMUstate()
        row["getFMUstate"] = median_us(lambda: fmu.freeFMUstate(fmu.getFMUstate()), repeat)
        row["setFMUstate"] = median_us(lambda: fmu.setFMUstate(state), repeat)
        fmu.freeFMUstate(state)
        fmu.terminate()
    finally:
        fmu.freeInstance()
    return row


def vendor_rows(fmu, md, ins, outs, acc, h, repeat, rng):
    """The ``P`` and ``M`` columns (see the module docstring), NaN without inputs or outputs."""
    if not ins or not outs:
        return dict.fromkeys(["P standard", "P vendor", "M standard", "M vendor"], float("nan"))
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    trial = ctypes.CFUNCTYPE(ctypes.c_int, vp, ctypes.c_double, ctypes.c_double, vp, sz, sz, vp, vp, vp, sz, vp)(
        ("titopGetTrialSteps", fmu.dll))
    many = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, sz, vp, sz, sz, vp, vp)(("titopGetDirectionalDerivatives", fmu.dll))
    n = len(ins)
    end = np.array(fmu.getReal(ins))
    held = end[None, :] + 1e-4 * np.eye(n)                     # trial after trial
    in_vr, out_vr, acc_vr = (np.array(v, dtype=np.uint32) for v in (ins, outs, acc))
    values = np.empty((n, len(outs)))
    t = 1.0
    saved = fmu.getFMUstate()

    def standard_P():
        for j in range(n):
            fmu.setFMUstate(saved)
            fmu.setReal(ins, list(held[j]))
            fmu.doStep(t, h)
            fmu.setReal(ins, list(end))
            values[j] = fmu.getReal(outs)
        fmu.setFMUstate(saved)

    def vendor_P():
        assert trial(fmu.component, t, h, in_vr.ctypes.data, n, n, held.ctypes.data, end.ctypes.data,
                     out_vr.ctypes.data, len(outs), values.ctypes.data) == 0

    seeds = np.eye(len(acc))
    dv = np.empty((len(acc), len(outs)))

    def standard_M():
        for j in range(len(acc)):
            fmu.getDirectionalDerivative(outs, acc, list(seeds[j]))

    def vendor_M():
        assert many(fmu.component, out_vr.ctypes.data, len(outs), acc_vr.ctypes.data, len(acc), len(acc),
                    seeds.ctypes.data, dv.ctypes.data) == 0

    rows = {"P standard": median_us(standard_P, max(5, repeat // 10)),
            "P vendor": median_us(vendor_P, max(5, repeat // 10))}
    rows["M standard"] = median_us(standard_M, max(5, repeat // 10)) if acc else float("nan")
    rows["M vendor"] = median_us(vendor_M, max(5, repeat // 10)) if acc else float("nan")
    fmu.freeFMUstate(saved)
    return rows


def fmus(kind, folder, tmp):
    """``{model identifier: path}`` of the FMUs of ``kind``, in ``folder`` or built into ``tmp``."""
    if folder:
        paths = sorted(Path(folder).glob("*.fmu"))
    elif kind == "standalone":
        from titop_fmu.fmu.standalone import build_all
        paths = build_all(Path(tmp) / kind)
    else:
        from titop_fmu.fmu.build import build_all
        paths = build_all(Path(tmp) / kind)
    if not paths:
        sys.exit(f"no FMU in {folder}")
    return {p.stem: p for p in paths}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=["pythonfmu", "standalone", "both"], default="pythonfmu",
                    help="the kind of FMUs timed (both: a row of each per FMU, and their ratio)")
    ap.add_argument("--dir", help="folder of built pythonfmu FMUs (default: build them into a temporary folder)")
    ap.add_argument("--standalone-dir", help="folder of built standalone FMUs (default: build them likewise)")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--step", type=float, default=0.01, help="communication step of doStep [s]")
    args = ap.parse_args()
    kinds = ["pythonfmu", "standalone"] if args.kind == "both" else [args.kind]
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: fmus(k, args.dir if k == "pythonfmu" else args.standalone_dir, tmp) for k in kinds}
        cols = ["setReal", "getReal", "getReal (cached)", "doStep", "dirDerivative", "getFMUstate", "setFMUstate",
                "P standard", "P vendor", "M standard", "M vendor"]
        print(f"median us per call through FMPy ({args.repeat} calls; doStep of {args.step:g} s; "
              "getReal after a setReal of every input, minus the setReal)")
        print(f"{'FMU':<24} {'kind':<10} {'in':>4} {'out':>4} " + " ".join(f"{c:>16}" for c in cols))
        for mid in sorted(paths[kinds[0]]):
            rows = {k: bench(paths[k][mid], args.repeat, args.step) for k in kinds}
            for k, r in rows.items():
                print(f"{mid:<24} {k:<10} {r['inputs']:>4} {r['outputs']:>4} "
                      + " ".join(f"{r[c]:>16.1f}" for c in cols))
            if len(rows) == 2:
                a, b = rows.values()
                print(f"{mid:<24} {'ratio':<10} {'':>4} {'':>4} "
                      + " ".join(f"{a[c] / b[c]:>16.1f}" for c in cols))


if __name__ == "__main__":
    main()
