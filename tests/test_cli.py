"""The command line as a new user meets it: options checked before any work, explicit
options winning over a system file, errors naming what the user typed, Ctrl-C, failures
of worker processes and of a stalling coupling, any system file on both engines."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from titop_fmu import cli
from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.simulation import resolve_options
from titop_fmu.titop import monolithic
from titop_fmu.titop.records import Records

ROOT = Path(__file__).resolve().parents[1]
TWO_BRANCH = ROOT / "examples" / "two_branch.toml"


def read(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float)


@pytest.mark.parametrize("argv, message", [
    (["--stop", "-1"], "--stop must be > 0, got -1"),
    (["--stop", "0"], "--stop must be > 0, got 0"),
    (["--stop", "nan"], "--stop must be a finite number"),
    (["--stop", "inf"], "--stop must be a finite number"),
    (["--stop", "1e308"], "output rows; at most"),
    (["--dt", "0"], "--dt must be > 0"),
    (["--dt", "10", "--stop", "1"], "--dt must be > 0 and <= 1, got 10"),
    (["--rtol", "-1"], "--rtol must be >= 1e-14"),
    (["--rtol", "0"], "--rtol must be >= 1e-14"),
    (["--engine", "fmu", "--tol", "1e-15"], "--tol must be >= 1e-10"),
    (["--engine", "fmu", "--tol", "0"], "--tol must be >= 1e-10"),
    (["--engine", "fmu", "--dt-max", "0"], "--dt-max must be > 0"),
    (["--engine", "fmu", "--workers", "-1"], "--workers must be between 0 and 64"),
    (["--engine", "fmu", "--sequence", "3,2"], "--sequence: expected up to 6 increasing"),
    (["--set", "m_P2=-3"], "parameter 'm_P2': must be >= 0"),
    (["--set", "m_B=1e308"], "parameter 'm_B': too large"),
    (["--set", "r1=[0,0,0]"], "parameter 'r1': joint axis must be a non-zero vector"),
    (["--set", "I_B=[[1,0,0],[0,1,0],[0,0,-1]]"], "parameter 'I_B': inertia must be positive semi-definite"),
    (["--set", "kk=1"], "parameter 'kk': unknown parameter"),
])
def test_bad_options_are_one_line_errors_before_any_work(argv, message, no_run, tmp_path, capsys):
    assert main(["simulate", "balloon", "--out", str(tmp_path / "x.csv"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("titop-fmu: error: ") and message in err, err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("where, message", [
    ("missing/x.csv", "no folder"),
    (".", "is a folder, not a file"),
    ("run.png", "the result is a CSV file: name it RUN.csv"),
    ("run", "the result is a CSV file"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(where, message, no_run, tmp_path, capsys):
    assert main(["simulate", "balloon", "--out", str(tmp_path / where)]) == 2
    assert message in capsys.readouterr().err


def test_an_unwritable_output_folder_is_refused(no_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)     # as for a user without the right (CI is root)
    assert main(["simulate", "balloon", "--out", str(tmp_path / "x.csv")]) == 2
    assert "not writable" in capsys.readouterr().err


def test_build_and_validate_check_their_options_first(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["build", "--children", "1000", "--out", str(tmp_path / "b")]) == 2
    assert "--children must be between 0 and 64" in capsys.readouterr().err
    assert main(["build", "--out", str(tmp_path / "file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["validate", "--out", str(tmp_path / "file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["validate", "--stop", "-2", "--out", str(tmp_path / "v")]) == 2
    assert "--stop must be > 0" in capsys.readouterr().err
    assert not (tmp_path / "b").exists() and not (tmp_path / "v").exists()


def test_export_checks_its_options_first(tmp_path, capsys):
    assert main(["export", "balloon", "--out", str(tmp_path / "b.fmu"), "--standalone", "--fmu-kind", "pythonfmu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--standalone and --fmu-kind pythonfmu ask for two kinds of FMU" in err, err
    assert main(["export", "balloon", "--standalone", "--out", str(tmp_path / "b.zip")]) == 2
    assert "an FMU file name ends with .fmu, got 'b.zip'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_explicit_options_win_over_the_system_file(tmp_path):
    """The file says stop = 10, output_interval = 0.01; --stop 0.2 (and --stop equal to the
    built-in default, 20) win; without --stop the file's value holds."""
    out = tmp_path / "a.csv"
    assert main(["simulate", str(TWO_BRANCH), "--stop", "0.2", "--dt", "0.05", "--out", str(out), "--quiet"]) == 0
    _, a = read(out)
    assert np.allclose(a[:, 0], [0.0, 0.05, 0.1, 0.15, 0.2])
    args = cli.parser().parse_args(["simulate", str(TWO_BRANCH), "--stop", "20"])
    resolve_options(args, systemfile.read(TWO_BRANCH).simulation)
    assert (args.stop, args.dt) == (20.0, 0.01)
    args = cli.parser().parse_args(["simulate", str(TWO_BRANCH)])
    resolve_options(args, systemfile.read(TWO_BRANCH).simulation)
    assert (args.stop, args.dt, args.tol) == (10.0, 0.01, 3e-5)


@pytest.mark.slow
def test_a_system_file_runs_on_the_monolithic_engine(tmp_path, capsys):
    """--engine inprocess (the default) on a system file is the exact monolithic twin, with its
    summary; the master on in-process units is --inprocess-units."""
    out = tmp_path / "two.csv"
    assert main(["simulate", str(TWO_BRANCH), "--stop", "0.5", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "in-process monolithic run (C kernel): 0.5 s simulated in" in err and "right-hand-side evaluations" in err
    header, got = read(out)
    t, truth = monolithic.simulate(systemfile.read(TWO_BRANCH).system, 0.5, 0.01)
    assert header == ["t"] + Records(systemfile.read(TWO_BRANCH).system).labels      # each scalar named
    assert np.array_equal(got[:, 0], t) and np.allclose(got[:, 1:], truth, rtol=0, atol=1e-12)
    # the reference blocks: the same run to the integration's tolerance
    assert main(["simulate", str(TWO_BRANCH), "--stop", "0.5", "--kernel", "numpy", "--out", str(out)]) == 0
    assert "in-process monolithic run (NumPy blocks)" in capsys.readouterr().err
    assert np.allclose(read(out)[1][:, 1:], truth, rtol=0, atol=1e-9)
    assert main(["simulate", str(TWO_BRANCH), "--stop", "0.1", "--inprocess-units", "--workers", "0",
                 "--out", str(out)]) == 0
    assert "co-simulation (inprocess units" in capsys.readouterr().err


@pytest.mark.slow
def test_the_in_process_balloon_run_prints_no_warning(tmp_path):
    """The paper's balloon inertia violates the triangle inequality: known and documented once
    in docs/balloon-scenario.md, not warned on every run."""
    r = subprocess.run([sys.executable, "-m", "titop_fmu.cli", "simulate", "balloon", "--stop", "0.1", "--quiet",
                        "--out", str(tmp_path / "b.csv")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def _start(args, tmp_path, env=None):
    return subprocess.Popen([sys.executable, "-m", "titop_fmu.cli", "simulate", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=tmp_path, env=env)


def _workers(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def _wait_for_progress(proc, tmp_path):
    """Until the run is under way: its worker started and some time simulated."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        if _workers(proc.pid):
            time.sleep(1.5)
            return
        time.sleep(0.1)
    raise AssertionError("the run did not start")


def _assert_interrupted(proc, workers, tmp_path):
    """The command ended with one line, exit code 130, no traceback, nothing written, and its
    worker processes ``workers`` ended (and reaped)."""
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("titop-fmu")]
    assert proc.returncode == 130 and lines == [lines[0]] and "interrupted" in lines[0], err[-500:]
    assert "Traceback" not in err and not list(tmp_path.glob("*.csv*")), err[-2000:]
    assert workers
    for w in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(w, 0)


@pytest.mark.slow
def test_ctrl_c_stops_with_one_line_no_worker_and_no_output(tmp_path):
    proc = _start(["balloon", "--inprocess-units", "--workers", "2", "--stop", "20", "--out", "x.csv"], tmp_path)
    _wait_for_progress(proc, tmp_path)
    workers = _workers(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)                  # as a terminal sends it: the whole group
    _assert_interrupted(proc, workers, tmp_path)


#: a sitecustomize that holds the import of a module (HELD_MODULE) in the processes it is put on
#: (those whose command line holds HELD_WHERE) until the test lets it go: a Ctrl-C then comes
#: at that moment for certain (a loaded machine's slow start)
HOLD_IMPORT = """
import os, sys, time
if os.environ["TITOP_TEST_HELD_WHERE"] in " ".join(sys.orig_argv):
    class Hold:
        def find_spec(self, name, path, target=None):
            if name == os.environ["TITOP_TEST_HELD_MODULE"]:
                held = os.environ["TITOP_TEST_HELD"]
                open(held, "w").close()
                deadline = time.monotonic() + 60
                while not os.path.exists(held + ".go") and time.monotonic() < deadline:
                    time.sleep(0.01)
    sys.meta_path.insert(0, Hold())
"""


def _held_import_env(tmp_path, module, where):
    """``(environment, marker)``: processes started with the environment whose command line
    holds ``where`` wait at the import of ``module`` until the test goes on (``marker`` exists
    while they wait)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOLD_IMPORT)
    held = tmp_path / "held"
    return dict(os.environ, TITOP_TEST_HELD=str(held), TITOP_TEST_HELD_MODULE=module, TITOP_TEST_HELD_WHERE=where,
                PYTHONPATH=os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH")) if p)), held


def _interrupt_when_held(proc, held) -> list:
    """Ctrl-C to ``proc``'s group once a process of it waits at its held import (then let go);
    the worker processes ``proc`` had then."""
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        workers = _workers(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
    finally:
        Path(f"{held}.go").touch()                       # the held process goes on: it ends as it is told
    return workers


@pytest.mark.slow
def test_ctrl_c_while_the_worker_starts(tmp_path):
    """Ctrl-C to the whole group while the master's worker process is still starting (its
    interpreter importing, before it serves): the worker, in a session of its own, does not
    get it (it used to end with a KeyboardInterrupt traceback); the master stops with one
    line and ends it."""
    env, held = _held_import_env(tmp_path, "titop_fmu.cosim.workers", "titop_fmu.cosim.worker_process")
    proc = _start(["balloon", "--inprocess-units", "--workers", "2", "--stop", "20", "--out", "x.csv"], tmp_path, env)
    workers = _interrupt_when_held(proc, held)
    _assert_interrupted(proc, workers, tmp_path)


def test_ctrl_c_while_the_command_imports_its_modules(tmp_path):
    """The installed ``titop-fmu`` command, Ctrl-C before its modules are imported: one line,
    exit status 130, no traceback (it was Python's KeyboardInterrupt traceback)."""
    command = Path(sys.executable).with_name("titop-fmu")
    if not command.is_file():
        pytest.skip("no titop-fmu command beside this interpreter (the package is not installed in it)")
    env, held = _held_import_env(tmp_path, "titop_fmu.cli", "titop-fmu")
    proc = subprocess.Popen([str(command), "simulate", "balloon", "--stop", "1", "--out", "x.csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=tmp_path, env=env)
    _interrupt_when_held(proc, held)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "titop-fmu: interrupted; nothing written\n", err[-2000:]
    assert not list(tmp_path.glob("*.csv*"))


@pytest.mark.slow
def test_a_worker_failure_is_reported_at_once(tmp_path):
    proc = _start(["balloon", "--inprocess-units", "--workers", "2", "--stop", "20", "--out", "x.csv", "--quiet"],
                  tmp_path)
    _wait_for_progress(proc, tmp_path)
    killed = time.monotonic()
    os.kill(_workers(proc.pid)[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and err.strip().startswith("titop-fmu: error: worker process 1 ended unexpectedly"), err
    assert time.monotonic() - killed < 5.0                  # not a timeout's worth later
    assert not list(tmp_path.glob("*.csv*"))


STIFF = """
links = [["ground.c1", "arm.p"]]
connections = [["arm.c1.m", "tie.l.m"], ["tie.l.w", "arm.c1.w"], ["ground.c2.m", "tie.r.m"], ["tie.r.w", "ground.c2.w"]]
record = ["arm.joint.q[3]"]
[units.ground]
model = "imposed_motion_base_c2"
mass = 1.0
inertia = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
com = [0.0, 0.0, 0.0]
"c1.r" = [0.0, 0.0, 0.0]
"c2.r" = [1.0, -1.0, 0.0]
[units.arm]
model = "revolute_c1"
mass = 1.0
inertia = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
com = [0.0, -1.0, 0.0]
"c1.r" = [0.0, -1.0, 0.0]
axis = [0.0, 0.0, 1.0]
q0 = "30 deg"
[units.tie]
model = "loop_closure"
K = [[1e12, 0, 0, 0, 0, 0], [0, 1e12, 0, 0, 0, 0], [0, 0, 1e12, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
D = [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
[inputs]
"ground.p.a" = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""


@pytest.mark.slow
def test_a_stalling_coupling_fails_with_its_reason(tmp_path, capsys):
    """A pendulum held by a loop-closure spring of 1e12 N/m: the coupling cannot converge at
    any macro step; the master says so, with the time and the reason, after a bounded number
    of retries (it used to retry the same step forever)."""
    path = tmp_path / "stiff.toml"
    path.write_text(STIFF)
    assert main(["simulate", str(path), "--inprocess-units", "--workers", "0", "--stop", "1",
                 "--out", str(tmp_path / "s.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the macro step fell below h_min" in err and "the coupling iteration did not converge" in err
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.slow
def test_the_first_help_says_what_the_tool_is_and_its_first_run_works(tmp_path, capsys, monkeypatch):
    """`titop-fmu --help` names the tool's uses and a first run; that run, as printed, works
    (a CSV of the balloon, then its plot); `--version` is the installed distribution's."""
    from importlib.metadata import version
    import re
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(w in text for w in ("simulate", "FMUs", "linearize", "campaigns", "COMMAND --help"))
    monkeypatch.chdir(tmp_path)
    for command in re.findall(r"'titop-fmu ((?:simulate|plot) [^']+)'", text):
        assert main(command.split()) == 0, command
    header, rows = read(tmp_path / "run.csv")
    assert header[0] == "t" and rows[-1, 0] == 20.0
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.split() == ["titop-fmu", version("titop-fmu")]


@pytest.mark.parametrize("command", ["simulate", "sweep", "report", "build", "export", "animate", "plot", "models",
                                     "linearize", "validate"])
def test_each_commands_help_opens_with_what_it_does(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    usage, description = capsys.readouterr().out.split("\n\n")[:2]
    assert usage.startswith(f"usage: titop-fmu {command}") and description[0].isupper() and description.endswith("."), \
        description


@pytest.mark.parametrize("given", [None, "2"])
def test_the_command_line_runs_blas_on_one_thread_unless_told(given):
    """The command line sets BLAS to one thread before numpy loads it (its matrices are small;
    OpenBLAS's threads spin their first tenth of a second), and leaves a number given alone."""
    from titop_fmu import BLAS_THREADS
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREADS}
    if given:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import titop_fmu.cli, threadpoolctl, os; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], "
            "[i['num_threads'] for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    threads = given or "1"
    assert out.split(None, 1)[0] == threads
    if (os.cpu_count() or 1) >= int(threads):
        assert f"[{threads}" in out, out
