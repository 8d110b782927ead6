"""Write the Pinocchio reference trajectory of the balloon scenario.

Usage: python validation/make_reference.py [--stop 20] [--dt 0.01]

Outputs (next to this script):
  reference/balloon_pinocchio.csv              t,x,y,z,phi,theta,psi,p,theta1,theta2
  reference/balloon_pinocchio.provenance.json  tools, versions, integrator, parameters
"""

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pinocchio  # noqa: E402

from validation.engines import pinocchio_balloon as pb  # noqa: E402

RTOL = ATOL = 1e-12


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=20.0, help="final time [s]")
    ap.add_argument("--dt", type=float, default=0.01, help="output step [s]")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    out = pb.simulate(t_stop=args.stop, dt=args.dt, rtol=RTOL, atol=ATOL)
    wall = time.perf_counter() - start

    ref = HERE / "reference"
    ref.mkdir(exist_ok=True)
    csv = ref / "balloon_pinocchio.csv"
    table = np.column_stack([out[k] for k in pb.OUTPUTS])
    np.savetxt(csv, table, delimiter=",", header=",".join(pb.OUTPUTS), comments="",
               fmt="%.17g")

    provenance = {
        "file": csv.name,
        "generator": "validation/make_reference.py (validation/engines/pinocchio_balloon.py)",
        "tool": "pinocchio (PyPI 'pin')",
        "pinocchio_version": pinocchio.__version__,
        "numpy_version": np.__version__,
        "scipy_version": scipy.__version__,
        "python_version": sys.version.split()[0],
        "dynamics": "pinocchio.aba (free-flyer + prismatic-unaligned + 2 revolute-unaligned), "
                    "buoyancy as external force on the free-flyer joint in its local frame",
        "integrator": "scipy.integrate.solve_ivp, method DOP853, t_eval on the output grid",
        "rtol": RTOL,
        "atol": ATOL,
        "t_stop": args.stop,
        "dt": args.dt,
        "samples": int(table.shape[0]),
        "wall_time_s": round(wall, 3),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "parameters": pb.DEFAULTS,
        "conventions": (
            "R_i inertial, y up, g = [0,-9.81,0]; x,y,z = [IB]_Ri of the balloon centre of "
            "mass B; phi,theta,psi are 3-2-1 Euler angles with P_b/i = Rz(psi) Ry(theta) "
            "Rx(phi), P_b/i columns = body axes in R_i, theta in [-pi/2,pi/2], phi,psi by "
            "atan2 (wrapped to (-pi,pi]); p slider position along the unit vector t; theta1, "
            "theta2 revolute angles (theta2 relative to pendulum 1), not wrapped; SI units, "
            "radians."
        ),
    }
    (ref / "balloon_pinocchio.provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    print(f"wrote {csv.relative_to(HERE.parent)} ({table.shape[0]} rows) in {wall:.2f} s")


if __name__ == "__main__":
    main()
