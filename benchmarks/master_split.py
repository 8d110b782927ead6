"""Where the master's time goes on the balloon, 20 s, through the standalone block FMUs at
default settings: in one process and with a worker process (``--workers``).

    python benchmarks/master_split.py [--stop 20] [--workers 1 2] [--repeats 3]

For each number of processes, the medians over ``--repeats`` runs (each in this interpreter,
FMUs loaded, run, terminated; the FMUs built into the cache before any timing) of:

* the run's wall time and the CPU time of this process and its worker;
* the units' time (inside the FMI calls, summed over the processes) and the master's own
  (the rest of the processes' busy time; in one process, the rest of the wall time: the
  set-up, the output and the units' loading included);
* with a worker, the rest of the wall time: the set-up, and the waiting (each interval waits
  for the slower process, and for the message each way);

and what drives the master's part: macro steps, base steps, coupling iterations, loop
Newton iterations per base step, unit calls, and the master's own microseconds per unit call.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import warnings

from titop_fmu.cosim import simulate
from titop_fmu.errors import ParameterWarning
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits


def cpu():
    """CPU time of this process and its ended children [s]."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def run(stop, workers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        system = balloon.system()
    c0, t0 = cpu(), time.perf_counter()
    res = simulate(system, stop, TitopUnits("fmu", fmu_kind="standalone"), output_interval=0.01,
                   options=balloon.options(workers=workers))
    wall, used = time.perf_counter() - t0, cpu() - c0
    s = res.stats
    units = sum(s.unit_seconds.values())
    busy = s.worker_busy or [wall]
    handover = wall - max(busy) if s.worker_busy else 0.0
    calls = sum(s.unit_calls.values())
    return dict(wall=wall, cpu=used, units=units, master=sum(busy) - units, handover=handover,
                macro=s.macro_steps, base=s.base_steps, coupling=s.step_iterations, newton=s.loop_iterations,
                calls=calls, us_per_call=(sum(busy) - units) / calls * 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    TitopUnits("fmu", fmu_kind="standalone").unit_types(balloon.system())     # built here, not timed
    runs = {w: [] for w in args.workers}
    for _ in range(args.repeats):
        for w in args.workers:
            runs[w].append(run(args.stop, w))
    print(f"balloon, {args.stop:g} s, standalone FMUs, default settings; medians of {args.repeats} runs")
    for w, rs in runs.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"{w} process{'es' if w > 1 else ''}: wall {m['wall']:.2f} s, CPU {m['cpu']:.2f} s; units "
              f"{m['units']:.2f} s, master {m['master']:.2f} s, waiting and set-up {m['handover']:.2f} s; "
              f"{m['macro']:.0f} macro steps, {m['base']:.0f} base steps, {m['coupling']:.0f} coupling iterations, "
              f"{m['newton'] / max(1, m['base']):.2f} loop Newton iterations per base step, {m['calls']:.0f} unit "
              f"calls, master {m['us_per_call']:.1f} us per unit call")


if __name__ == "__main__":
    main()
