"""C compiled on first use: the compiler, the cache of built libraries, loading one.

The blocks' kernel (:mod:`titop_fmu.kernel`), its forward-mode twin (:mod:`titop_fmu.dual`)
and the co-simulation master's C library (:mod:`titop_fmu.cosim.clib`) are compiled with the
C compiler of the machine into ``$XDG_CACHE_HOME/titop-fmu`` (default ``~/.cache``), keyed by
their sources and the compiler, then only loaded.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from .errors import TitopError


class CompileError(TitopError):
    """The C compiler could not be run, or failed, or what it built cannot be loaded."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/titop-fmu`` (default ``~/.cache/titop-fmu``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "titop-fmu"


def c_compiler():
    """The C compiler: ``$CC``, else ``cc`` or ``gcc`` on the path; None if there is none."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def cached_build(name: str, build) -> Path:
    """``<cache>/name``, made by ``build(dest) -> dest`` when absent (into a temporary file
    moved in place: concurrent builds agree)."""
    lib = cache_root() / name
    if not lib.is_file():
        lib.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="titop_kernel_", dir=lib.parent) as tmp:
            os.replace(build(Path(tmp) / "kernel.so"), lib)
    return lib


def load_library(lib: Path, what: str):
    """The shared library ``lib`` (``ctypes.CDLL``); :class:`CompileError` naming ``what``."""
    try:
        return ctypes.CDLL(str(lib))
    except OSError as e:
        raise CompileError(f"cannot load {what} {lib.name} ({e})") from None


def compile_c(source: Path, dest: Path, cc: str, flags: list, libs: list, what: str, includes=()) -> Path:
    """Compile the C file ``source`` to ``dest`` with ``cc flags -o out source libs``, in a
    fresh folder (no path of this machine enters the binary) beside the files it
    ``includes``; :class:`CompileError` naming ``what`` if the compiler cannot run or fails."""
    with tempfile.TemporaryDirectory(prefix="titop_cc_") as tmp:
        for f in (source, *includes):
            shutil.copyfile(f, Path(tmp) / f.name)
        run_compiler([*cc.split(), *flags, "-o", "out.so", source.name, *libs], tmp, what)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tmp) / "out.so", dest)
    return dest


def run_compiler(cmd: list, cwd, what: str):
    """Run the C compiler command ``cmd`` in the folder ``cwd``; :class:`CompileError` naming
    ``what`` if the compiler cannot run or fails."""
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except OSError as e:
        raise CompileError(f"cannot run the C compiler {cmd[0]!r} ({e}); install one or set CC") from None
    if r.returncode == -signal.SIGINT:          # Ctrl-C reaches the compiler too: an interrupt, not a failure
        raise KeyboardInterrupt
    if r.returncode:
        raise CompileError(f"compiling {what} failed ({' '.join(cmd)}):\n{r.stderr}")
