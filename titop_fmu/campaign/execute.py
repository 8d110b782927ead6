"""Running a campaign: the samples not stored yet, on Dask workers (a local cluster of one
worker process per core by default, or the cluster of ``scheduler``), or one by one in this
process (``workers=0``), each result stored as it arrives.

Dask schedules; nothing here does: a sliding window of futures keeps the workers busy,
``as_completed`` hands back results in the order they finish, a worker that dies has its
samples run again elsewhere by the scheduler (a sample that kills several is recorded as
failed), and ``retries`` covers a task that raises. Results do not depend on where or in
which order samples run: each is a function of its values alone.

Ctrl-C (:class:`KeyboardInterrupt`) stops cleanly: the futures are cancelled, the local
cluster is shut down with its worker processes, the store holds whole rows only, and
``resume=True`` runs what is missing.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time

from ..errors import Interrupted
from .distributions import SweepError
from .runner import one_line, prepared, record, run_sample
from .spec import Sweep
from .store import Campaign, Store


#: futures in flight per worker thread: enough to keep every worker busy while results travel
WINDOW_PER_THREAD = 4
#: the local cluster's background work, which shares the cores with the runs: no statistical
#: profiler sampling the workers' stacks every 10 ms, event-loop, system and memory monitors at
#: human rates (``benchmarks/campaign.py`` measures the CPU time per run of each process)
QUIET = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
         "distributed.admin.system-monitor.interval": "2s", "distributed.worker.memory.monitor-interval": "1s"}

#: no dashboard, and the scheduler's own HTTP server (its health routes) on a free loopback
#: port: with ``dashboard_address=None`` alone it takes 8787, and a second cluster on the
#: machine (a second campaign) then warns "Port 8787 is already in use"
NO_DASHBOARD = {"dashboard_address": None, "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}}


def local_cluster(workers=None):
    """A Dask ``LocalCluster``: ``workers`` processes (default one per core), one thread each
    (BLAS on one thread: the nanny sets ``OMP_NUM_THREADS=1`` and friends), no dashboard.

    Its processes never get Ctrl-C, which a terminal sends to every process of the command:
    this process decides, and shuts them down. They start with SIGINT blocked (a signal mask
    a new process inherits), and a worker the nanny restarts later ignores it from its
    plugin's set-up on. A Ctrl-C during the start waits for the cluster to be up, then
    shuts it down."""
    import dask
    from dask.distributed import Client, LocalCluster
    from multiprocessing import resource_tracker

    from ..cosim.workers import interrupts_held
    n = workers or os.cpu_count() or 1
    # started now: starting it unblocks SIGINT in the thread that does (it ignores it itself)
    resource_tracker.ensure_running()
    cluster = None
    try:
        with interrupts_held(children=True), dask.config.set(QUIET):
            # its logs silenced but for the critical: a sample's failure reaches the campaign through
            # its future (its message stored), and a worker whose heartbeat finds the scheduler
            # closed first (a shutdown slow on a busy machine) logged a traceback at ERROR level
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, **NO_DASHBOARD,
                                   silence_logs=logging.CRITICAL)
        client = Client(cluster)
        client.register_plugin(_ignore_interrupt(), name="titop-ignore-sigint")
    except BaseException:
        if cluster is not None:
            with interrupts_held():             # a second Ctrl-C does not cut the shutdown short
                cluster.close(timeout=10)
        raise
    return cluster, client


def _ignore_interrupt():
    """A worker plugin: the worker process ignores SIGINT (see :func:`local_cluster`)."""
    from dask.distributed import WorkerPlugin

    class IgnoreInterrupt(WorkerPlugin):
        def setup(self, worker):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)
    return IgnoreInterrupt()


def run(spec: Sweep, out, workers=None, scheduler=None, client=None, resume=False, progress=True,
        on_stored=None) -> Campaign:
    """Run the campaign ``spec`` into the store ``out`` and return it opened.

    ``workers=0``: every sample in this process, one after the other (no Dask); otherwise on
    ``client`` (a ``dask.distributed.Client``), or a client of ``scheduler`` (an address), or a
    local cluster of ``workers`` processes (default one per core). ``resume``: keep the
    samples the store holds (same campaign) and run the others. ``on_stored(record)`` is
    called after each sample is stored."""
    spec = spec.resolved()
    from ..simulation import Target
    target = Target(spec.system)
    store = Store(out, spec, target.header, resume=resume)    # checked; opened once connected
    if spec.engine == "fmu":            # the FMUs built here, once, not by every local worker at its first run
        from ..titop import TitopUnits
        from ..titop.units import default_fmu_dir
        TitopUnits("fmu", default_fmu_dir(spec.fmu_kind), spec.fmu_kind).unit_types(target.system())
    values = spec.design()
    bar = None

    def start():
        """The store opened, the samples left to run."""
        nonlocal bar
        store.open()
        done = store.done()
        bar = _Progress(spec.samples, len(done), progress)
        return [i for i in range(spec.samples) if i not in done]

    def stored(rec):
        store.write(rec, values[rec["index"]])
        bar.update(rec["status"])
        if on_stored is not None:
            on_stored(rec)
    try:
        if workers == 0 and client is None and scheduler is None:
            _serial(spec, start, values, stored)
        else:
            _distributed(spec, start, values, stored, workers, scheduler, client)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {len(store.done())} of {spec.samples} samples stored in {out}; "
                          "--resume runs the rest") from None
    finally:
        if bar is not None:
            bar.close()
        store.close()
    return Campaign(out)


def _spec_json(spec: Sweep) -> str:
    return json.dumps(spec.to_dict())       # in order: the varied values are matched by position


def _serial(spec, start, values, stored):
    key, fp = _spec_json(spec), spec.fingerprint()
    p = prepared(key, fp)
    for i in start():
        stored(p.run(i, values[i].tolist()))


def _distributed(spec, start, values, stored, workers, scheduler, client):
    from dask.distributed import Client, as_completed
    key, fp = _spec_json(spec), spec.fingerprint()
    cluster = own = None
    futures = {}                                # in flight: future -> sample index
    previous = None                             # the SIGINT handler while shutting down after one
    try:
        if client is None:
            if scheduler is not None:
                try:
                    client = own = Client(scheduler, timeout="10s")
                except (OSError, TimeoutError) as e:
                    raise SweepError(f"--scheduler {scheduler}: cannot connect ({one_line(e)})") from None
            else:
                cluster, client = local_cluster(workers)
                own = client
        threads = max(1, sum(client.nthreads().values()))
        window = WINDOW_PER_THREAD * threads
        pending = iter(start())
        tag = fp[:12]

        def submit(i):
            return client.submit(run_sample, key, fp, i, values[i].tolist(), key=f"titop-sample-{tag}-{i}",
                                 retries=1, pure=False)

        for i in pending:
            futures[submit(i)] = i
            if len(futures) >= window:
                break
        # results travel with their futures, gathered on the client's event loop: this thread
        # waits only on as_completed's condition, where Ctrl-C is harmless (a Ctrl-C inside a
        # blocking client call, Future.result, can make distributed log a NameError traceback)
        queue = as_completed(list(futures), with_results=True, raise_errors=False)
        for fut, result in queue:
            i = futures.pop(fut)
            if fut.status == "finished":
                rec = result
            else:                               # the task raised twice, or killed worker after worker
                err = one_line(result[1]) if fut.status == "error" else f"task {fut.status}"
                rec = record(i, "failed", 0.0, err, None, worker="")
            fut.release()
            stored(rec)
            nxt = next(pending, None)
            if nxt is not None:
                f = submit(nxt)
                futures[f] = nxt
                queue.add(f)
    except BaseException:
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C does not cut it short
        if futures:
            try:
                client.cancel(list(futures), force=True)
            except Exception:               # the cluster is going down anyway
                pass
        raise
    finally:
        shut_down(own, cluster)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def shut_down(*closing, timeout=10):
    """Close the campaign's own client and local cluster (None: not its own). A close that times
    out or fails (a worker slow to stop on a busy machine) is no error of the campaign: its
    samples are stored, and the Ctrl-C or error being raised stays the one said (a Ctrl-C
    once ended as "timed out after 10 s", exit code 2, without the way to resume)."""
    for c in closing:
        if c is not None:
            try:
                c.close(timeout=timeout)
            except (TimeoutError, OSError):
                pass


class _Progress:
    """A progress bar of runs: done, failed, left, and the rate."""

    def __init__(self, total, initial, show):
        self.failed = 0
        self.left = total - initial
        self.bar = None
        self.start = time.perf_counter()
        if show:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="run", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")
            self._postfix()

    def _postfix(self):
        self.bar.set_postfix_str(f"failed {self.failed}, left {self.left}", refresh=False)

    def update(self, status):
        self.left -= 1
        self.failed += status != "ok"
        if self.bar is not None:
            self._postfix()
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()
