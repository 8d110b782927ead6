"""Zip archives (FMUs, SSP packages) written reproducibly and atomically."""

from __future__ import annotations

import os
import uuid
import zipfile
from pathlib import Path

#: the time stamp of every entry: the same contents give the same bytes
DATE = (1980, 1, 1, 0, 0, 0)


def write_zip(path, entries: dict, check=None) -> Path:
    """Write ``{name: bytes}`` as the zip file ``path``: entries sorted, dated :data:`DATE`,
    deflated, Unix permissions 0755 for shared libraries and 0644 otherwise.

    The archive is written to a temporary file of its own beside ``path`` and moved into
    place (``os.replace``): a reader never sees a partial archive, and processes writing
    the same archive at once (two first runs filling the FMU cache together) each finish
    theirs; the last one moved in stays. ``check(temporary path)``, when given, may refuse
    the archive by raising: nothing is written then."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.part")
    try:
        try:
            archive = zipfile.ZipFile(tmp, "x", zipfile.ZIP_DEFLATED)
        except OSError as e:                    # said of the file asked for, not of the temporary one
            raise OSError(e.errno, e.strerror, str(path)) from None
        with archive as z:
            for name in sorted(entries):
                info = zipfile.ZipInfo(name, date_time=DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3
                info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
                z.writestr(info, entries[name])
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
