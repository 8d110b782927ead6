#!/usr/bin/env python3
"""Simulate validation/modelica/BalloonSystem.mo with OpenModelica.

For users who have OpenModelica (https://openmodelica.org) installed; it is
not needed by the rest of the project.  The script

1. uses OMPython if it is importable (and can start OpenModelica),
   otherwise runs the ``omc`` compiler (found on PATH or in
   ``$OPENMODELICAHOME/bin``) on a generated ``.mos`` script;
2. loads the Modelica Standard Library 4.x and the model, and simulates it
   with DASSL, tolerance 1e-10, output every 0.01 s, CSV result file;
3. writes the project's CSV format: header
   ``t,x,y,z,phi,theta,psi,p,theta1,theta2`` and one row per 0.01 s from
   0 to ``--stop``.

Exit codes: 0 success, 1 simulation or result error, 2 OpenModelica not found.

Example::

    python validation/run_openmodelica.py --out validation/reference/balloon_openmodelica.csv
"""

import argparse
import bisect
import csv
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from titop_fmu.modelica import mo_string, find_omc  # noqa: E402

HERE = Path(__file__).resolve().parent
MODEL_FILE = HERE / "modelica" / "BalloonSystem.mo"
MODEL_NAME = "BalloonSystem"
DEFAULT_OUT = HERE / "reference" / "balloon_openmodelica.csv"
COLUMNS = ("x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2")
DT = 0.01
TOLERANCE = 1e-10

EXIT_SIM_ERROR = 1
EXIT_NO_OPENMODELICA = 2


class SimulationError(RuntimeError):
    """OpenModelica ran but did not produce a usable result."""


# --------------------------------------------------------------------------
# Finding OpenModelica
# --------------------------------------------------------------------------

def ompython_available():
    """True if the OMPython package can be imported."""
    return importlib.util.find_spec("OMPython") is not None


# --------------------------------------------------------------------------
# OpenModelica commands
# --------------------------------------------------------------------------

def n_intervals(stop):
    """Number of output intervals so that the samples fall on the DT grid."""
    return max(1, int(round(stop / DT)))


def commands(stop, msl_version):
    """The OpenModelica scripting commands, in order."""
    if msl_version == "default":
        load_msl = "loadModel(Modelica)"
    else:
        load_msl = f"loadModel(Modelica, {{{mo_string(msl_version)}}})"
    simulate = (
        f"simulate({MODEL_NAME}, startTime=0.0, stopTime={stop!r}, "
        f"numberOfIntervals={n_intervals(stop)}, tolerance={TOLERANCE!r}, "
        f'method="dassl", outputFormat="csv", '
        f'variableFilter="{"|".join(COLUMNS)}", '
        f"fileNamePrefix={mo_string(MODEL_NAME)})"
    )
    return [load_msl, f"loadFile({mo_string(MODEL_FILE.as_posix())})", simulate]


def start_ompython_session():
    """An OMPython session with a running omc (raises if it cannot start)."""
    import OMPython  # noqa: PLC0415 (optional dependency)

    # Recent OMPython versions name the local session OMCSessionLocal; older
    # ones only have OMCSessionZMQ.  Both provide sendExpression().
    session_cls = getattr(OMPython, "OMCSessionLocal", None) or OMPython.OMCSessionZMQ
    return session_cls()


def run_with_ompython(omc, workdir, stop, msl_version):
    try:
        omc.sendExpression(f"cd({mo_string(Path(workdir).as_posix())})")
        load_msl, load_file, simulate = commands(stop, msl_version)
        for cmd in (load_msl, load_file):
            if omc.sendExpression(cmd) is not True:
                raise SimulationError(
                    f"{cmd} failed:\n{omc.sendExpression('getErrorString()')}")
        print("Modelica Standard Library", omc.sendExpression("getVersion(Modelica)"))
        result = omc.sendExpression(simulate)
        return f"{result}\n{omc.sendExpression('getErrorString()')}"
    except SimulationError:
        raise
    except Exception as exc:  # OMPython raises its own exception types
        raise SimulationError(f"OMPython: {exc}") from exc


def run_with_omc(omc, workdir, stop, msl_version):
    load_msl, load_file, simulate = commands(stop, msl_version)
    script = Path(workdir) / "simulate_balloon.mos"
    script.write_text("\n".join([
        f"{load_msl};", "getErrorString();",
        f"{load_file};", "getErrorString();",
        "getVersion(Modelica);",
        f"{simulate};", "getErrorString();",
    ]) + "\n", encoding="utf-8")
    proc = subprocess.run([omc, script.name], cwd=workdir, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SimulationError(f"omc exited with code {proc.returncode}:\n{log}")
    return log


# --------------------------------------------------------------------------
# Result conversion
# --------------------------------------------------------------------------

def read_result_csv(path):
    """OpenModelica CSV result -> (times, {column: values})."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [[cell.strip() for cell in row] for row in csv.reader(f) if row]
    header = [name.strip('"') for name in rows[0]]
    while header and header[-1] == "":  # tolerate a trailing separator
        header.pop()
    missing = [name for name in ("time",) + COLUMNS if name not in header]
    if missing:
        raise SimulationError(f"result file {path} lacks columns {missing}")
    data = {name: [float(row[header.index(name)]) for row in rows[1:]]
            for name in ("time",) + COLUMNS}
    return data.pop("time"), data


def resample(times, values, t):
    """Value at time t: exact sample if present (the last one at an event), else linear."""
    i = bisect.bisect_right(times, t + 1e-9) - 1
    if i < 0:
        i = 0
    if abs(times[i] - t) <= 1e-9 or i == len(times) - 1:
        return values[i]
    t0, t1 = times[i], times[i + 1]
    w = (t - t0) / (t1 - t0)
    return values[i] + w * (values[i + 1] - values[i])


def write_project_csv(times, data, stop, out):
    n = n_intervals(stop)
    if times[-1] < n * DT - 1e-6:
        raise SimulationError(f"simulation stopped at t = {times[-1]} s before {stop} s")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(("t",) + COLUMNS)
        for k in range(n + 1):
            t = round(k * DT, 10)
            writer.writerow([format(t, ".10g")]
                            + [repr(float(resample(times, data[c], t))) for c in COLUMNS])
    return n + 1


# --------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help="output CSV path (default: %(default)s)")
    parser.add_argument("--stop", type=float, default=20.0,
                        help="simulation stop time in s (default: %(default)s)")
    parser.add_argument("--msl-version", default="4.0.0",
                        help='Modelica Standard Library version to load, e.g. 4.0.0 or 4.1.0; '
                             '"default" loads the default installed one (default: %(default)s)')
    parser.add_argument("--keep", action="store_true",
                        help="keep the OpenModelica working directory and print its path")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.stop <= 0:
        print("error: --stop must be positive", file=sys.stderr)
        return EXIT_SIM_ERROR

    session = None
    if ompython_available():
        try:
            session = start_ompython_session()
        except Exception as exc:  # e.g. OMPython installed but omc missing
            print(f"warning: OMPython could not start OpenModelica ({exc})", file=sys.stderr)
    omc = None if session is not None else find_omc()
    if session is None and omc is None:
        print("error: OpenModelica not found: neither a working OMPython package nor the "
              "'omc' executable (on PATH or in $OPENMODELICAHOME/bin) is available.\n"
              "Install OpenModelica from https://openmodelica.org (and optionally "
              "'pip install OMPython'), then run this script again.", file=sys.stderr)
        return EXIT_NO_OPENMODELICA

    workdir = tempfile.mkdtemp(prefix="balloon_om_")
    try:
        if session is not None:
            print("Running OpenModelica through OMPython")
            log = run_with_ompython(session, workdir, args.stop, args.msl_version)
        else:
            print(f"Running OpenModelica: {omc}")
            log = run_with_omc(omc, workdir, args.stop, args.msl_version)
        result = Path(workdir) / f"{MODEL_NAME}_res.csv"
        if not result.is_file():
            raise SimulationError(f"no result file {result.name}; OpenModelica output:\n{log}")
        times, data = read_result_csv(result)
        rows = write_project_csv(times, data, args.stop, args.out)
    except SimulationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_SIM_ERROR
    finally:
        if args.keep:
            print(f"OpenModelica working directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"Wrote {rows} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
