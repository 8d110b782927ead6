#!/usr/bin/env python3
"""Compare a TITOP system with its Modelica MultiBody twin (one command).

    python validation/compare_twin.py examples/two_branch.toml validation/modelica/TwoBranch.mo
    python validation/compare_twin.py balloon                # BalloonSystem.mo vs titop_fmu.scenarios.balloon

Runs the system file's in-process monolithic twin (TITOP blocks, DOP853,
rtol = atol = 1e-12) and the Modelica model (:mod:`titop_fmu.modelica`,
rumoca ``rk-like`` at 1e-12, MSL from ``--msl`` or ``MODELICAPATH``) on the
same grid, and prints the error of every recorded output. Exit 0 when every
error is within ``--bound``, 1 when not, 2 when no Modelica compiler or MSL is
available (the reason on one line).

The twin's outputs are named after the scalars of the system file's ``record``
entries: ``"."`` and ``"[k]"`` become ``"_"`` and ``"_k"`` (``arm.joint.q[3]`` ->
``arm_joint_q_3``, ``arm.com.position`` -> ``arm_com_position_1`` .. ``_3``); see
validation/modelica/README.md. The model file is the
second argument, or the system file's ``modelica = "<path relative to the
system file>"`` key.

Error measure per column: ``max |a - b| / max(1, max |b|)``, i.e. absolute
for outputs of magnitude up to 1 (angles, metres near the origin), relative
for outputs that travel far; Euler-angle differences (motion-vector
components 16-18, the balloon's phi, theta, psi) are wrapped to (-pi, pi].

Attitude: where all three Euler angles of a body are recorded, the two
attitude matrices ``P_b/i`` rebuilt from them are compared too, by the angle
of ``P_twin^T P_titop`` (rad). Near gimbal lock (``theta`` close to +-90 deg)
``phi`` and ``psi`` are ill-conditioned (an attitude error ``e`` moves them by
about ``e / cos(theta)``) while the matrix is not; the closest approach to
lock is printed with it. Both are held to ``--bound``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from titop_fmu import modelica, validate  # noqa: E402
from titop_fmu.cosim import systemfile  # noqa: E402
from titop_fmu.cosim.numerics import wrap  # noqa: E402
from titop_fmu.scenarios import balloon  # noqa: E402
from titop_fmu.spatial import dcm_from_euler, rotation_vector  # noqa: E402,F401  (dcm_from_euler: for the tests)
from titop_fmu.titop import monolithic  # noqa: E402
from titop_fmu.titop.records import Records  # noqa: E402
from titop_fmu.titop.units import DEFAULT_FMU_KIND  # noqa: E402

BALLOON_MODEL = ROOT / "validation" / "modelica" / "BalloonSystem.mo"
DT = 0.01


def rotation_angle(P):
    """The angle of the rotation ``P`` (``|log P|``, accurate at every angle)."""
    return float(np.linalg.norm(rotation_vector(P)))


def balloon_columns():
    """The balloon's output names (``x, y, z, phi, theta, psi, p, theta1, theta2``)."""
    return tuple(balloon.COLUMNS[1:])


def balloon_columns_of(system, y):
    """The balloon's output columns at the states ``y`` of an in-process run."""
    return balloon.columns(system, y)


def balloon_inprocess(stop):
    """``(t, columns)`` of the in-process monolithic balloon (:func:`titop_fmu.validate.run_inprocess`)."""
    s, tr = validate.run_inprocess(stop)
    return tr.t, balloon.columns(s, tr.y)


def balloon_fmu(stop, fmu_dir=None, workers=2, fmu_kind=DEFAULT_FMU_KIND):
    """``(t, columns)`` of the balloon through the TITOP FMUs of ``fmu_kind`` and the master,
    default settings."""
    res = validate.run_fmu(stop, options=balloon.options(workers=workers), fmu_dir=fmu_dir, fmu_kind=fmu_kind)
    return res.t, res.values


def system_file_records(path):
    """The scalar outputs a system file records (its ``record`` list, each entry as its scalars:
    ``"link3.com.position"`` is ``link3.com.position[1]`` .. ``[3]``), read and checked by the
    project's reader."""
    return Records(systemfile.read(path).system).labels


# ---------------------------------------------------------------------------------------------------


def modelica_name(record_entry: str) -> str:
    """``"hub.c1.m[13]"`` -> ``"hub_c1_m_13"``: the twin's output for a recorded entry."""
    name = re.sub(r"\[(\d+)\]", r"_\1", record_entry).replace(".", "_")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"record entry {record_entry!r} has no Modelica name ({name!r})")
    return name


def is_euler_angle(record_entry: str) -> bool:
    """Motion-vector components 16-18 and a body's ``euler[1..3]`` are 3-2-1 Euler angles,
    wrapped to (-pi, pi]."""
    return bool(re.search(r"(\.m\[1[678]\]|\.euler\[[123]\])$", record_entry))


def euler_triples(names):
    """``[(label, (i_phi, i_theta, i_psi))]``: the columns holding a body's three Euler angles,
    ``<x>.m[16..18]`` or ``<body>.euler[1..3]`` of a system file's records, or the balloon's
    ``phi, theta, psi``."""
    names = list(names)
    out = []
    if all(a in names for a in ("phi", "theta", "psi")):
        out.append(("phi, theta, psi", tuple(names.index(a) for a in ("phi", "theta", "psi"))))
    for n in names:
        m = re.fullmatch(r"(.+)\.(m\[16\]|euler\[1\])", n)
        if not m:
            continue
        first, k0 = (16, 17, 18), "m[{}]"
        if m[2].startswith("euler"):
            first, k0 = (1, 2, 3), "euler[{}]"
        labels = [f"{m[1]}.{k0.format(k)}" for k in first]
        if all(x in names for x in labels):
            out.append((f"{m[1]}.{k0.format(f'{first[0]}..{first[2]}')}", tuple(names.index(x) for x in labels)))
    return out


def attitude_errors(names, a, b):
    """``{label: (max angle of P(a)^T P(b) [rad], min |90 deg - |theta_b|| [deg], its time index)}``
    for every body whose three Euler angles are columns of ``a`` and ``b`` (same grid)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    out = {}
    for label, idx in euler_triples(names):
        ea, eb = a[:, list(idx)], b[:, list(idx)]
        err = [rotation_angle(dcm_from_euler(x).T @ dcm_from_euler(y)) for x, y in zip(ea, eb)]
        to_lock = np.degrees(np.pi / 2 - np.abs(eb[:, 1]))
        k = int(np.argmin(to_lock))
        out[label] = (max(err), float(to_lock[k]), k)
    return out


def twin_model_of(system_path):
    """The ``modelica`` key of a system file (path relative to the file), or None."""
    return systemfile.read(system_path).twin


def column_errors(a, b, angles):
    """``(absolute, scaled)`` max error per column of ``a`` against ``b`` (same grid);
    ``scaled`` divides by ``max(1, max |b|)``; ``angles`` masks the columns wrapped to (-pi, pi]."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    d = a - b
    angles = np.asarray(angles, bool)
    d[:, angles] = wrap(d[:, angles])
    absolute = np.abs(d).max(axis=0)
    return absolute, absolute / np.maximum(1.0, np.abs(b).max(axis=0))


def compare_system_file(path, model_file=None, stop=None, msl=None, rtol=modelica.RTOL):
    """Run both (the Modelica run at ``rtol = atol = rtol``); ``{"names", "t", "titop", "modelica",
    "absolute", "scaled", "info"}``."""
    path = Path(path)
    sf = systemfile.read(path)
    model_file = model_file or sf.twin
    if model_file is None:
        raise ValueError(f"{path}: no Modelica twin given (second argument or a 'modelica' key)")
    records = Records(sf.system).labels
    stop = float(sf.simulation.get("stop", 10.0)) if stop is None else stop
    names = [modelica_name(r) for r in records]
    mo = modelica.simulate(model_file, names, stop, DT, msl=msl, rtol=rtol, atol=rtol)
    t, Y = monolithic.simulate(sf.system, stop, DT)
    if not np.allclose(t, mo.t, rtol=0, atol=1e-9):
        raise ValueError("the two runs are not on the same grid")
    ab, sc = column_errors(mo.values, Y, [is_euler_angle(r) for r in records])
    return {"names": records, "t": t, "titop": Y, "modelica": mo.values, "absolute": ab,
            "scaled": sc, "attitude": attitude_errors(records, mo.values, Y), "info": mo.info}


def compare_balloon(stop=20.0, msl=None, model_file=BALLOON_MODEL):
    cols = balloon_columns()
    mo = modelica.simulate(model_file, cols, stop, DT, msl=msl)
    t, Y = balloon_inprocess(stop)
    ab, sc = column_errors(mo.values, Y, [c in ("phi", "theta", "psi") for c in cols])
    return {"names": list(cols), "t": t, "titop": Y, "modelica": mo.values, "absolute": ab,
            "scaled": sc, "attitude": attitude_errors(cols, mo.values, Y), "info": mo.info}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("system", help='a system file (.toml/.json), or "balloon"')
    ap.add_argument("model", nargs="?", help="the Modelica twin (.mo); default the system file's 'modelica' key")
    ap.add_argument("--stop", type=float,
                    help="final time [s] (default: the system file's [simulation] stop, else 10; the balloon 20)")
    ap.add_argument("--msl", help="folder holding the Modelica/ package (default: MODELICAPATH)")
    ap.add_argument("--bound", type=float, default=1e-8, help="largest accepted error (default %(default)g)")
    args = ap.parse_args(argv)
    reason = modelica.cli_unavailable_reason(args.msl)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 2
    try:
        if args.system == "balloon":
            r = compare_balloon(20.0 if args.stop is None else args.stop, args.msl,
                                args.model or BALLOON_MODEL)
        else:
            r = compare_system_file(args.system, args.model, args.stop, args.msl)
    except (modelica.ModelicaError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    i = r["info"]
    print(f"{i['model']}: {i['compiler']} {i['compiler_version']}, MSL {i['msl_version']}, "
          f"{i['solver']} rtol {i['rtol']:g}; compile {i['compile_s']:.1f} s, "
          f"simulate {i['simulate_s']:.1f} s; [0, {r['t'][-1]:g}] s")
    w = max(len(n) for n in r["names"])
    print(f"{'output':<{w}}  {'max |error|':>11}  {'scaled':>9}")
    for n, a, s in zip(r["names"], r["absolute"], r["scaled"]):
        print(f"{n:<{w}}  {a:11.2e}  {s:9.2e}")
    for label, (e, to_lock, k) in r["attitude"].items():
        print(f"attitude {label}: angle of P_twin^T P_titop {e:.2e} rad "
              f"(closest to gimbal lock {to_lock:.3g} deg, t = {r['t'][k]:g} s)")
    worst = max([float(r["scaled"].max())] + [e for e, _, _ in r["attitude"].values()])
    ok = worst <= args.bound
    print(f"worst {worst:.2e} {'<=' if ok else '>'} bound {args.bound:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
