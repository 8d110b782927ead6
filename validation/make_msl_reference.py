#!/usr/bin/env python3
"""Write the Modelica MultiBody reference trajectory of the balloon scenario.

Usage (the MSL found through MODELICAPATH, or --msl DIR):

    python validation/make_msl_reference.py [--msl DIR]

Compiles and simulates validation/modelica/BalloonSystem.mo with
titop_fmu.modelica (rumoca, solver rk-like, rtol = atol = 1e-12), 0 to 20 s
every 0.01 s, and writes next to this script:

  reference/balloon_msl.csv              t,x,y,z,phi,theta,psi,p,theta1,theta2 (the grid
                                         and columns of balloon_pinocchio.csv)
  reference/balloon_msl.provenance.json  compiler and version, MSL version, solver,
                                         tolerances, times, the command, the max
                                         difference against balloon_pinocchio.csv

Exit 0 when written and within 1e-9 of the Pinocchio reference, 1 when the
difference is larger (nothing written), 2 when no compiler or MSL is found.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from titop_fmu import modelica  # noqa: E402
from titop_fmu.cosim.numerics import wrap  # noqa: E402

MODEL = HERE / "modelica" / "BalloonSystem.mo"
REF = HERE / "reference"
COLUMNS = ("t", "x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2")
EULER = ("phi", "theta", "psi")
BOUND = 1e-9
COMMAND = "python validation/make_msl_reference.py  # with MODELICAPATH holding MSL 4.1.0"


def differences(a, b):
    """Max |a - b| per output column (Euler-angle differences wrapped to (-pi, pi])."""
    d = a[:, 1:] - b[:, 1:]
    for j, c in enumerate(COLUMNS[1:]):
        if c in EULER:
            d[:, j] = wrap(d[:, j])
    return dict(zip(COLUMNS[1:], np.abs(d).max(axis=0).tolist()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msl", help="folder holding the Modelica/ package (default: MODELICAPATH)")
    args = ap.parse_args(argv)
    reason = modelica.cli_unavailable_reason(args.msl)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    pin_csv = REF / "balloon_pinocchio.csv"
    pin = np.loadtxt(pin_csv, delimiter=",", skiprows=1)
    stop, dt = float(pin[-1, 0]), float(pin[1, 0] - pin[0, 0])
    res = modelica.simulate(MODEL, COLUMNS[1:], stop, dt, msl=args.msl)
    table = np.column_stack([res.t, res.values]) + 0.0         # no "-0" in the file
    if table.shape != pin.shape or np.max(np.abs(table[:, 0] - pin[:, 0])) > 1e-9:
        print(f"error: grid {table.shape} differs from {pin_csv.name} {pin.shape}", file=sys.stderr)
        return 1
    diff = differences(table, pin)
    worst = max(diff.values())
    print(f"{res.info['compiler']} {res.info['compiler_version']}, MSL {res.info['msl_version']}: "
          f"compile {res.info['compile_s']:.2f} s, simulate {res.info['simulate_s']:.2f} s; "
          f"max difference against {pin_csv.name} {worst:.2e}")
    if worst > BOUND:
        print(f"error: {worst:.2e} > {BOUND:g}: reference not written", file=sys.stderr)
        return 1
    csv = REF / "balloon_msl.csv"
    np.savetxt(csv, table, delimiter=",", header=",".join(COLUMNS), comments="", fmt="%.17g")
    info = res.info
    provenance = {
        "file": csv.name,
        "generator": "validation/make_msl_reference.py (titop_fmu/modelica.py)",
        "command": COMMAND,
        "model": "validation/modelica/BalloonSystem.mo (model BalloonSystem)",
        "tool": f"Modelica MultiBody (MSL {info['msl_version']}), {info['compiler']}",
        "compiler": info["compiler"],
        "version": info["compiler_version"],
        "msl_version": info["msl_version"],
        "integrator": f"{info['compiler']} solver {info['solver']!r}",
        "solver": info["solver"],
        "rtol": info["rtol"],
        "atol": info["atol"],
        "t_stop": stop,
        "dt": dt,
        "samples": int(table.shape[0]),
        "compile_time_s": info["compile_s"],
        "simulate_time_s": info["simulate_s"],
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "max_difference_vs_balloon_pinocchio": {"bound": BOUND, "max": worst, "per_column": diff},
        "conventions": "as balloon_pinocchio.provenance.json; Euler angles computed in the model "
                       "from P_b/i = transpose(balloon.frame_a.R.T) with the same formulas",
    }
    (REF / "balloon_msl.provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    print(f"wrote {csv.relative_to(HERE.parent)} ({table.shape[0]} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
