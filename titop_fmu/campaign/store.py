"""The campaign store: a folder, Parquet files written as runs finish, never a half-written
or duplicate row.

::

    STORE/
      campaign.json            the manifest: the campaign's settings (a resumed campaign must
                               be the same), its fingerprint, the varied names, the columns
      samples/000042.parquet   one file per finished sample (written under a temporary name,
                               then renamed: a file is whole or absent), one row:
                               index, varied values (SI), status, wall, error, worker, and
                               ``table``, the run's output, the columns of ``simulate``'s CSV

:func:`open` reads it back: :attr:`Campaign.samples` (one row per sample, those not run yet
with status ``missing``) and :meth:`Campaign.trajectory`.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import os
import re
from pathlib import Path

import numpy as np

from ..io import write_atomically
from .distributions import SweepError
from .spec import Sweep

MANIFEST = "campaign.json"
VERSION = 1
_PART = re.compile(r"^(\d+)\.parquet$")
#: the columns of a sample's row besides its varied values
COLUMNS = ("status", "wall", "error", "worker")


class Store:
    """A store to write: checked when made (a new campaign in an empty or new folder, or the
    same campaign to resume), created or taken by :meth:`open` (one process at a time: a lock)."""

    def __init__(self, root, spec: Sweep, header: list, resume=False):
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise SweepError(f"--out {self.root}: is a file, not a folder")
        manifest = self.root / MANIFEST
        self.spec, self.header = spec, list(header)
        mine = dict(version=VERSION, spec=spec.to_dict(), fingerprint=spec.fingerprint(), names=list(spec.vary),
                    header=self.header)
        if manifest.is_file():
            if not resume:
                raise SweepError(f"--out {self.root}: holds a campaign already; --resume completes it, or choose "
                                 "another folder")
            theirs = read_manifest(manifest)
            if theirs.get("fingerprint") != mine["fingerprint"]:
                diff = [k for k in mine["spec"] if theirs.get("spec", {}).get(k) != mine["spec"][k]]
                what = (f"{diff[0]} is {theirs['spec'].get(diff[0])!r} there, {mine['spec'][diff[0]]!r} here"
                        if diff else "the system file has changed")
                raise SweepError(f"--resume: {self.root} holds another campaign ({what})")
        elif resume:
            raise SweepError(f"--resume: {self.root} holds no campaign to resume (no {MANIFEST}); without --resume a "
                             "new campaign starts there")
        elif self.root.exists() and any(self.root.iterdir()):
            raise SweepError(f"--out {self.root}: a folder that is not empty and holds no campaign")
        self._manifest = mine
        self._lock = None

    def open(self):
        """Create the store (or take the one there), hold its lock (the file ``.lock`` while
        this process writes: :meth:`close` removes it), clear what a killed process left
        half-written."""
        manifest = self.root / MANIFEST
        (self.root / "samples").mkdir(parents=True, exist_ok=True)
        lock = self.root / ".lock"
        self._lock = builtins.open(lock, "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(lock).st_ino != os.fstat(self._lock.fileno()).st_ino:   # removed by the sweep before
                raise OSError
        except OSError:
            self._lock.close()
            raise SweepError(f"--out {self.root}: another sweep is writing this store") from None
        if not manifest.is_file():
            write_atomically(manifest, lambda p: Path(p).write_text(json.dumps(self._manifest, indent=1)))
        for stale in (self.root / "samples").glob(".*.tmp"):       # left by a process killed mid-write
            stale.unlink(missing_ok=True)

    def done(self) -> set:
        return done(self.root)

    def write(self, rec: dict, values):
        """The sample's row, whole, under its index (a repeated index replaces it with the
        same content: the runs are deterministic)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        cols = {"index": pa.array([rec["index"]], pa.int64())}
        for name, v in zip(self.spec.vary, values):
            cols[name] = pa.array([float(v)], pa.float64())
        cols["status"] = pa.array([rec["status"]], pa.string())
        cols["wall"] = pa.array([rec["wall"]], pa.float64())
        cols["error"] = pa.array([rec["error"]], pa.string())
        cols["worker"] = pa.array([rec["worker"]], pa.string())
        cols["table"] = _table_array(rec["table"], len(self.header))
        table = pa.table(cols)
        write_atomically(part(self.root, rec["index"]), lambda p: pq.write_table(
            table, p, compression="zstd", use_dictionary=False, write_statistics=False))

    def close(self):
        """Release the lock: its file removed while it is held (a sweep that opened it before
        then finds it gone, :meth:`open`), so that no store keeps a ``.lock``."""
        if self._lock is not None and not self._lock.closed:
            (self.root / ".lock").unlink(missing_ok=True)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()


def _table_array(table, ncols):
    """One cell of type ``list<fixed_size_list<double>[ncols]>``: the run's rows (null if none)."""
    import pyarrow as pa
    typ = pa.list_(pa.list_(pa.float64(), ncols))
    if table is None:
        return pa.array([None], typ)
    flat = pa.array(np.ascontiguousarray(table, dtype=float).reshape(-1))
    rows = pa.FixedSizeListArray.from_arrays(flat, ncols)
    return pa.ListArray.from_arrays(pa.array([0, len(table)], pa.int32()), rows).cast(typ)


def part(root, index) -> Path:
    return Path(root) / "samples" / f"{int(index):06d}.parquet"


def done(root) -> set:
    """The indices of the samples stored."""
    out = set()
    for p in (Path(root) / "samples").iterdir() if (Path(root) / "samples").is_dir() else ():
        m = _PART.match(p.name)
        if m:
            out.add(int(m.group(1)))
    return out


def read_manifest(path: Path) -> dict:
    """The content of a store's manifest ``path``; :class:`SweepError` when it is not one (a
    damaged file, or one written by hand)."""
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SweepError(f"{path}: not a campaign's manifest ({e})") from None
    if not isinstance(m, dict) or not isinstance(m.get("spec"), dict) or \
            not {"names", "header", "fingerprint"} <= set(m):
        raise SweepError(f"{path}: not a campaign's manifest (a table of spec, names, header, fingerprint)")
    return m


class Campaign:
    """A store read back (:func:`open`)."""

    def __init__(self, root):
        self.root = Path(root)
        manifest = self.root / MANIFEST
        if not manifest.is_file():
            raise SweepError(f"{self.root}: not a campaign store (no {MANIFEST})")
        m = read_manifest(manifest)
        try:
            self.spec = Sweep(**m["spec"])
        except TypeError as e:
            raise SweepError(f"{manifest}: not a campaign's manifest ({e})") from None
        self.names, self.header, self.fingerprint = m["names"], m["header"], m["fingerprint"]
        self._samples = None

    @property
    def samples(self):
        """A pandas DataFrame, one row per sample (index ``sample``): the varied values in SI
        units, ``status`` (``ok``, ``failed``, ``missing``: not run yet), ``wall`` [s] (the
        run's wall time), ``error`` (the message of a failed run), ``worker``."""
        if self._samples is None:
            import pandas as pd
            import pyarrow.dataset as ds
            files = sorted(str(part(self.root, i)) for i in done(self.root))
            cols = ["index"] + self.names + list(COLUMNS)
            stored = ds.dataset(files, format="parquet").to_table(columns=cols).to_pandas() if files else \
                pd.DataFrame(columns=cols)
            stored = stored.set_index("index")
            every = pd.DataFrame(self.spec.design(), columns=self.names)
            every["status"], every["wall"], every["error"], every["worker"] = "missing", np.nan, "", ""
            every.update(stored)
            every.index.name = "sample"
            every["wall"] = every["wall"].astype(float)
            self._samples = every
        return self._samples

    def trajectory(self, i: int):
        """Sample ``i``'s output: a DataFrame with the columns of ``simulate``'s CSV (``t`` first),
        on the same grid."""
        import pandas as pd
        import pyarrow.parquet as pq
        p = part(self.root, i)
        if not p.is_file():
            raise KeyError(f"sample {i}: not in the store (not run yet, or no such sample)")
        row = pq.read_table(p, columns=["status", "error", "table"]).to_pylist()[0]
        if row["table"] is None:
            raise KeyError(f"sample {i}: {row['status']}: {row['error']}")
        return pd.DataFrame(np.array(row["table"], dtype=float), columns=self.header)

    def tables(self, indices=None) -> tuple:
        """``(indices, (n, len(t), columns) array)`` of the successful samples (all, or ``indices``)."""
        import pyarrow.dataset as ds
        ok = self.samples.index[self.samples.status == "ok"]
        idx = [i for i in ok if indices is None or i in set(indices)]
        if not idx:
            return np.array([], dtype=int), np.zeros((0, 0, len(self.header)))
        t = ds.dataset([str(part(self.root, i)) for i in idx], format="parquet").to_table(columns=["index", "table"])
        order = np.argsort(t.column("index").to_numpy())
        cells = t.column("table").combine_chunks()
        flat = cells.flatten().flatten().to_numpy(zero_copy_only=False)
        arr = flat.reshape(len(idx), -1, len(self.header))
        return np.array(idx), arr[order]


def open(root) -> Campaign:
    """The campaign stored in ``root`` (:class:`Campaign`)."""
    return Campaign(root)
