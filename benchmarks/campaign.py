"""Throughput of campaigns: runs per second in one process against a local Dask cluster.

    python benchmarks/campaign.py [--samples 80] [--workers 2] [--repeats 2] [--chain 16] [--chain-stop 2]

Two campaigns, the balloon (20 s) and a chain of ``--chain`` bodies on a floating base
(``titop_fmu.scenarios.generate``, ``--chain-stop`` s), each over two of its parameters, run

* in one process, sample after sample (``campaign.run(workers=0)``: the same runner and
  store, no Dask), and
* on a local cluster of ``--workers`` worker processes (started once, before; its start-up
  is printed apart), in the same round,

and prints per case: runs per second of each (from the first stored result to the last,
the first run's imports excluded), their ratio, and the overhead per run in one process:
the campaign's time per run less the same samples run directly here as ``simulate`` runs
them (system built, integrated, columns made), against the integration's own wall time
(``Trajectory.wall``): what a campaign adds per run (the values applied, the row stored,
the progress bar). The load average is printed
with each round (on a shared machine the cluster's speed-up is what the other processes
leave it), and the CPU time per run of each process: the worker processes' against the
one process's, and what the client (with the scheduler and the store) spends per run.
"""

import argparse
import json
import os
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from titop_fmu import campaign
from titop_fmu.campaign.execute import local_cluster
from titop_fmu.cosim import systemfile
from titop_fmu.errors import ParameterWarning
from titop_fmu.scenarios import generate
from titop_fmu.simulation import Target


def chain_file(n, folder) -> Path:
    """The chain as a system file recording the base's pose and the last joint."""
    cs = generate.cosystem(n, branching=1)
    d = systemfile.to_dict(cs)
    d["record"] = ["base.p.m[13]", "base.p.m[14]", "base.p.m[15]", f"b{n}.joint.q[3]", "b1.joint.q[3]"]
    path = Path(folder) / f"chain{n}.json"
    path.write_text(json.dumps(d))
    return path


def cpu_seconds():
    """CPU time of this process (user + system) [s]."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(spec, out, client=None, **kw):
    """``(runs per second between the first and the last stored result, campaign, CPU seconds
    per run of this process, of the workers)``."""
    stamps = []
    workers0 = sum(client.run(cpu_seconds).values()) if client is not None else 0.0
    cpu0 = cpu_seconds()
    c = campaign.run(spec, out, client=client, progress=False,
                     on_stored=lambda rec: stamps.append(time.perf_counter()), **kw)
    cpu = (cpu_seconds() - cpu0) / spec.samples
    workers = (sum(client.run(cpu_seconds).values()) - workers0) / spec.samples if client is not None else 0.0
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), c, cpu, workers


def direct_seconds(spec, c) -> tuple:
    """``(integration, whole run)`` wall time and the whole runs' CPU time of the samples of ``c``
    run directly here, as ``simulate`` runs them (the system built with the values, integrated,
    its columns made)."""
    from types import SimpleNamespace

    from titop_fmu.io import assign
    target = Target(spec.system)
    args = SimpleNamespace(stop=spec.stop, dt=spec.dt, rtol=spec.rtol, kernel=spec.kernel)
    compute = whole = cpu = 0.0
    for _, row in c.samples.iterrows():
        ov = {}
        for name in spec.vary:
            assign(ov, target.settable, name, float(row[name]))
        t0, c0 = time.perf_counter(), cpu_seconds()
        _, _, tr = target.run(ov, args)
        whole += time.perf_counter() - t0
        cpu += cpu_seconds() - c0
        compute += tr.wall
    return compute, whole, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=80)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--chain", type=int, default=16)
    ap.add_argument("--chain-stop", type=float, default=2.0)
    ap.add_argument("--cases", nargs="+", default=["balloon", "chain"], choices=["balloon", "chain"])
    args = ap.parse_args()
    warnings.simplefilter("ignore", ParameterWarning)
    tmp = Path(tempfile.mkdtemp(prefix="campaign-bench-"))
    cases = [
        ("balloon, 20 s", campaign.Sweep("balloon", vary={"m_P1": "uniform(1.5,2.5)",
                                                          "theta1_0": "normal(170deg,2deg)"},
                                         samples=args.samples, seed=1, stop=20.0)),
        (f"chain of {args.chain}, {args.chain_stop:g} s",
         campaign.Sweep(str(chain_file(args.chain, tmp)), vary={"b1.mass": "uniform(0.8,1.2)", "b1.q0": "uniform(0.2,0.4)"},
                        samples=args.samples, seed=1, stop=args.chain_stop)),
    ]
    cases = [c for c, name in zip(cases, ("balloon", "chain")) if name in args.cases]
    t0 = time.perf_counter()
    cluster, client = local_cluster(args.workers)
    print(f"local cluster of {args.workers} worker processes started in {time.perf_counter() - t0:.2f} s")
    try:
        client.run(lambda: __import__("titop_fmu.campaign.runner"))         # the workers' imports, once
        k = 0
        for rnd in range(args.repeats):
            for label, spec in cases:
                warm = campaign.Sweep(**{**spec.to_dict(), "samples": 2, "seed": 99})
                campaign.run(warm, tmp / f"warm{k}", workers=0, progress=False)       # imports, kernel
                campaign.run(warm, tmp / f"warmc{k}", client=client, progress=False)
                load = os.getloadavg()[0]
                one, c1, cpu1, _ = timed(spec, tmp / f"one{k}", workers=0)
                many, c2, cpu_client, cpu_workers = timed(spec, tmp / f"many{k}", client=client)
                ids1, t1 = c1.tables()
                ids2, t2 = c2.tables()
                assert np.array_equal(t1, t2), "the cluster's results differ from one process's"
                compute, whole, cpu_direct = (x / spec.samples for x in direct_seconds(c1.spec, c1))
                per_run = 1.0 / one
                print(f"[round {rnd + 1}, load {load:.2f} -> {os.getloadavg()[0]:.2f}] {label}, {spec.samples} runs: "
                      f"one process {one:.2f} runs/s, {args.workers} workers {many:.2f} runs/s "
                      f"({many / one:.2f} times); per run in one process {1e3 * per_run:.1f} ms, run directly "
                      f"{1e3 * whole:.1f} ms of which integration {1e3 * compute:.1f} ms: overhead "
                      f"{1e3 * (per_run - whole):.1f} ms = {100 * (per_run - whole) / compute:.1f} % of the integration; "
                      f"CPU per run: run directly {1e3 * cpu_direct:.1f} ms, one process {1e3 * cpu1:.1f} ms (overhead "
                      f"{1e3 * (cpu1 - cpu_direct):.1f} ms), cluster {1e3 * cpu_workers:.1f} ms in the workers "
                      f"+ {1e3 * cpu_client:.1f} ms here (client, scheduler, store)")
                k += 1
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
