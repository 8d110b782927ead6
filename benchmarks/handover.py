"""Round trip of one message each way between the master and a worker process, through the
pipes and the protocol of :mod:`titop_fmu.cosim.workers` (an interval's command, an
interval's answer for two runs of the balloon): the waiting side asleep in its read, as the
protocol does, and, for comparison, polling its pipe for up to ``--poll`` seconds first (what
the protocol did before: faster on an idle machine, but a process at real-time priority that
polls keeps the one it waits for off its core).

    python benchmarks/handover.py [--rounds 2000] [--poll 2e-3]

The master hands over once per macro interval when it has a worker (``--workers 2``; the
balloon: about 1 000 intervals per 20 s). Run it beside another load to see what a shared
machine gives.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import time

import numpy as np

from titop_fmu.cosim import workers

ANSWER = (True, {0: (0.1, np.zeros(10), np.zeros(72), 3), 1: (None, np.zeros(10), np.zeros(72), 2)})
COMMAND = ("interval", (0.0, 0.02, 1e-7, np.ones(72), 3.0), True)


def receive(stream, poll):
    """The protocol's read, after polling the pipe for up to ``poll`` seconds."""
    fd, end = stream.fileno(), time.perf_counter() + poll
    while poll and not select.select([fd], [], [], 0)[0] and time.perf_counter() < end:
        pass
    return workers._recv(stream)


def serve(poll):
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            receive(inp, poll)
        except EOFError:
            return
        workers._send(out, ANSWER)


def round_trips(poll, rounds):
    """``(microseconds per round trip, CPU microseconds per round trip of both processes)``, the
    medians of five batches, both sides polling for ``poll`` seconds first."""
    p = subprocess.Popen([sys.executable, __file__, "--serve", repr(poll)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    try:
        for _ in range(100):                        # the worker started and warm
            workers._send(p.stdin, COMMAND)
            receive(p.stdout, poll)
        batches, cpus = [], []
        for _ in range(5):
            t, c0 = time.perf_counter(), _cpu(p.pid)
            for _ in range(rounds // 5):
                workers._send(p.stdin, COMMAND)
                receive(p.stdout, poll)
            batches.append((time.perf_counter() - t) / (rounds // 5) * 1e6)
            cpus.append((_cpu(p.pid) - c0) / (rounds // 5) * 1e6)
        return statistics.median(batches), statistics.median(cpus)
    finally:
        p.stdin.close()
        p.wait()


def _cpu(pid):
    """CPU time of this process and of the worker ``pid`` so far [s] (Linux: /proc)."""
    mine = time.process_time()
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return mine + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return mine


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--poll", type=float, default=2e-3, help="the polling variant's longest poll [s]")
    ap.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    (asleep, asleep_cpu), (polling, polling_cpu) = round_trips(0.0, args.rounds), round_trips(args.poll, args.rounds)
    print(f"round trip, the waiting side asleep in its read (the protocol): {asleep:.0f} us, CPU {asleep_cpu:.0f} us")
    print(f"round trip, polling up to {args.poll * 1e3:g} ms first: {polling:.0f} us, CPU {polling_cpu:.0f} us")


if __name__ == "__main__":
    main()
