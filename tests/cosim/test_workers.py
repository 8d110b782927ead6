"""Worker processes end silently and before the master returns, whatever failed: no
traceback of a worker writing to a master that stopped listening. The master's processes keep
every BLAS on one thread."""

import ast
import os
import signal
import subprocess
import sys
import warnings

import pytest

from titop_fmu.cosim import Options, build
from titop_fmu.cosim import workers
from titop_fmu.errors import ParameterError, ParameterWarning
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits


@pytest.mark.slow
def test_a_failed_set_up_ends_the_workers_silently(capfd):
    """A parameter the units refuse (a negative mass) fails the set-up of this process's runs
    while the worker sets up its own: the worker's answers are read before it is told to end.
    Before, the worker wrote its last answer to a closed pipe in some runs (3 in 12): a
    12-line BrokenPipeError traceback before the error line."""
    cs = balloon.system({"m_P2": -3.0})
    for _ in range(12):
        with pytest.raises(ParameterError, match="must be >= 0"):
            build(cs, TitopUnits("inprocess"), Options(workers=2))
        err = capfd.readouterr().err
        assert err == "", err


@pytest.mark.slow
def test_a_worker_whose_master_is_gone_ends_silently():
    """The worker's side alone: its answers to a master that closed its end of the pipe are
    dropped and it ends, exit code 0, nothing on stderr (the master may stop listening at any
    time: Ctrl-C, a failure)."""
    proc = subprocess.Popen([sys.executable, "-m", "titop_fmu.cosim.worker_process"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                                 # nobody reads the answers
    workers._send(proc.stdin, (None, None, None, [], 1, None))      # no run to make
    workers._send(proc.stdin, ("ready", (), False))     # answered into the closed pipe
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    err = proc.stderr.read()
    proc.stderr.close()
    assert err == b""


def _balloon():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        return balloon.system()


def test_ctrl_c_as_a_worker_is_started_ends_it(monkeypatch, sends_itself_sigint):
    """Ctrl-C just as the worker process is started, before the master holds it (here: raised
    as Popen returns): the master still ends it, and raises the interrupt."""
    started, real = [], subprocess.Popen

    def popen(*args, **kw):
        started.append(real(*args, **kw))
        signal.raise_signal(signal.SIGINT)               # a handler now raises KeyboardInterrupt
        return started[-1]

    monkeypatch.setattr(workers.subprocess, "Popen", popen)
    with pytest.raises(KeyboardInterrupt):
        build(_balloon(), TitopUnits("inprocess"), Options(workers=2))
    assert len(started) == 1 and started[0].poll() is not None


@pytest.mark.slow
def test_ctrl_c_while_the_master_ends_its_workers(monkeypatch):
    """Ctrl-C while the master waits for a worker's last answer: that worker is killed and
    every other one ended before the interrupt goes on; none is left running."""
    master = build(_balloon(), TitopUnits("inprocess"), Options(workers=3))
    remote = [s for s in master.steppers if not s.in_process]
    assert len(remote) == 2
    master.simulate(0.02, 0.01)
    result = workers.RemoteStepper.result

    def interrupted(self):
        if self is remote[0]:
            raise KeyboardInterrupt
        return result(self)

    monkeypatch.setattr(workers.RemoteStepper, "result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        master.terminate()
    assert all(s.proc.poll() is not None for s in remote)


@pytest.mark.slow
def test_ctrl_c_as_the_master_is_made_ends_its_workers(monkeypatch, sends_itself_sigint):
    """Ctrl-C once the workers are set up, as the master that holds them is being made: they
    are ended before the interrupt goes on."""
    from titop_fmu.cosim import engine
    given, real = [], engine.Master

    def master(st, steppers, opt):
        given.extend(s for s in steppers if not s.in_process)
        signal.raise_signal(signal.SIGINT)
        return real(st, steppers, opt)

    monkeypatch.setattr(engine, "Master", master)
    with pytest.raises(KeyboardInterrupt):
        build(_balloon(), TitopUnits("inprocess"), Options(workers=2))
    assert len(given) == 1 and given[0].proc.poll() is not None


BLAS_AFTER_SPLU = """
from threadpoolctl import threadpool_info
from titop_fmu.cosim.numerics import single_threaded_blas
from titop_fmu.cosim.loop import splu
import scipy.sparse
before = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
with single_threaded_blas():
    splu(scipy.sparse.identity(3, format="csc"))     # scipy's sparse LU and its BLAS loaded here
    inside = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
after = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
print(repr((inside, after, before)))
"""


def test_the_sparse_lu_blas_is_single_threaded_in_the_master():
    """Every BLAS of the process on one thread inside the master's context, scipy's too when its
    sparse LU is first loaded there (a fresh interpreter: nothing loaded before). Its OpenBLAS
    on two threads spun waiting for them: at real-time priority a 32-body chain's master and
    worker never went on, and at normal priority 0.05 s of it took 9.0 s instead of 4.0 s.
    After the context, each library as it was."""
    r = subprocess.run([sys.executable, "-c", BLAS_AFTER_SPLU], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2"))
    assert r.returncode == 0, r.stderr
    inside, after, before = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    assert len(inside) > len(before) and set(inside.values()) == {1}, (inside, before)
    assert after == {**inside, **before, **{p: 2 for p in set(inside) - set(before)}}, (after, before)
