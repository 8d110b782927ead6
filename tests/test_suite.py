"""The test suite itself: one Ctrl-C ends a run, also while a test runs the command line in
process (whose Ctrl-C, in its own process, stops a run cleanly and ends with status 130)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "support" / "interrupted_run.py"


@pytest.mark.parametrize("engine,workers", [([], []), (["--inprocess-units"], []), ([], ["-n", "1"])],
                         ids=["inprocess", "master", "xdist"])
def test_one_ctrl_c_ends_the_run(engine, workers, tmp_path):
    """pytest in a process group of its own, as a terminal runs it; one SIGINT to the group while
    its first test runs a long simulation: the run ends there, the next test is not run. It used
    to go on, and end with status 0: the command line took the Ctrl-C for its own. Also with the
    tests in a worker process of pytest-xdist (``-n``, as CI runs them)."""
    mark = tmp_path / "mark"
    env = dict(os.environ, TITOP_TEST_MARK=str(mark), TITOP_TEST_ARGS=" ".join(engine))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, str(CASES)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not mark.with_suffix(".started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
            time.sleep(0.05)
        time.sleep(1.0)                                 # in the command line's run
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # pytest's status for an interrupted run, or the interpreter ended by SIGINT itself (a KeyboardInterrupt
    # that reached the top: seen once in twenty runs on a loaded machine)
    ended = proc.returncode in (pytest.ExitCode.INTERRUPTED, -signal.SIGINT)
    assert ended and not mark.with_suffix(".next").exists(), (proc.returncode, out[-3000:])
