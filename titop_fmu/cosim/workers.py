"""Groups of runs in worker processes, behind the stepper's two-phase interface.

The runs of the master never exchange anything but the macro interval and
their recorded outputs, so each group of runs lives in a worker process (its
own FMU instances) behind the two-phase interface of
:class:`~.stepper.Stepper`: the master sends the command to every worker, then
collects the answers, and the workers compute at the same time. A run's
arithmetic does not depend on where it runs: the results are the same bit for
bit as with every run in the master's process.

A worker is a fresh interpreter (``python -m titop_fmu.cosim.worker_process``)
talking length-prefixed pickles over its stdin/stdout, so it inherits nothing
and imports nothing of the caller's main script.

Ctrl-C is the master's alone. A terminal sends SIGINT to every process of its
foreground process group; a worker runs in a session of its own, so that it
never gets it, from the moment it starts (its interpreter's start-up and imports
included), and ends when its master ends it, or when its master's end of its
pipe closes. The master starts a worker, and ends one, with interrupts held
(:func:`interrupts_held`): a worker it started is one it knows, and one it ends
has ended, whenever Ctrl-C comes.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import SolverError
from .loop import LoopError
from .numerics import single_threaded_blas
from .options import Options
from .run import NoConvergence
from .stepper import Stepper, make_runs


def picklable(obj) -> bool:
    """Whether ``obj`` can go to a worker (a FunctionSpec with lambdas cannot)."""
    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream):
    """The next message, the process asleep in its read until it comes (no polling: a process
    at real-time priority that polled would keep the one it waits for off its core)."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


@contextmanager
def interrupts_held(children=False):
    """SIGINT (Ctrl-C) held back while the block runs, then delivered to the handler there was
    before: the block is not cut short, and the interrupt is not lost. In the main thread
    (elsewhere Python runs no signal handler: nothing to hold).

    ``children``: the processes and threads the block starts never get SIGINT either (a
    terminal sends it to every process of the command): it is blocked in this thread's
    signal mask, which they inherit, through ``exec`` too (where there is no signal mask,
    Windows: ignored meanwhile, and lost)."""
    held = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:                          # not the main thread
        yield
        return
    masked = children and hasattr(signal, "pthread_sigmask")
    if masked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    elif children:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        if masked:      # one that came meanwhile is delivered now, to the recording handler
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


class RemoteStepper:
    """A :class:`Stepper` of the runs ``indices`` in a worker process."""

    in_process = False

    def __init__(self, key):
        """Start the worker process, in a session of its own (the terminal's Ctrl-C is not its;
        start it with :func:`interrupts_held` and keep it, to end it whenever Ctrl-C comes): it
        imports what it needs while the caller analyses the system; :meth:`setup` then gives it
        its runs."""
        self.key = key
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.proc = subprocess.Popen([sys.executable, "-m", "titop_fmu.cosim.worker_process"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        self._lost = False
        self._set_up = False
        self._writer = None                 # the thread writing the set-up
        self._commit = False                # commit before the next command
        self._pending = 0                   # commands sent whose answer is not read yet

    def setup(self, system, units, opt: Options, indices, st):
        """Make the runs ``indices`` in the worker; the caller collects the answer with result().
        The runs' description (tens of kB) goes down the pipe from a thread of its own: the
        worker reads it once its interpreter has started, a tenth of a second or more, and a
        pipe holds 64 KiB; this process meanwhile sets up its own runs."""
        message = (system, units, opt.stepper_options(), list(indices), self.key, st)
        self._set_up = True
        self._pending += 1                  # the answer to "ready": the runs are made
        self._writer = threading.Thread(target=self._send, args=(message, ("ready", (), False)),
                                        name=f"titop worker {self.key} set-up", daemon=True)
        self._writer.start()

    def _send(self, *messages):
        try:
            for message in messages:
                _send(self.proc.stdin, message)
        except OSError:                     # the worker is gone: result() says so
            self._lost = True

    def _written(self):
        """The set-up written (what follows goes after it)."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None

    def start(self, method, *args):
        self._written()
        self._send((method, args, self._commit))
        self._commit = False
        self._pending += 1

    def commit_later(self):
        """The worker commits the interval when it gets the next command (one round trip less
        per interval)."""
        self._commit = True

    def _ended(self) -> SolverError:
        code = self.proc.poll()
        return SolverError(f"worker process {self.key} ended unexpectedly"
                           + (f" (exit code {code})" if code is not None else ""))

    def result(self):
        self._written()
        if self._lost:
            raise self._ended()
        try:
            ok, value = _recv(self.proc.stdout)
        except (EOFError, OSError):
            self._lost = True
            raise self._ended() from None
        self._pending -= 1
        if not ok:
            kind, msg, extra = value
            if kind == "NoConvergence":
                raise NoConvergence(msg)
            if kind == "LoopError":
                raise LoopError(msg, **extra)
            raise SolverError(msg if kind == "SolverError" else f"worker {self.key}: {kind}: {msg}")
        return value

    def terminate(self):
        """The worker's units terminated, then the process ends (its input closed); killed if it
        has not ended 2 s later. Every answer the worker sends is read first (after a failure
        elsewhere, the one to a command still under way): the worker never writes to a closed
        pipe, and ends before this returns. Ctrl-C meanwhile kills it at once; it has ended
        (and is reaped) when the interrupt is raised."""
        graceful = False
        try:
            self._written()
            if self.proc.poll() is None and not self._lost and self._set_up:    # else: its input closed, it ends
                try:
                    while self._pending:
                        try:
                            self.result()
                        except SolverError:
                            if self._lost:
                                raise
                    self.start("terminate")
                    self.result()
                    self._send(("exit", (), False))
                except SolverError:
                    pass
            graceful = True
        finally:
            with interrupts_held():
                self._end(2.0 if graceful else 0.0)

    def _end(self, grace):
        """Its pipes closed, the process waited for ``grace`` seconds, then killed."""
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _worker(inp, out):
    """Worker main loop: build the runs, then serve the master's commands; True when told to
    exit (else the master is gone)."""
    try:                                        # what FMU units need, while the master starts
        import fmpy.fmi2  # noqa: F401
        import fmpy.logging  # noqa: F401
    except ImportError:                         # reported by a unit that needs it
        pass
    try:
        system, units, opt, indices, key, st = _recv(inp)
    except (EOFError, OSError):                 # the master ended before giving any run
        return
    stepper, failure = None, None
    saved, token = {}, 0
    try:
        stepper = Stepper(make_runs(system, st, units, opt, indices), key)
    except Exception as e:                       # reported at the first command
        failure = e
    while True:
        try:
            method, args, commit = _recv(inp)
        except (EOFError, OSError):
            break
        if method == "exit":
            return True
        t = time.perf_counter()
        try:
            if stepper is None:
                raise failure
            if commit:
                stepper.commit()
            if method == "ready":
                value = None
            elif method == "save":               # FMU states stay here; the master gets a token
                token += 1
                saved[token] = stepper.save()[key]
                value = {key: token}
            elif method == "restore":
                stepper.restore({key: saved[args[0][key]]})
                value = None
            else:
                value = getattr(stepper, method)(*args)
            reply = (True, value)
        except Exception as e:
            extra = {}
            if isinstance(e, LoopError):
                extra = dict(loop=e.loop, time=e.time, residual=e.residual)
            reply = (False, (type(e).__name__, str(e), extra))
        if stepper is not None:
            stepper.busy += time.perf_counter() - t      # what counters_dict reports
        _send(out, reply)


def serve():
    """The worker's main: the protocol owns stdin/stdout; anything printed goes to stderr.
    Ctrl-C is the master's: the worker runs in a session of its own, out of the terminal's
    reach, and ignores SIGINT should one be sent to it. A master gone (its end of a pipe
    closed) ends the worker silently."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    try:
        with single_threaded_blas():
            told = _worker(inp, out)
    except BrokenPipeError:
        # nobody reads the answers: the unflushed ones must not fail again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return
    if told:
        # the units terminated, every answer written: nothing is left for the interpreter's
        # shutdown to do but take tens of milliseconds the master waits for
        sys.stderr.flush()
        os._exit(0)
