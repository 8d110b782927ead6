"""The guide's pages as the tests read them: their code blocks, the commands in them, and a
runner that executes a page's blocks in order in a fresh folder, as a reader would.

A page is ``README.md`` or ``docs/*.md``. Its fenced blocks are read with the HTML comments
written just before them (only blank lines between), which the reader does not see:

* ``<!-- not run: REASON -->``: the block is not run (an install, a command that needs
  Windows, a benchmark of minutes); the reason is required;
* ``<!-- file: PATH -->``: the block is a file the reader writes (a system file): the runner
  writes it to ``PATH`` in the folder; a file under ``examples/`` must be the repository's
  file, byte for byte;
* ``<!-- needs: modelica -->`` (a Modelica compiler and the MSL), ``<!-- needs: chromium -->``,
  ``<!-- needs: exudyn -->`` (the Exudyn package):
  without what it needs the block is left out and the page's test says so (skipped, once the
  rest has run).

What runs: every ``sh`` and ``console`` block (one command a line, ``\\`` continues a line,
``#`` starts a comment; in a ``console`` block the commands follow ``$ `` and the other lines
are their expected output, ``...`` standing for lines left out or, at a line's end, the rest
of the line) and every ``python`` block (one namespace per page, as a session). ``titop-fmu``
commands run in this process (the argument list as the shell splits it), a command using the
shell's syntax (``|``, ``&&``, ``>``, ``$VAR``) runs in ``bash``, any other one as a process;
``python`` is this interpreter. Every command runs in the page's folder: a block that changes
folder (``cd``) is refused.

Shared results: a ``titop-fmu`` command that one page runs as another page ran it before in
the same test run (the same arguments, its comment aside, the same content of the files it names and of
``examples/``; the workers of ``pytest -n`` share them) is not run twice: the files it
wrote and what it printed are taken from the first run (the README's quick start is the
tutorial's commands; commands are deterministic). Its output and the files it names are checked as any command's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from session_cache import locked

ROOT = Path(__file__).resolve().parents[2]
#: the runnable languages of a fence
RUN = ("sh", "console", "python")
#: options whose value is a file or folder a command writes: checked to exist after it
WRITES = ("--out", "--animate", "--ssp")
#: folders of the checkout a reader's commands use, made available in the page's folder
#: (examples/ is copied: a page may write a file there; the others are read only)
COPIED, LINKED = ("examples",), ("validation", "benchmarks", "docs", "titop_fmu")
#: a command that needs the shell
SHELL_SYNTAX = re.compile(r"[|;&<>`$]")
#: a change of folder, which a reader's shell keeps for the next lines and this runner does not
CD = re.compile(r"(^|&&|;|\|\|)\s*(cd|pushd|popd)\b")
MARK = re.compile(r"<!--\s*(not run|file|needs)\s*:\s*(.*?)\s*-->")


def pages() -> list:
    """The guide: README.md and every page of docs/."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


@dataclass
class Block:
    page: Path
    line: int              # 1-based line of the opening fence
    lang: str
    text: str
    marks: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN and "not run" not in self.marks and "file" not in self.marks


def blocks(page: Path) -> list:
    """The fenced blocks of ``page`` with the marks written just before each."""
    out, marks, lines = [], {}, page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        m = MARK.fullmatch(stripped)
        if m:
            marks[m.group(1)] = m.group(2)
        elif stripped.startswith("```"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            lang, start, body = stripped[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                line = lines[i]
                body.append(line[indent:] if line[:indent].isspace() or not indent else line.lstrip())
                i += 1
            out.append(Block(page, start, lang, "\n".join(body) + "\n", marks))
            marks = {}
        elif stripped:
            marks = {}
        i += 1
    return out


@dataclass
class Command:
    text: str
    expected: list | None = None     # the output a console block shows, lines


def commands(block: Block) -> list:
    """The commands of an ``sh`` or ``console`` block, continuation lines joined."""
    out, pending = [], None
    for raw in block.text.splitlines():
        line = raw.rstrip()
        if block.lang == "console":
            if pending is None and not line.startswith("$ "):
                if out and out[-1].expected is not None:
                    out[-1].expected.append(line)
                continue
            line = line[2:] if pending is None else line
        if pending is not None:
            line, pending = pending + " " + line.lstrip(), None
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(Command(line.strip(), [] if block.lang == "console" else None))
    assert pending is None, f"{block.where}: a command ends with a backslash"
    return out


def output_matches(expected: list, actual: str) -> bool:
    """``actual`` (trailing spaces and blank lines aside) is ``expected``, where a line
    ``...`` stands for any lines and a line ending in ``...`` for any rest of a line."""
    while expected and not expected[-1].strip():
        expected = expected[:-1]
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        elif line.endswith("..."):
            parts.append(re.escape(line[:-3]) + r"[^\n]*\n")
        else:
            parts.append(re.escape(line.rstrip()) + r"\n")
    text = "".join(line.rstrip() + "\n" for line in actual.strip("\n").splitlines())
    return re.fullmatch("".join(parts), text) is not None


def missing(need: str) -> str | None:
    """Why what a ``needs:`` mark names is not here, or None."""
    if need == "modelica":
        from titop_fmu import modelica
        return modelica.unavailable_reason()
    if need == "chromium":
        from browser import NAMES
        return None if any(shutil.which(n) for n in NAMES) else "no Chromium (apt-get install chromium)"
    if need == "exudyn":
        import importlib.util
        return None if importlib.util.find_spec("exudyn") else "no Exudyn (pip install exudyn, the crosscheck extra)"
    raise AssertionError(f"unknown need {need!r} (known: modelica, chromium, exudyn)")


class Results:
    """What ``titop-fmu`` commands printed and wrote, by command and input: ``key`` names a
    command with the content of what it reads, ``save`` keeps the files it wrote in a
    folder, ``restore`` writes them into another page's folder. The folder is this process's
    own, or one that the run's processes share (:meth:`share`): a command one runs, the
    others wait for (``computing``) and take."""

    def __init__(self):
        self.folder = None

    def share(self, folder: Path):
        self.folder = Path(folder)

    def _store(self) -> Path:
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="titop-guide-results-"))
        return self.folder

    @staticmethod
    def key(folder: Path, argv) -> str:
        digest = hashlib.sha256(json.dumps(argv).encode())
        named = {arg.split("=", 1)[-1] for arg in argv} | set(COPIED)
        for name in sorted(named):
            path = folder / name
            if path.is_symlink() or not path.exists():
                continue
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            for f in files:
                digest.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
        return digest.hexdigest()

    def computing(self, key):
        """The lock of ``key``'s entry: held while one process looks for it or makes it."""
        return locked(self._store() / f"{key}.lock")

    def has(self, key) -> bool:
        return (self._store() / key / "result.json").is_file()

    def save(self, key, code, output, folder: Path, written):
        store = self._store() / key
        for rel in written:
            (store / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(folder / rel, store / "files" / rel)
        store.mkdir(parents=True, exist_ok=True)
        (store / "result.tmp").write_text(json.dumps([code, output, list(written)]))
        os.replace(store / "result.tmp", store / "result.json")     # the entry is there once whole

    def restore(self, key, folder: Path):
        store = self._store() / key
        code, output, written = json.loads((store / "result.json").read_text())
        for rel in written:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(store / "files" / rel, folder / rel)
        return code, output


#: the session's shared results (the process's own, or the run's: tests/docs/conftest.py)
RESULTS = Results()


def snapshot(folder: Path) -> dict:
    """The files of ``folder`` (not through its links) and their modification times."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            out[str(path.relative_to(folder))] = path.stat().st_mtime_ns
    return out


class Reader:
    """A reader following one page in the folder ``folder``, as in a clone: the checkout's
    examples copied there, its other folders the pages use linked."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        for name in COPIED:
            shutil.copytree(ROOT / name, self.folder / name)
        for name in LINKED:
            (self.folder / name).symlink_to(ROOT / name)
        self.namespace = {"__name__": "__guide__"}
        self.env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                          os.environ.get("PATH", "")]))
        self.left_out = []            # (block, reason) of blocks whose needs are missing

    def follow(self, page: Path):
        """Run the page's blocks in order (raises AssertionError at the first that fails)."""
        for block in blocks(page):
            if "file" in block.marks:
                path = self.folder / block.marks["file"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text, encoding="utf-8")
                continue
            if not block.runs:
                continue
            if "needs" in block.marks:
                reason = missing(block.marks["needs"])
                if reason:
                    self.left_out.append((block, reason))
                    continue
            if block.lang == "python":
                self.python(block)
            else:
                for command in commands(block):
                    self.run(block, command)

    def python(self, block: Block):
        with _chdir(self.folder):
            exec(compile(block.text, block.where, "exec"), self.namespace)

    def run(self, block: Block, command: Command):
        assert not CD.search(command.text), \
            f"{block.where}: `{command.text}` changes folder, which the runner does not follow: mark the block not run"
        argv = shlex.split(command.text, comments=True)
        if SHELL_SYNTAX.search(command.text.split("#")[0]) and argv[0] != "titop-fmu":
            code, output = self.process(["bash", "-c", command.text])
        elif argv[0] == "titop-fmu":
            code, output = self.shared(argv)
        else:
            code, output = self.process([sys.executable if argv[0] in ("python", "python3") else argv[0],
                                         *argv[1:]])
        failing = command.expected is not None and any(
            line.startswith(("titop-fmu: error:", "usage:")) for line in command.expected)
        assert (code != 0) if failing else (code == 0), \
            f"{block.where}: `{command.text}` exited with {code}:\n{output[-3000:]}"
        if command.expected is not None:
            assert output_matches(command.expected, output), \
                f"{block.where}: `{command.text}` printed\n{output}\nnot\n" + "\n".join(command.expected)
        for option in WRITES:                         # written, unless the command fails: then not at all
            if option in argv[:-1]:
                path = self.folder / argv[argv.index(option) + 1]
                written = path.exists() and (any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0)
                assert written != failing, \
                    f"{block.where}: `{command.text}` {'wrote' if failing else 'did not write'} {path.name}"

    def shared(self, argv) -> tuple:
        """A ``titop-fmu`` command, run here or, when an earlier page ran it on the same
        inputs, its result (the module docstring)."""
        key = Results.key(self.folder, argv)
        with RESULTS.computing(key):
            if RESULTS.has(key):
                return RESULTS.restore(key, self.folder)
            before = snapshot(self.folder)
            code, output = self.titop_fmu(argv[1:])
            after = snapshot(self.folder)
            RESULTS.save(key, code, output, self.folder, [p for p, m in after.items() if before.get(p) != m])
            return code, output

    def titop_fmu(self, args) -> tuple:
        from titop_fmu.cli import main
        buffer = io.StringIO()
        with _chdir(self.folder), contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            try:
                code = main(args)
            except SystemExit as e:                  # argparse's errors
                code = e.code
        return code, buffer.getvalue()

    def process(self, argv) -> tuple:
        proc = subprocess.run(argv, cwd=self.folder, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=900)
        return proc.returncode, proc.stdout


@contextlib.contextmanager
def _chdir(folder):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
