"""Worker processes end silently and before the master returns, whatever failed: no
traceback of a worker writing to a master that stopped listening."""

import subprocess
import sys

import pytest

from titop_fmu.cosim import Options, build
from titop_fmu.cosim import workers
from titop_fmu.errors import ParameterError
from titop_fmu.scenarios import balloon
from titop_fmu.titop import TitopUnits


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
