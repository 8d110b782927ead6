"""Campaigns on Dask: the same results wherever and in whatever order samples run (two
workers, a killed worker, a cluster of separate processes, Ctrl-C and --resume), failures
recorded, the FMU engine, and every stored sample equal to ``simulate --set`` with its values."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from dask.distributed import Client, LocalCluster  # noqa: E402

from titop_fmu import campaign  # noqa: E402
from titop_fmu.campaign import store as store_module  # noqa: E402
from titop_fmu.campaign.execute import NO_DASHBOARD  # noqa: E402
from titop_fmu.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VARY = {"theta1_0": "normal(170deg,2deg)", "m_P1": "uniform(1.5,2.5)"}      # not in alphabetical order
N, STOP = 6, 1.0


def balloon_spec(**kw):
    return campaign.Sweep("balloon", vary=dict(VARY), samples=N, seed=1, stop=STOP, **kw)


def equal_stores(a, b):
    """Same samples, same values, same outputs bit for bit."""
    sa, sb = a.samples, b.samples
    assert list(sa.index) == list(sb.index)
    assert np.array_equal(sa[a.names].to_numpy(), sb[b.names].to_numpy())
    assert list(sa.status) == list(sb.status)
    ia, ta = a.tables()
    ib, tb = b.tables()
    assert np.array_equal(ia, ib) and ta.shape == tb.shape and np.array_equal(ta, tb)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The reference: every sample one after the other in this process, no Dask."""
    return campaign.run(balloon_spec(), tmp_path_factory.mktemp("serial") / "store", workers=0, progress=False)


@pytest.fixture(scope="module")
def client():
    """A local cluster of two worker processes (one thread each), shared by the tests."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **NO_DASHBOARD) as cluster, \
            Client(cluster) as c:
        yield c


def test_serial_store_is_complete(serial):
    s = serial.samples
    assert list(s.index) == list(range(N)) and set(s.status) == {"ok"}
    assert (s.wall > 0).all() and (s.error == "").all()
    t = serial.trajectory(2)
    assert list(t.columns) == ["t", "x", "y", "z", "phi", "theta", "psi", "p", "theta1", "theta2"]
    assert np.allclose(t.t, np.linspace(0, STOP, 101), rtol=0, atol=1e-15)
    assert t.theta1[0] == s.theta1_0[2]                 # the varied initial angle is the run's


@pytest.mark.slow
def test_two_workers_equal_one_process(serial, client, tmp_path):
    c = campaign.run(balloon_spec(), tmp_path / "store", client=client, progress=False)
    assert len({w for w in c.samples.worker}) == 2      # both workers ran samples
    equal_stores(c, serial)


def test_stored_samples_equal_simulate_set(serial, tmp_path):
    """What the done-when checks on 200 samples, here on two: the CLI's single run with the
    sample's values as --set gives the stored output exactly."""
    s = serial.samples
    for i in (0, 4):
        out = tmp_path / f"run{i}.csv"
        assert main(["simulate", "balloon", "--stop", str(STOP), "--quiet", "--out", str(out),
                     "--set", f"m_P1={float(s.m_P1[i])!r}", "--set", f"theta1_0={float(s.theta1_0[i])!r}"]) == 0
        csv = np.loadtxt(out, delimiter=",", skiprows=1)
        assert np.array_equal(csv, serial.trajectory(i).to_numpy())


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(serial, tmp_path):
    """SIGKILL to a worker process after the second result: its samples run again, the store is
    complete and equal to the one-process run."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **NO_DASHBOARD) as cluster, \
            Client(cluster) as c:
        pids = list(c.run(os.getpid).values())
        killed = []

        def kill(rec):
            if not killed and rec["index"] >= 1:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
        spec = campaign.Sweep("balloon", vary=dict(VARY), samples=N, seed=1, stop=STOP)
        result = campaign.run(spec, tmp_path / "store", client=c, progress=False, on_stored=kill)
        assert killed and pids[0] not in c.run(os.getpid).values()      # the nanny started another
    assert set(result.samples.status) == {"ok"}
    equal_stores(result, serial)


@pytest.mark.slow
def test_a_task_that_raises_is_recorded_as_failed_with_its_message(serial, tmp_path, monkeypatch):
    """A task raising on its worker (twice: one retry) is the sample's failure, with its message;
    the other samples are the one-process run's."""
    from titop_fmu.campaign import execute
    real = execute.run_sample

    def flaky(spec_json, fingerprint, index, values):
        if index == 2:
            raise RuntimeError("boom on\nsample 2")
        return real(spec_json, fingerprint, index, values)
    monkeypatch.setattr(execute, "run_sample", flaky)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, **NO_DASHBOARD) as cluster, \
            Client(cluster) as c:
        s = campaign.run(balloon_spec(), tmp_path / "store", client=c, progress=False).samples
    assert list(s.status) == ["ok", "ok", "failed", "ok", "ok", "ok"]
    assert s.error[2] == "boom on sample 2" and s.worker[2] == ""
    ok = s.status == "ok"
    assert np.array_equal(s[ok].m_P1.to_numpy(), serial.samples[ok].m_P1.to_numpy())


@pytest.mark.slow
def test_results_wait_where_ctrl_c_is_harmless(tmp_path, monkeypatch):
    """Once samples run, this thread makes no blocking client call: results travel with their
    futures. (A Ctrl-C landing in such a call, Future.result, can make distributed 2026.8
    log a NameError traceback from its event loop; the CLI test above met it.)"""
    import threading

    import distributed.utils
    real, calls = distributed.utils.sync, []

    def counted(*a, **kw):
        if threading.current_thread() is threading.main_thread():
            calls.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(distributed.utils, "sync", counted)
    between = []
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, **NO_DASHBOARD) as cluster, \
            Client(cluster) as c:
        def on_stored(rec):
            between.append(len(calls))
        campaign.run(balloon_spec(), tmp_path / "store", client=c, progress=False, on_stored=on_stored)
    assert len(between) == N and between[0] == between[-1], between


def test_an_invalid_sample_is_recorded_as_failed(tmp_path):
    spec = campaign.Sweep("balloon", vary={"m_P1": "[2.0, -1.0, 1.5]"}, sampling="grid", stop=0.5)
    c = campaign.run(spec, tmp_path / "store", workers=0, progress=False)
    s = c.samples
    assert list(s.status) == ["ok", "failed", "ok"]
    assert s.error[1] == "parameter 'm_P1': must be >= 0.0, got -1.0"
    with pytest.raises(KeyError, match="failed: parameter 'm_P1'"):
        c.trajectory(1)
    assert c.trajectory(2).shape == (51, 10)


def sweep_cli(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "titop_fmu.cli", "sweep", "balloon", "--seed", "1",
                             "--stop", str(STOP), "--quiet", *(a for k, v in VARY.items() for a in ("--vary", f"{k}={v}")),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def group_ended(pgid, within=10.0):
    """Whether every process of the group ``pgid`` has ended (zombies aside) within ``within``
    seconds: those that end on their own as the command exits (multiprocessing's resource
    tracker, at the end of its pipe) may still be on their way out right after it."""
    deadline = time.time() + within
    while True:
        left = subprocess.run(["ps", "-ww", "-o", "stat=,pid=,args=", "-g", str(pgid)], capture_output=True,
                              text=True).stdout.splitlines()
        if all(line.startswith("Z") for line in left):
            return True
        if time.time() > deadline:
            print("left running:", *left, sep="\n  ")
            return False
        time.sleep(0.1)


def test_a_cluster_slow_to_close_is_no_error_of_the_campaign():
    """Closing the campaign's client and cluster: one that times out (a worker slow to stop on a
    busy machine) neither raises nor keeps the other from closing (an interrupted campaign
    once ended "timed out after 10 s", exit code 2, instead of with its Ctrl-C)."""
    from titop_fmu.campaign.execute import shut_down
    closed = []

    class Slow:
        def close(self, timeout):
            closed.append(("slow", timeout))
            raise TimeoutError(f"timed out after {timeout} s.")

    class Quick:
        def close(self, timeout):
            closed.append(("quick", timeout))
    shut_down(Slow(), None, Quick())
    assert closed == [("slow", 10), ("quick", 10)]


@pytest.mark.slow
def test_ctrl_c_then_resume_equals_an_uninterrupted_campaign(tmp_path):
    """The CLI in its own process group, Ctrl-C (SIGINT to the group, as a terminal sends it)
    once some samples are stored: exit 130, whole rows only, no process left; --resume runs the
    rest, each sample once, equal to a campaign run without interruption."""
    n = 24
    store = tmp_path / "store"
    p = sweep_cli("--samples", str(n), "--workers", "2", "--out", str(store), start_new_session=True)
    samples = store / "samples"
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline and len(list(samples.glob("*.parquet")) if samples.is_dir()
                                                              else []) < 3:
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "--resume runs the rest" in err
    assert group_ended(p.pid)                                                # no worker left running
    stored = store_module.done(store)
    assert 3 <= len(stored) < n and not list(samples.glob(".*"))             # whole files only
    before = {i: os.stat(store_module.part(store, i)) for i in stored}
    r = sweep_cli("--samples", str(n), "--workers", "2", "--out", str(store), "--resume")
    _, err = r.communicate(timeout=300)
    assert r.returncode == 0, err
    full = tmp_path / "full"
    assert main(["sweep", "balloon", "--seed", "1", "--stop", str(STOP), "--quiet", "--samples", str(n),
                 "--workers", "0", "--out", str(full)] + [a for k, v in VARY.items() for a in ("--vary", f"{k}={v}")]) == 0
    import pyarrow.dataset as ds
    indices = ds.dataset(str(samples)).to_table(columns=["index"]).column("index").to_pylist()
    assert sorted(indices) == list(range(n))                                 # each sample exactly once
    after = {i: os.stat(store_module.part(store, i)) for i in stored}
    assert all((a.st_ino, a.st_mtime_ns) == (b.st_ino, b.st_mtime_ns) for a, b in zip(before.values(),
                                                                                    after.values()))   # not run again
    equal_stores(campaign.open(store), campaign.open(full))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ctrl_c_while_the_local_cluster_starts_is_not_lost(tmp_path):
    """Ctrl-C as the local cluster's first process starts: the cluster comes up, is shut
    down, the command exits 130 with nothing stored and no process left (the cluster's
    processes, which never get the Ctrl-C themselves, included)."""
    store = tmp_path / "store"
    p = sweep_cli("--samples", "24", "--workers", "2", "--out", str(store), start_new_session=True)
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        children = subprocess.run(["ps", "-ww", "-o", "args=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout
        if "spawn_main" in children:            # the cluster's first process is starting
            break
        time.sleep(0.01)
    assert p.poll() is None, "the command ended before its cluster started"
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted: 0 of 24 samples stored" in err, err
    assert group_ended(p.pid)



@pytest.mark.slow
def test_two_campaigns_at_once_do_not_compete_for_a_port(tmp_path):
    """A local cluster serves no dashboard and takes no fixed port: with 8787, Dask's
    dashboard port, held by another program (a campaign already running), the CLI's
    cluster starts without a word about it."""
    with socket.socket() as held:
        try:
            held.bind(("127.0.0.1", 8787))
            held.listen()
        except OSError:
            pass                                            # held already: the same case
        r = sweep_cli("--samples", "2", "--workers", "1", "--out", str(tmp_path / "store"))
        _, err = r.communicate(timeout=120)
    assert r.returncode == 0, err
    assert "8787" not in err and "Warning" not in err, err

@pytest.mark.slow
def test_a_cluster_of_separate_processes(serial, tmp_path):
    """`dask scheduler` and `dask worker` started as their own processes, the way a cluster is;
    the CLI runs on them with --scheduler."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0",
                                      "--no-show"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs += [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                                    "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
                  for _ in range(2)]
        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
            pids = set(c.run(os.getpid).values())
        store = tmp_path / "store"
        r = sweep_cli("--samples", str(N), "--scheduler", address, "--out", str(store))
        _, err = r.communicate(timeout=300)
        assert r.returncode == 0, err
        result = campaign.open(store)
        assert {int(w.rpartition(":")[2]) for w in result.samples.worker} == pids      # ran there, on both
        equal_stores(result, serial)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def count_extractions():
    """In a worker: count FMU extractions (``fmpy.extract``) from now on, the cache of the
    FMUs read emptied."""
    import fmpy

    from titop_fmu.cosim.fmpy_unit import _read_fmu
    _read_fmu.cache_clear()
    if not hasattr(fmpy, "extractions"):
        original = fmpy.extract

        def extract(*a, **kw):
            fmpy.extractions += 1
            return original(*a, **kw)
        fmpy.extract = extract
    fmpy.extractions = 0


def extractions():
    import fmpy
    return fmpy.extractions


@pytest.mark.slow
def test_a_campaign_over_the_fmus(client, tmp_path):
    """--engine fmu on the workers: the same as the runs in this process, and each worker
    unzips each FMU once, whatever the number of its runs."""
    spec = campaign.Sweep("balloon", vary={"m_P2": "uniform(2.5,3.5)"}, samples=4, seed=3, stop=0.5, engine="fmu")
    client.run(count_extractions)
    c = campaign.run(spec, tmp_path / "dask", client=client, progress=False)
    assert set(c.samples.status) == {"ok"}
    local = campaign.run(spec, tmp_path / "here", workers=0, progress=False)
    equal_stores(c, local)
    runs = c.samples.worker.value_counts()
    assert runs.max() >= 2
    counts = client.run(extractions)
    pids = {int(w.rpartition(":")[2]): n for w, n in runs.items()}
    by_pid = dict(zip(client.run(os.getpid).values(), counts.values()))
    assert all(by_pid[pid] == 4 for pid in pids)            # the balloon's 4 FMU types, once per worker
    out = tmp_path / "run.csv"                              # = simulate --engine fmu (its master on 2 processes)
    assert main(["simulate", "balloon", "--engine", "fmu", "--stop", "0.5", "--quiet", "--out", str(out),
                 "--set", f"m_P2={float(c.samples.m_P2[1])!r}"]) == 0
    assert np.array_equal(np.loadtxt(out, delimiter=",", skiprows=1), c.trajectory(1).to_numpy())


@pytest.mark.slow
def test_a_campaign_runs_the_kind_of_fmu_it_names(tmp_path):
    """--fmu-kind reaches the runs: the pythonfmu kind's store equals simulate --fmu-kind
    pythonfmu (the same bits), and the kind is part of the campaign (a store of one kind
    is not resumed with the other)."""
    assert main(["sweep", "balloon", "--engine", "fmu", "--fmu-kind", "pythonfmu", "--vary", "m_P2=[2.5,3.5]",
                 "--sampling", "grid", "--stop", "0.3", "--workers", "0", "--quiet", "--out",
                 str(tmp_path / "store")]) == 0
    c = campaign.open(tmp_path / "store")
    assert c.spec.fmu_kind == "pythonfmu" and set(c.samples.status) == {"ok"}
    out = tmp_path / "run.csv"
    assert main(["simulate", "balloon", "--engine", "fmu", "--fmu-kind", "pythonfmu", "--stop", "0.3", "--quiet",
                 "--out", str(out), "--set", "m_P2=3.5"]) == 0
    assert np.array_equal(np.loadtxt(out, delimiter=",", skiprows=1), c.trajectory(1).to_numpy())
    with pytest.raises(campaign.SweepError, match="holds another campaign"):
        campaign.run(campaign.Sweep("balloon", vary={"m_P2": "[2.5,3.5]"}, sampling="grid", stop=0.3, engine="fmu",
                                    fmu_kind="standalone"), tmp_path / "store", workers=0, resume=True,
                     progress=False)


def test_resume_refuses_another_campaign_and_a_new_one_refuses_a_store(serial, tmp_path):
    with pytest.raises(campaign.SweepError, match="holds a campaign already"):
        campaign.run(balloon_spec(), serial.root, workers=0, progress=False)
    with pytest.raises(campaign.SweepError, match=r"holds another campaign \(seed is 1 there, 2 here\)"):
        campaign.run(campaign.Sweep("balloon", vary=dict(VARY), samples=N, seed=2, stop=STOP), serial.root,
                     workers=0, resume=True, progress=False)
    again = campaign.run(balloon_spec(), serial.root, workers=0, resume=True, progress=False)   # nothing left
    equal_stores(again, serial)


def test_resume_refuses_a_store_that_is_not_there(tmp_path, capsys):
    """--resume of a mistyped store started a new campaign there, silently: one line, exit code
    2, no folder made; an empty folder holds nothing to resume either."""
    out = tmp_path / "stroe"
    argv = ["sweep", "balloon", "--vary", "m_P1=uniform(1.5,2.5)", "--samples", "2", "--stop", "0.1", "--workers",
            "0", "--quiet", "--resume", "--out"]
    assert main([*argv, str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"titop-fmu: error: --resume: {out} holds no campaign to resume (no campaign.json); without " \
                  "--resume a new campaign starts there\n", err
    assert not out.exists()
    out.mkdir()
    assert main([*argv, str(out)]) == 2 and "holds no campaign to resume" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_no_lock_is_left_and_a_store_in_use_is_refused(serial, tmp_path):
    """The store's lock is held while a sweep writes it, and gone after (every store kept its
    .lock); a second sweep of a store in use is refused, and takes it once it is free."""
    root = tmp_path / "store"
    c = campaign.run(balloon_spec(), root, workers=0, progress=False)
    assert sorted(p.name for p in root.iterdir()) == ["campaign.json", "samples"]
    first = store_module.Store(root, c.spec, c.header, resume=True)
    first.open()
    assert (root / ".lock").is_file()
    with pytest.raises(campaign.SweepError, match="another sweep is writing this store"):
        campaign.run(balloon_spec(), root, workers=0, resume=True, progress=False)
    first.close()
    assert not (root / ".lock").exists()
    equal_stores(campaign.run(balloon_spec(), root, workers=0, resume=True, progress=False), serial)
    assert not (root / ".lock").exists()


def test_a_campaign_file_is_the_command_line(serial, tmp_path):
    f = tmp_path / "mc.toml"
    f.write_text('[sweep]\nsystem = "balloon"\nsamples = 6\nseed = 1\nstop = 1.0\n[sweep.vary]\n'
                 'theta1_0 = "normal(170deg,2deg)"\nm_P1 = "uniform(1.5,2.5)"\n')
    assert main(["sweep", str(f), "--workers", "0", "--quiet", "--out", str(tmp_path / "store")]) == 0
    c = campaign.open(tmp_path / "store")
    assert json.loads((c.root / "campaign.json").read_text())["fingerprint"] == serial.fingerprint
    equal_stores(c, serial)


@pytest.mark.parametrize("args, message", [
    (["--vary", "m_P=uniform(1,2)", "--samples", "3"], "--vary m_P: unknown parameter (did you mean 'm_P2' or 'm_P1'"),
    (["--vary", "t=uniform(1,2)", "--samples", "3"], "--vary t: a vector or matrix; vary one element, e.g. t[1]"),
    (["--vary", "m_P1=uniform(2,1)", "--samples", "3"], "--vary m_P1=uniform(2,1): uniform(a, b) needs a < b"),
    (["--vary", "m_P1=uniform(1,2)"], "how many samples? give --samples N"),
    (["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--sampling", "grid"],
     "--sampling grid takes listed values ([..], choice, linspace); m_P1 is uniform(1,2)"),
    (["--vary", "m_P1=[1,2]", "--samples", "3", "--sampling", "grid"], "--samples 3: the grid has 2 combinations"),
    (["--samples", "3"], "nothing varies: give --vary NAME=DISTRIBUTION"),
    (["--vary", "m_P1", "--samples", "3"], "--vary m_P1: expected NAME=DISTRIBUTION"),
    pytest.param(["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--scheduler", "tcp://127.0.0.1:9"],
                 "--scheduler tcp://127.0.0.1:9: cannot connect", marks=pytest.mark.slow),    # the 10 s timeout
    (["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--workers", "-1"], "--workers must be between 0 and 64"),
    (["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--stop", "-1"], "--stop must be > 0, got -1"),
    (["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--set", "kk=2"], "parameter 'kk': unknown parameter"),
    (["--vary", "m_P1=uniform(1,2)", "--samples", "3", "--fmu-kind", "pythonfmu"],
     "--fmu-kind applies to the co-simulation master (--engine fmu)"),
])
def test_sweep_errors_are_one_line_and_leave_no_store(tmp_path, capsys, args, message):
    out = tmp_path / "store"
    assert main(["sweep", "balloon", "--quiet", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"titop-fmu: error: {message}") and err.count("\n") == 1, err
    assert not out.exists()
