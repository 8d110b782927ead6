"""Shared fixtures (the balloon runs are expensive: made once per session; each Modelica run
made once per test run, for all its workers), the ``slow`` marker (long acceptance runs are
deselected unless ``pytest --slow``, as CI runs it), ``-n``'s work stealing, BLAS on one thread,
and one Ctrl-C ending the run."""

import os
import signal

import pytest

from balloon_runs import run_balloon
from modelica_runs import simulate_once
from session_cache import shared_folder


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the long acceptance runs (marked slow)")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The whole suite on every core, by work stealing; before xdist reads its options (both
    hooks run first, this one, a conftest's, before a plugin's).

    * A run of the whole suite (``pytest``, ``pytest --slow``: no file, folder or test named) on
      a machine of two cores or more runs in pytest-xdist's workers, as ``-n auto``, unless
      ``-n`` is given (``-n 0``: one process). A run of a part (``pytest tests/linear``), a
      worker, and the inner runs of tests/test_suite.py stay in one process.
    * ``-n`` spreads the tests by work stealing (``--dist worksteal``) unless ``--dist`` is
      given: a worker that runs out takes half of the other's queue, so the long tests at the
      end of the collection do not leave a core idle while one worker runs them all."""
    if os.environ.get("PYTEST_XDIST_WORKER") or hasattr(config, "workerinput"):
        return
    if not config.pluginmanager.hasplugin("xdist"):
        return
    if (config.option.numprocesses is None and config.args_source == pytest.Config.ArgsSource.TESTPATHS
            and (os.cpu_count() or 1) >= 2):
        config.option.numprocesses = "auto"
    given = any(a == "--dist" or a.startswith("--dist=") for a in config.invocation_params.args)
    if config.option.numprocesses and config.option.dist == "no" and not given:
        config.option.dist = "worksteal"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long acceptance run, deselected unless --slow")
    one_blas_thread()


def one_blas_thread():
    """BLAS on one thread, in this process and the ones the tests start (the command line, an
    inner pytest, the workers of ``-n`` and of a campaign), unless the environment says
    otherwise: the tests' matrices are small, where a multithreaded OpenBLAS costs more than it
    gives, and far more on a busy machine (a beam's 80 x 80 eigenproblem took 75 ms on two
    threads of a loaded 2-core machine, 1 ms on one; plain ``pytest``: 221 s of processor time
    instead of 161 s). ``System.simulate`` limits it itself: its test sets two threads to see
    it."""
    from titop_fmu import one_blas_thread as by_default
    if not by_default():
        return
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=1, user_api="blas")


def pytest_sessionstart(session):
    """One Ctrl-C ends the run, after the test it comes in if that test's code takes the
    KeyboardInterrupt for its own (a command line returning 130, an FMU's error status)."""
    def interrupt(signum, frame):
        session.shouldstop = "interrupted (Ctrl-C)"
        signal.default_int_handler(signum, frame)
    signal.signal(signal.SIGINT, interrupt)


@pytest.fixture
def sends_itself_sigint():
    """For a test that sends SIGINT to its own process: Python's own handler meanwhile (the
    session's would end the run after it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    slow = [i for i in items if i.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("slow")]


@pytest.fixture(scope="session", autouse=True)
def modelica_runs_once(tmp_path_factory):
    """``titop_fmu.modelica.simulate`` gives the same inputs' result computed once in this run
    (``modelica_runs.simulate_once``): the validation tests, ``titop-fmu validate`` and the
    docs pages compare against one Modelica run of each model, not one each."""
    from titop_fmu import modelica
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(modelica, "simulate",
                      simulate_once(modelica.simulate, shared_folder(tmp_path_factory, "modelica-runs")))
        yield


@pytest.fixture(scope="session")
def balloon_run():
    """The scenario as specified, in-process monolithic, 20 s."""
    return run_balloon()


@pytest.fixture(scope="session")
def balloon_undamped_run():
    """The scenario with d_s = d_p1 = d_p2 = 0, 20 s."""
    return run_balloon({"d_s": 0.0, "d_p1": 0.0, "d_p2": 0.0})


@pytest.fixture
def no_run(monkeypatch):
    """Fail if a simulation starts (the master's or the in-process one): every check of the
    command line must come before."""
    def refuse(*a, **kw):
        raise AssertionError("a simulation started")
    monkeypatch.setattr("titop_fmu.cli.simulate.run_master", refuse)
    monkeypatch.setattr("titop_fmu.system.System.simulate", refuse)
