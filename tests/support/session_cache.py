"""What one test run computes once for all its processes (``pytest -n``'s workers too): a
folder of the run shared by its workers, and a lock under which one process computes an
entry while the others wait for it and then read it.

The folder is under pytest's base temporary folder of the run (each run has its own, as
each worker's ``tmp_path`` is under it): nothing is kept from one run to the next.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:            # not POSIX: no lock, each process computes what it needs
    fcntl = None


def shared_folder(tmp_path_factory, name: str) -> Path:
    """The folder ``name`` of this run, the same for every worker of ``pytest -n``."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):       # a worker's base is popen-gw<i> under the run's
        base = base.parent
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(path: Path):
    """Hold the exclusive lock of ``path`` (a lock file, created) for the ``with`` block."""
    with open(path, "a") as f:
        if fcntl:
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl:
                fcntl.flock(f, fcntl.LOCK_UN)
