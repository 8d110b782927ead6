"""Cost of the FMI calls of a TITOP FMU in a C host, and the mmap/munmap system calls per call.

    python benchmarks/c_host_calls.py [--fmu revolute_c1] [--calls 2000] [--repeat 5] [--against REV]

Builds the FMU (``titop-fmu build``'s, with the entry points ``shim.c`` of this
checkout) and compiles the C host ``benchmarks/c/fmu_call_timing.c``, which loads
it as FMI tools do (no Python in the process: the FMU starts one), initializes
it with the default parameters and times ``--calls`` calls in a row of

* ``set``: ``fmi2SetReal`` of all inputs;
* ``get``: ``fmi2GetReal`` of all outputs (cached by the FMU after the first:
  the cost of the call itself);
* ``step``: ``fmi2DoStep`` of ``--step`` s;

in the environment the FMU documentation asks of a C host (the Python library
on the loader path, numpy on ``PYTHONPATH``). Prints the median over
``--repeat`` runs of the microseconds per call, and, if ``strace`` is installed,
the mmap and munmap calls per FMI call (``strace -f -c``: a run of ``--calls``
calls less a run of none, divided by ``--calls``).

``--against REV`` builds the same FMU a second time with the entry points of the
git revision ``REV`` (e.g. ``main``, or the commit before a change of
``shim.c``) and measures both in the same run, interleaved, with their ratio.
"""

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST = Path(__file__).resolve().parent / "c" / "fmu_call_timing.c"
HEADERS = ROOT / "tests" / "fmu" / "c"           # fmi2_host.h
CALLS = ("set", "get", "step")


def build(kind, n, out_dir, shim_source=None):
    """The unzipped FMU ``(dir, model id, guid, input vrs, output vrs)`` built with the entry
    points ``shim_source`` (default: this checkout's)."""
    from titop_fmu.fmu.build import SHIM_SOURCE, build_fmu, compile_shim
    from titop_fmu.fmu.catalog import interface
    out_dir.mkdir(parents=True)
    shim = compile_shim(out_dir / "shim.so", shim_source or SHIM_SOURCE)
    path = build_fmu(kind, n, out_dir, shim)
    d = out_dir / "unzipped"
    with zipfile.ZipFile(path) as z:
        z.extractall(d)
    guid = (d / "modelDescription.xml").read_text().split('guid="', 1)[1].split('"', 1)[0]
    iface = interface(kind, n)
    vr = {v.name: k for k, v in enumerate(iface.variables)}
    return d, path.stem, guid, [vr[i] for i in iface.input_names], [vr[o] for o in iface.output_names]


def run(host, fmu, env, calls, n, step, strace_out=None):
    d, mid, guid, ins, outs = fmu
    args = [str(host), str(d), mid, guid, str(n), "-h", repr(step)]
    if ins:
        args += ["-i", ",".join(map(str, ins))]
    if outs:
        args += ["-o", ",".join(map(str, outs))]
    args += list(calls)
    if strace_out:
        args = ["strace", "-f", "-c", "-e", "trace=mmap,munmap", "-o", str(strace_out)] + args
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode:
        sys.exit(f"the C host failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return {w[0]: float(w[1]) for w in (line.split() for line in r.stdout.splitlines()) if w and w[0] in CALLS}


def syscalls(host, fmu, env, call, n, step, tmp):
    """mmap and munmap calls per FMI call ``call`` (``n`` calls less none)."""
    counts = []
    for k in (0, n):
        out = tmp / f"strace_{call}_{k}.txt"
        run(host, fmu, env, [call], k, step, out)
        table = {m.group(2): int(m.group(1)) for m in
                 re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+(\w+)\s*$", out.read_text(), re.M)}
        counts.append((table.get("mmap", 0), table.get("munmap", 0)))
    return tuple(round((b - a) / n, 2) + 0.0 for a, b in zip(*counts))     # + 0.0: no "-0.00"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmu", default="revolute_c1", help="model identifier (default revolute_c1)")
    ap.add_argument("--calls", type=int, default=2000, help="calls in a row per figure")
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure (the median is printed)")
    ap.add_argument("--step", type=float, default=1e-3, help="communication step of fmi2DoStep [s]")
    ap.add_argument("--against", metavar="REV", help="also the FMU with the entry points of git revision REV")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from titop_fmu.fmu.build import c_host_env
    from titop_fmu.fmu.catalog import parse_identifier
    from titop_fmu.cbuild import c_compiler, compile_c

    kind, n = parse_identifier(args.fmu)
    env = c_host_env()
    with tempfile.TemporaryDirectory(prefix="titop_c_host_") as tmp:
        tmp = Path(tmp)
        host = compile_c(HOST, tmp / "fmu_call_timing", c_compiler() or "cc", ["-O2", f"-I{HEADERS}"], ["-ldl"],
                         "the C host")
        host.chmod(0o755)
        fmus = {"this checkout": build(kind, n, tmp / "new")}
        if args.against:
            src = tmp / "shim_against.c"
            src.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{args.against}:titop_fmu/fmu/shim.c"],
                                           check=True, capture_output=True).stdout)
            fmus = {f"entry points of {args.against}": build(kind, n, tmp / "old", src), **fmus}
        times = {name: {c: [] for c in CALLS} for name in fmus}
        for _ in range(args.repeat):                    # interleaved: the machine's drift hits both
            for name, fmu in fmus.items():
                for c, us in run(host, fmu, env, CALLS, args.calls, args.step).items():
                    times[name][c].append(us)
        strace = shutil.which("strace")
        print(f"{args.fmu} in a C host: microseconds per call (median of {args.repeat} runs of {args.calls} calls)"
              + (", mmap + munmap per call (strace)" if strace else " (no strace: no syscall count)"))
        print(f"{'':28s}" + "".join(f"{c:>12s}" for c in CALLS) + ("".join(f"{c + ' mmap/munmap':>20s}" for c in CALLS)
                                                                  if strace else ""))
        for name, fmu in fmus.items():
            row = f"{name:28s}" + "".join(f"{statistics.median(times[name][c]):12.2f}" for c in CALLS)
            if strace:
                row += "".join("{:>20s}".format("%.2f / %.2f" % syscalls(host, fmu, env, c, args.calls, args.step,
                                                                         tmp)) for c in CALLS)
            print(row)
        if len(fmus) == 2:
            old, new = (times[name] for name in fmus)
            print(f"{'ratio (before / after)':28s}" + "".join(
                f"{statistics.median(old[c]) / statistics.median(new[c]):12.2f}" for c in CALLS))


if __name__ == "__main__":
    main()
