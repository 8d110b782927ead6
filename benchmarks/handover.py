"""Round trip of one message each way between the master and a worker process, through the
pipes and the protocol of :mod:`titop_fmu.cosim.workers` (an interval's command, an
interval's answer for two runs of the balloon), with the waiting side sleeping in its read
and with it polling its pipe for up to ``SPIN`` first (the default).

    python benchmarks/handover.py [--rounds 2000]

The master hands over once per macro interval (the balloon: about 1 000 per 20 s); a process
asleep in a read takes a while to wake, which polling saves. Run it beside another load to
see what a shared machine gives.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from titop_fmu.cosim import workers

ANSWER = (True, {0: (0.1, np.zeros(10), np.zeros(72), 3), 1: (None, np.zeros(10), np.zeros(72), 2)})
COMMAND = ("interval", (0.0, 0.02, 1e-7, np.ones(72), 3.0), True)


def serve(spin):
    workers.SPIN = spin
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            workers._recv(inp)
        except EOFError:
            return
        workers._send(out, ANSWER)


def round_trips(spin, rounds):
    """Microseconds per round trip, the median of five batches, both sides polling for ``spin``."""
    workers.SPIN = spin
    p = subprocess.Popen([sys.executable, __file__, "--serve", repr(spin)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    try:
        for _ in range(100):                        # the worker started and warm
            workers._send(p.stdin, COMMAND)
            workers._recv(p.stdout)
        batches = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(rounds // 5):
                workers._send(p.stdin, COMMAND)
                workers._recv(p.stdout)
            batches.append((time.perf_counter() - t) / (rounds // 5) * 1e6)
        return statistics.median(batches)
    finally:
        p.stdin.close()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    default = workers.SPIN
    asleep, polling = round_trips(0.0, args.rounds), round_trips(default, args.rounds)
    print(f"round trip, the waiting side asleep in its read: {asleep:.0f} us")
    print(f"round trip, polling up to {default * 1e3:g} ms first: {polling:.0f} us ({asleep / polling:.1f} times faster)")


if __name__ == "__main__":
    main()
